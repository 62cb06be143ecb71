"""Topic configs: the one table of the per-topic settings the brokers accept, and what they do.

A topic's configs travel with it through each twin's coordination (ZooKeeper's
``/config/topics/<t>``, DSBS's topic record), so every broker sees the same values; the storage
core applies them to that topic's partition logs (``storage_config_for``), overriding the
broker-wide ``StorageConfig``. CreateTopics, AlterConfigs and IncrementalAlterConfigs validate
them here (INVALID_CONFIG, with the reason) and DescribeConfigs describes them from here, so a
client is never told a setting took effect that the brokers ignore:

* ``retention.ms``, ``retention.bytes``: time and size retention (-1 = unlimited, Kafka's
  meaning), per partition, as the broker-wide settings.
* ``segment.bytes``: the segment roll size.
* ``cleanup.policy``: only ``delete``. ``compact`` is refused: compaction does not exist, and
  accepting it would promise clients that old values of a key disappear.
* ``min.insync.replicas``: checked at produce time with acks=all against the partition's ISR
  (NOT_ENOUGH_REPLICAS; brokers/core/replication/manager.py) when the topic is replicated.
  A topic of replication factor 1 never enters the replication code (its data path stays the
  unreplicated one), so it takes acks=all whatever the value, where Kafka would refuse
  acks=all when the value exceeds 1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from brokers.core.config import StorageConfig
from brokers.core.errors import InvalidConfig, UserError

UNLIMITED = -1
MIN_SEGMENT_BYTES = 1024  # StorageConfig's own floor


@dataclass(frozen=True, slots=True)
class TopicConfigSpec:
    name: str
    kind: str  # the DescribeConfigs config type name: LONG, INT, STRING
    doc: str
    parse: Callable[[str], object]  # raises ValueError with the reason
    default: Callable[[StorageConfig], str]


def _limit(text: str) -> int:
    """A retention limit: -1 (unlimited) or positive (the broker-wide settings' own rule)."""
    value = int(text.strip())
    if value != UNLIMITED and not 1 <= value < 1 << 63:
        raise ValueError("must be -1 (unlimited) or positive")
    return value


def _int(lo: int) -> Callable[[str], object]:
    def parse(text: str) -> int:
        value = int(text.strip())
        if not lo <= value < 1 << 31:
            raise ValueError(f"must be an int of at least {lo}")
        return value
    return parse


def _cleanup_policy(text: str) -> str:
    policies = {p.strip() for p in text.split(",")}
    if policies == {"delete"}:
        return "delete"
    if "compact" in policies:
        raise ValueError("compaction is not implemented; only cleanup.policy=delete is served")
    raise ValueError("must be delete")


def _or_unlimited(value: int | None) -> str:
    return str(UNLIMITED if value is None else value)


SPECS: dict[str, TopicConfigSpec] = {s.name: s for s in (
    TopicConfigSpec("retention.ms", "LONG", "Delete closed segments older than this (-1: never).",
                    _limit, lambda c: _or_unlimited(c.retention_ms)),
    TopicConfigSpec("retention.bytes", "LONG",
                    "Delete the oldest closed segments while a partition is larger (-1: never).",
                    _limit, lambda c: _or_unlimited(c.retention_bytes)),
    TopicConfigSpec("segment.bytes", "INT", "Roll to a new segment file at this size.",
                    _int(MIN_SEGMENT_BYTES), lambda c: str(c.segment_bytes)),
    TopicConfigSpec("cleanup.policy", "LIST", "Only delete (compaction is not implemented).",
                    _cleanup_policy, lambda c: "delete"),
    TopicConfigSpec("min.insync.replicas", "INT",
                    "In-sync replicas acks=all needs (replicated topics).",
                    _int(1), lambda c: "1"),
)}


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """The configs a topic may be created with, normalised; InvalidConfig names the first bad
    one. A null value means "the default" and is dropped, as Kafka does."""
    out: dict[str, str] = {}
    for name, value in configs.items():
        spec = SPECS.get(name)
        if spec is None:
            raise InvalidConfig(f"unknown topic config {name!r}; served: {', '.join(SPECS)}")
        if value is None:
            continue
        try:
            out[name] = str(spec.parse(value))
        except ValueError as exc:
            raise InvalidConfig(f"invalid value {value!r} for {name}: {exc}") from None
    return out


def effective_configs(base: StorageConfig, configs: Mapping[str, str]
                      ) -> list[tuple[TopicConfigSpec, str, bool]]:
    """(spec, value, is the topic's own setting) for every served config, in table order."""
    return [(spec, configs[name], True) if name in configs else (spec, spec.default(base), False)
            for name, spec in SPECS.items()]


def storage_config_for(base: StorageConfig, configs: Mapping[str, str]) -> StorageConfig:
    """The broker's storage config with a topic's own settings applied (unknown keys, which a
    record written by an older broker could carry, are ignored)."""
    changes: dict[str, object] = {}
    for name, field_name in (("retention.ms", "retention_ms"),
                             ("retention.bytes", "retention_bytes")):
        if name in configs:
            value = _safe_int(configs[name])
            if value is not None:
                changes[field_name] = None if value == UNLIMITED else value
    if "segment.bytes" in configs:
        value = _safe_int(configs["segment.bytes"])
        if value is not None and value >= MIN_SEGMENT_BYTES:
            changes["segment_bytes"] = value
    if not changes:
        return base
    try:
        # changes holds StorageConfig field names and values of their types (built above).
        return dataclasses.replace(base, **changes)  # type: ignore[arg-type]
    except UserError:  # a stored value StorageConfig refuses: keep the broker's own
        return base


def _safe_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
