"""Unit tests of brokers/core (the subfolders mirror its packages)."""
