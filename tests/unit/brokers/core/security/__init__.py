"""Unit tests of brokers/core/security: SCRAM and the SASL session."""
