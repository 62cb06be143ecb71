"""Topic configs: validation (INVALID_CONFIG with the reason), the effective values
DescribeConfigs reports, and the storage core honouring a topic's own settings."""

from __future__ import annotations

import pytest

from brokers.core.config import StorageConfig
from brokers.core.errors import InvalidConfig
from brokers.core.storage import LogManager
from brokers.core.topic_config import (
    SPECS,
    effective_configs,
    storage_config_for,
    validate_topic_configs,
)
from tests.support.batches import build_batch


def test_valid_configs_are_normalised_and_nulls_dropped() -> None:
    got = validate_topic_configs({"retention.ms": " 60000", "retention.bytes": "-1",
                                  "segment.bytes": "1048576", "cleanup.policy": "delete",
                                  "min.insync.replicas": "2"})
    assert got == {"retention.ms": "60000", "retention.bytes": "-1", "segment.bytes": "1048576",
                   "cleanup.policy": "delete", "min.insync.replicas": "2"}
    assert validate_topic_configs({"retention.ms": None}) == {}


@pytest.mark.parametrize(("configs", "reason"), [
    ({"retention.millis": "5"}, "unknown topic config"),
    ({"cleanup.policy": "compact"}, "compaction is not implemented"),
    ({"cleanup.policy": "delete,compact"}, "compaction is not implemented"),
    ({"cleanup.policy": "shred"}, "must be delete"),
    ({"retention.ms": "0"}, "-1 (unlimited) or positive"),
    ({"retention.ms": "soon"}, "invalid value"),
    ({"retention.bytes": "-2"}, "-1 (unlimited) or positive"),
    ({"segment.bytes": "100"}, "at least 1024"),
    ({"segment.bytes": str(1 << 31)}, "at least 1024"),
    ({"min.insync.replicas": "0"}, "at least 1"),
])
def test_bad_configs_are_invalid_config_with_the_reason(configs, reason) -> None:
    with pytest.raises(InvalidConfig) as info:
        validate_topic_configs(configs)
    assert reason in info.value.message


def test_effective_configs_mark_the_topics_own_settings() -> None:
    base = StorageConfig(segment_bytes=4096, retention_ms=None)
    rows = {spec.name: (value, own)
            for spec, value, own in effective_configs(base, {"retention.ms": "500"})}
    assert rows["retention.ms"] == ("500", True)
    assert rows["segment.bytes"] == ("4096", False)
    assert rows["retention.bytes"] == ("-1", False)
    assert set(rows) == set(SPECS)


def test_storage_config_for_applies_overrides_and_ignores_garbage() -> None:
    base = StorageConfig(retention_ms=1000)
    got = storage_config_for(base, {"retention.ms": "-1", "retention.bytes": "2048",
                                    "segment.bytes": "8192", "min.insync.replicas": "1"})
    assert (got.retention_ms, got.retention_bytes, got.segment_bytes) == (None, 2048, 8192)
    # Values a record from elsewhere could carry that StorageConfig refuses: the broker's own.
    assert storage_config_for(base, {"retention.ms": "0"}) == base
    assert storage_config_for(base, {"segment.bytes": "x"}) == base


@pytest.mark.filesystem
def test_log_manager_rolls_and_retains_by_the_topics_own_settings(tmp_path) -> None:
    m = LogManager(tmp_path, StorageConfig())
    try:
        before = m.get_or_create("small", 0)  # opened before its configs arrive (a restart)
        m.configure_topics({"small": {"segment.bytes": "1024", "retention.bytes": "2048"},
                            "plain": {}})
        later = m.get_or_create("small", 1)
        plain = m.get_or_create("plain", 0)
        batch = build_batch([b"v" * 300])
        for plog in (before, later, plain):
            for _ in range(12):
                plog.append(batch)
        assert before.segment_count > 1 and later.segment_count > 1
        assert plain.segment_count == 1  # the broker's 256 MiB default
        m.enforce_retention(now_ms=0)
        assert before.size_bytes <= 2048 + 1024 and plain.log_start_offset == 0
        assert before.log_start_offset > 0
        # Dropping the topic's settings gives its logs the broker's again.
        m.configure_topics({})
        assert before.config == m.config
    finally:
        m.close()
