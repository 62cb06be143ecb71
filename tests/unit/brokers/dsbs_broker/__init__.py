"""Unit tests of brokers/dsbs_broker (the subfolders mirror its packages)."""
