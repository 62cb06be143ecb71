"""Unit tests of brokers/core/handlers: request counting, the leadership checks."""
