"""Topic configs: Kafka 2.8's table (names, types, defaults, each validator's valid, invalid and
edge values, with Kafka's wording), APPEND and SUBTRACT on lists, what DescribeConfigs reports,
which configs are acted on, and the storage core honouring a topic's own settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from brokers.core.config import BrokerConfig, FlushMode, FlushPolicy, StorageConfig
from brokers.core.errors import InvalidConfig
from brokers.core.replication.config import ReplicationConfig
from brokers.core.storage import LogManager
from brokers.core.topic_config import (
    LONG_MAX,
    SPECS,
    ProduceRules,
    alter_list,
    effective_configs,
    produce_rules,
    produce_rules_by_topic,
    render,
    storage_config_for,
    validate_topic_configs,
)
from tests.support.batches import build_batch

# Kafka 2.8's topic configs (LogConfig) and their ConfigDef types.
KAFKA_28 = {
    "cleanup.policy": "LIST", "compression.type": "STRING", "delete.retention.ms": "LONG",
    "file.delete.delay.ms": "LONG", "flush.messages": "LONG", "flush.ms": "LONG",
    "follower.replication.throttled.replicas": "LIST", "index.interval.bytes": "INT",
    "leader.replication.throttled.replicas": "LIST", "max.compaction.lag.ms": "LONG",
    "max.message.bytes": "INT", "message.downconversion.enable": "BOOLEAN",
    "message.format.version": "STRING", "message.timestamp.difference.max.ms": "LONG",
    "message.timestamp.type": "STRING", "min.cleanable.dirty.ratio": "DOUBLE",
    "min.compaction.lag.ms": "LONG", "min.insync.replicas": "INT", "preallocate": "BOOLEAN",
    "retention.bytes": "LONG", "retention.ms": "LONG", "segment.bytes": "INT",
    "segment.index.bytes": "INT", "segment.jitter.ms": "LONG", "segment.ms": "LONG",
    "unclean.leader.election.enable": "BOOLEAN",
}
INT_MAX, LONG_MIN = (1 << 31) - 1, -(1 << 63)


def broker(**kw) -> BrokerConfig:
    return BrokerConfig(node_id=0, host="127.0.0.1", port=0, data_dir=Path("/nonexistent"), **kw)

# Per config: (value given, value stored) that Kafka accepts; the edges of every range.
VALID: dict[str, list[tuple[str, str]]] = {
    "cleanup.policy": [("delete", "delete"), ("compact", "compact"),
                       ("compact , delete", "compact,delete"), ("", ""),
                       ("delete,delete", "delete,delete")],
    "compression.type": [(c, c) for c in ("uncompressed", "zstd", "lz4", "snappy", "gzip",
                                          "producer")] + [(" gzip ", "gzip")],
    "delete.retention.ms": [("0", "0"), (str(LONG_MAX), str(LONG_MAX))],
    "file.delete.delay.ms": [("0", "0"), ("60000", "60000")],
    "flush.messages": [("0", "0"), ("1", "1"), (str(LONG_MAX), str(LONG_MAX))],
    "flush.ms": [("0", "0"), ("+1000", "1000")],
    "follower.replication.throttled.replicas": [("*", "*"), ("0:1, 1:2", "0:1,1:2"), ("", ""),
                                                ("0:1,,1:2", "0:1,,1:2")],
    "index.interval.bytes": [("0", "0"), (str(INT_MAX), str(INT_MAX))],
    "leader.replication.throttled.replicas": [("*", "*"), ("10:100", "10:100")],
    "max.compaction.lag.ms": [("1", "1"), (str(LONG_MAX), str(LONG_MAX))],
    "max.message.bytes": [("0", "0"), ("1048588", "1048588"), (str(INT_MAX), str(INT_MAX))],
    "message.downconversion.enable": [("true", "true"), ("FALSE", "false"), (" True", "true")],
    "message.format.version": [("2.8-IV1", "2.8-IV1"), ("2.8", "2.8"), ("2.8.1", "2.8.1"),
                               ("0.10.0-IV1", "0.10.0-IV1"), ("0.10.0", "0.10.0"),
                               ("0.8.2.1", "0.8.2.1"), ("1.0", "1.0"), ("0.11.0", "0.11.0")],
    "message.timestamp.difference.max.ms": [("0", "0"), (str(LONG_MAX), str(LONG_MAX))],
    "message.timestamp.type": [("CreateTime", "CreateTime"), ("LogAppendTime", "LogAppendTime")],
    # Kafka describes a double as Java prints it; NaN passes Kafka's range check, so here too.
    "min.cleanable.dirty.ratio": [("0", "0.0"), ("1", "1.0"), ("0.5", "0.5"), (".25", "0.25"),
                                  ("1e-4", "1.0E-4"), ("0.75d", "0.75"), ("0x1p-1", "0.5"),
                                  ("NaN", "NaN")],
    "min.compaction.lag.ms": [("0", "0"), ("1000", "1000")],
    "min.insync.replicas": [("1", "1"), (str(INT_MAX), str(INT_MAX))],
    "preallocate": [("true", "true"), ("false", "false")],
    "retention.bytes": [("-1", "-1"), (str(LONG_MIN), str(LONG_MIN)), ("0", "0"),
                        (str(LONG_MAX), str(LONG_MAX))],
    "retention.ms": [("-1", "-1"), ("0", "0"), (" 60000", "60000"), ("007", "7")],
    "segment.bytes": [("14", "14"), ("1048576", "1048576"), (str(INT_MAX), str(INT_MAX))],
    "segment.index.bytes": [("0", "0"), ("10485760", "10485760")],
    "segment.jitter.ms": [("0", "0")],
    "segment.ms": [("1", "1"), ("604800000", "604800000")],
    "unclean.leader.election.enable": [("false", "false"), ("TRUE", "true")],
}

# Per config: (value given, what Kafka's message says of it) that Kafka refuses.
INVALID: dict[str, list[tuple[str, str]]] = {
    "cleanup.policy": [("shred", "Invalid value shred for configuration cleanup.policy: String "
                                 "must be one of: compact, delete"),
                       ("Compact", "Invalid value Compact"), ("delete,", "Invalid value  for")],
    "compression.type": [("brotli", "String must be one of: uncompressed, zstd, lz4, snappy, "
                                    "gzip, producer"), ("GZIP", "Invalid value GZIP")],
    "delete.retention.ms": [("-1", "Value must be at least 0")],
    "file.delete.delay.ms": [("-1", "Value must be at least 0")],
    "flush.messages": [("-1", "Value must be at least 0"), ("1.5", "Not a number of type LONG")],
    "flush.ms": [("-5", "Value must be at least 0")],
    "follower.replication.throttled.replicas": [
        ("0:x", "Invalid value [0:x] for configuration follower.replication.throttled.replicas: "
                "follower.replication.throttled.replicas must be the literal '*'"),
        ("0:1,*", "must be the literal '*'")],
    "index.interval.bytes": [("-1", "Value must be at least 0"),
                             (str(INT_MAX + 1), "Not a number of type INT")],
    "leader.replication.throttled.replicas": [("all", "must be the literal '*'")],
    "max.compaction.lag.ms": [("0", "Value must be at least 1")],
    "max.message.bytes": [("-1", "Value must be at least 0"),
                          (str(INT_MAX + 1), "Not a number of type INT")],
    "message.downconversion.enable": [("yes", "Expected value to be either true or false")],
    "message.format.version": [("3.0", "Version `3.0` is not a valid version"),
                               ("0.10", "Version `0.10` is not a valid version"),
                               ("latest", "is not a valid version")],
    "message.timestamp.difference.max.ms": [("-1", "Value must be at least 0")],
    "message.timestamp.type": [("createtime", "String must be one of: CreateTime, "
                                              "LogAppendTime")],
    "min.cleanable.dirty.ratio": [("1.5", "Invalid value 1.5 for configuration "
                                          "min.cleanable.dirty.ratio: Value must be no more "
                                          "than 1"),
                                  ("-0.1", "Value must be at least 0"),
                                  ("Infinity", "Value must be no more than 1"),
                                  ("half", "Not a number of type DOUBLE"),
                                  ("1_0", "Not a number of type DOUBLE")],
    "min.compaction.lag.ms": [("-1", "Value must be at least 0")],
    "min.insync.replicas": [("0", "Value must be at least 1"), ("", "Not a number of type INT")],
    "preallocate": [("1", "Expected value to be either true or false")],
    "retention.bytes": [(str(LONG_MAX + 1), "Not a number of type LONG"),
                        ("1e9", "Not a number of type LONG")],
    "retention.ms": [("-2", "Invalid value -2 for configuration retention.ms: Value must be at "
                            "least -1"),
                     ("soon", "Invalid value soon for configuration retention.ms: Not a number "
                              "of type LONG"),
                     ("1_000", "Not a number of type LONG"), ("٣", "Not a number of type LONG")],
    "segment.bytes": [("13", "Value must be at least 14"),
                      (str(1 << 31), "Not a number of type INT")],
    "segment.index.bytes": [("-1", "Value must be at least 0")],
    "segment.jitter.ms": [("-1", "Value must be at least 0")],
    "segment.ms": [("0", "Value must be at least 1")],
    "unclean.leader.election.enable": [("on", "Expected value to be either true or false")],
}


def test_the_table_is_kafka_28s_every_topic_config_with_its_type() -> None:
    assert {name: spec.kind for name, spec in SPECS.items()} == KAFKA_28
    assert set(VALID) == set(INVALID) == set(SPECS)  # every validator is tested below


@pytest.mark.parametrize(("name", "given", "stored"),
                         [(n, g, s) for n, cases in VALID.items() for g, s in cases])
def test_every_value_kafka_accepts_is_stored_normalised(name, given, stored) -> None:
    assert validate_topic_configs({name: given}) == {name: stored}


@pytest.mark.parametrize(("name", "given", "says"),
                         [(n, g, s) for n, cases in INVALID.items() for g, s in cases])
def test_every_value_kafka_refuses_is_invalid_config_in_its_words(name, given, says) -> None:
    with pytest.raises(InvalidConfig) as info:
        validate_topic_configs({name: given})
    assert says in info.value.message
    assert info.value.message.startswith("Invalid value ")


def test_unknown_names_and_nulls() -> None:
    with pytest.raises(InvalidConfig, match=r"^Unknown topic config name: retention\.millis$"):
        validate_topic_configs({"retention.ms": "1", "retention.millis": "5"})
    assert validate_topic_configs({"retention.ms": None, "segment.ms": "5"}) == {"segment.ms": "5"}


def test_the_compaction_lags_are_checked_against_each_other_with_defaults() -> None:
    assert validate_topic_configs({"min.compaction.lag.ms": "5", "max.compaction.lag.ms": "5"})
    with pytest.raises(InvalidConfig, match=r"conflict topic config setting "
                       r"min\.compaction\.lag\.ms \(6\) > max\.compaction\.lag\.ms \(5\)"):
        validate_topic_configs({"min.compaction.lag.ms": "6", "max.compaction.lag.ms": "5"})
    with pytest.raises(InvalidConfig, match="conflict"):
        validate_topic_configs({"min.compaction.lag.ms": "6", "max.compaction.lag.ms": "5",
                                "retention.ms": "1"})
    assert validate_topic_configs({"min.compaction.lag.ms": str(LONG_MAX)})  # max's default


def test_defaults_are_kafkas_or_the_brokers_own_settings() -> None:
    config = broker(storage=StorageConfig(segment_bytes=4096, retention_ms=None,
                                          retention_bytes=5000, max_batch_bytes=2048,
                                          index_interval_bytes=100),
                    replication=ReplicationConfig(min_insync_replicas=2))
    defaults = {spec.name: value for spec, value, own in effective_configs(config, {})}
    assert defaults == {
        "cleanup.policy": "delete", "compression.type": "producer",
        "delete.retention.ms": "86400000", "file.delete.delay.ms": "60000",
        "flush.messages": str(LONG_MAX), "flush.ms": str(LONG_MAX),
        "follower.replication.throttled.replicas": "", "index.interval.bytes": "100",
        "leader.replication.throttled.replicas": "", "max.compaction.lag.ms": str(LONG_MAX),
        "max.message.bytes": "2048", "message.downconversion.enable": "true",
        "message.format.version": "2.8-IV1",
        "message.timestamp.difference.max.ms": str(LONG_MAX),
        "message.timestamp.type": "CreateTime", "min.cleanable.dirty.ratio": "0.5",
        "min.compaction.lag.ms": "0", "min.insync.replicas": "2", "preallocate": "false",
        "retention.bytes": "5000", "retention.ms": "-1", "segment.bytes": "4096",
        "segment.index.bytes": "10485760", "segment.jitter.ms": "0", "segment.ms": "604800000",
        "unclean.leader.election.enable": "false"}
    # Every default is a value the config itself accepts.
    for name, value in defaults.items():
        assert validate_topic_configs({name: value}) == {name: value}
    every = broker(storage=StorageConfig(flush=FlushPolicy(FlushMode.EVERY_BATCH)))
    interval = broker(storage=StorageConfig(flush=FlushPolicy(FlushMode.INTERVAL_MS, 250)))
    assert SPECS["flush.messages"].default(every) == "1"
    assert SPECS["flush.ms"].default(interval) == "250"


def test_effective_configs_mark_the_topics_own_settings() -> None:
    rows = {spec.name: (value, own) for spec, value, own
            in effective_configs(broker(), {"retention.ms": "500", "preallocate": "true"})}
    assert rows["retention.ms"] == ("500", True) and rows["preallocate"] == ("true", True)
    assert rows["segment.ms"] == ("604800000", False)
    assert list(rows) == sorted(KAFKA_28)


def test_the_documentation_says_plainly_what_is_only_stored() -> None:
    acted = {n for n, s in SPECS.items() if s.acted}
    assert acted == {"cleanup.policy", "flush.messages", "index.interval.bytes",
                     "max.message.bytes", "min.insync.replicas", "retention.bytes",
                     "retention.ms", "segment.bytes"}
    for spec in SPECS.values():
        assert spec.documentation.startswith(spec.doc)
        if not spec.acted:
            assert spec.effect.startswith("Stored;"), spec.name
    assert "compaction is not implemented by twinbench" in SPECS["cleanup.policy"].documentation
    for name in ("delete.retention.ms", "min.cleanable.dirty.ratio", "max.compaction.lag.ms",
                 "min.compaction.lag.ms"):
        assert SPECS[name].effect == "Stored; compaction is not implemented by twinbench."


@pytest.mark.parametrize(("current", "given", "append", "want"), [
    ("delete", "compact", True, "delete,compact"),  # the default, then the item
    ("delete,compact", "compact", True, "delete,compact"),  # already there: unchanged
    ("", "compact, delete", True, "compact,delete"),
    ("delete", "compact,compact", True, "delete,compact"),
    ("delete,compact", "compact", False, "delete"),
    ("delete,compact", "compact,delete", False, ""),  # empty: a value of its own
    ("delete", "compact", False, "delete"),  # not there: unchanged
    ("0:1,1:2", " 1:2 ", False, "0:1"),
])
def test_append_and_subtract_on_lists(current, given, append, want) -> None:
    assert alter_list(current, given, append=append) == want


def test_render_is_kafkas_convert_to_string() -> None:
    assert render("BOOLEAN", True) == "true"
    assert render("LIST", ["a", "b"]) == "a,b"
    assert [render("DOUBLE", x) for x in (0.001, 1e7, 1.5e7, -2.5e-5, 123.0, -0.0)] == [
        "0.001", "1.0E7", "1.5E7", "-2.5E-5", "123.0", "-0.0"]


def test_storage_config_for_applies_overrides_and_ignores_garbage() -> None:
    base = StorageConfig(retention_ms=1000)
    got = storage_config_for(base, {"retention.ms": "-1", "retention.bytes": "2048",
                                    "segment.bytes": "8192", "min.insync.replicas": "1"})
    assert (got.retention_ms, got.retention_bytes, got.segment_bytes) == (None, 2048, 8192)
    # Values a record from elsewhere could carry that StorageConfig refuses: the broker's own.
    assert storage_config_for(base, {"segment.bytes": "x"}) == base
    assert storage_config_for(base, {"compression.type": "lz4", "segment.ms": "1"}) == base


def test_storage_acts_on_kafkas_edge_values_as_closely_as_it_can() -> None:
    base = StorageConfig(retention_ms=1000, retention_bytes=4096)
    got = storage_config_for(base, {"retention.ms": "0", "retention.bytes": "0",
                                    "segment.bytes": "14", "index.interval.bytes": "0",
                                    "flush.messages": "1"})
    assert (got.retention_ms, got.retention_bytes, got.segment_bytes,
            got.index_interval_bytes) == (1, 1, 1024, 1)
    assert got.flush.mode is FlushMode.EVERY_BATCH
    assert storage_config_for(base, {"retention.bytes": "-5"}).retention_bytes is None
    assert storage_config_for(base, {"flush.messages": "2"}) == base
    # Without delete in cleanup.policy nothing is deleted by retention (Kafka's meaning).
    for policy in ("compact", ""):
        kept = storage_config_for(base, {"cleanup.policy": policy, "retention.ms": "5"})
        assert (kept.retention_ms, kept.retention_bytes) == (None, None)
    both = storage_config_for(base, {"cleanup.policy": "delete,compact", "retention.ms": "5"})
    assert (both.retention_ms, both.retention_bytes) == (5, 4096)


def test_produce_rules_only_for_topics_that_need_them() -> None:
    assert produce_rules({}) is None
    assert produce_rules({"cleanup.policy": "delete", "retention.ms": "5"}) is None
    assert produce_rules({"cleanup.policy": "delete,compact"}) == ProduceRules(True, None)
    assert produce_rules({"max.message.bytes": "100"}) == ProduceRules(False, 100)
    assert produce_rules_by_topic({"a": {}, "b": {"cleanup.policy": "compact"},
                                   "c": {"segment.ms": "5"}}) == {"b": ProduceRules(True, None)}


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
