"""Topic configs: Kafka 2.8's whole table of topic-level configs, what each accepts, and which
ones the brokers act on.

Kafka accepts every topic config it defines and checks the value's type and range (Kafka 2.8's
``LogConfig`` and ``ConfigDef``). So do the brokers here: CreateTopics, AlterConfigs and
IncrementalAlterConfigs accept the 26 names of ``SPECS``, parse each value as Kafka would (a Java
``int`` or ``long``, a ``double``, ``true``/``false``, a comma-separated list, a string from a fixed
set, a message format version), check its range, and refuse what Kafka refuses with INVALID_CONFIG
and Kafka's wording ("Unknown topic config name: x", "Invalid value v for configuration x:
reason"). A topic's own configs travel with it through each twin's coordination (ZooKeeper's
``/config/topics/<t>``, the DSBS topic record, the Raft metadata log) in the normalised form that
DescribeConfigs shows (Kafka describes the parsed value: " 100" is "100", "TRUE" is "true").
A config the topic does not set falls back to the broker's value (``TopicConfigSpec.default``).

Every config is either acted on or only stored, and DescribeConfigs' documentation (v3+) says
which, so that no client is told a setting took effect that the brokers ignore.

Acted on:

* ``retention.ms``, ``retention.bytes``: time and size retention of closed segments, per
  partition (``storage_config_for``). 0 acts as the smallest limit the storage holds (1 ms,
  1 byte); a negative ``retention.bytes`` means no limit, as in Kafka.
* ``segment.bytes``: the roll size; Kafka's floor is 14 bytes, values under 1024 (the storage's
  smallest segment) act as 1024.
* ``index.interval.bytes``: bytes between offset-index entries of new segments (0 acts as 1).
* ``flush.messages``: 1 fsyncs every append before its answer; any other value is stored and the
  broker-wide flush policy applies.
* ``cleanup.policy``: without ``delete`` retention deletes nothing (Kafka's meaning). With
  ``compact`` the leader refuses records without a key (KIP-467: INVALID_RECORD naming each
  keyless record, ``brokers/core/record_checks.py``), but the log is never compacted:
  compaction is not implemented, so old values of a key stay until retention removes them.
* ``max.message.bytes``: the largest batch a topic's leader takes from producers
  (MESSAGE_TOO_LARGE, ``ProduceRules``); followers copy whatever their leader accepted.
* ``min.insync.replicas``: checked at produce time with acks=all against the partition's ISR
  (NOT_ENOUGH_REPLICAS; brokers/core/replication/manager.py) when the topic is replicated.
  A topic of replication factor 1 never enters the replication code (its data path stays the
  unreplicated one), so it takes acks=all whatever the value, where Kafka would refuse
  acks=all when the value exceeds 1.

Only stored (accepted, validated, described, never acted on): ``compression.type`` (batches stay
as producers compressed them), ``delete.retention.ms``, ``max.compaction.lag.ms``,
``min.cleanable.dirty.ratio``, ``min.compaction.lag.ms`` (no compaction), ``file.delete.delay.ms``
(deleted segments go at once), ``flush.ms``, ``segment.ms`` and ``segment.jitter.ms`` (no rolling by
time), ``segment.index.bytes``, ``preallocate``, ``message.format.version`` and
``message.downconversion.enable`` (only magic 2, never converted), ``message.timestamp.type`` and
``message.timestamp.difference.max.ms`` (producers' timestamps kept, unchecked), the two
replication throttle lists (no throttling), ``unclean.leader.election.enable`` (per topic).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from brokers.core.config import BrokerConfig, FlushMode, FlushPolicy, StorageConfig
from brokers.core.errors import InvalidConfig, UserError

UNLIMITED = -1
MIN_SEGMENT_BYTES = 1024  # StorageConfig's own floor
LONG_MAX = (1 << 63) - 1
_BITS = {"SHORT": 16, "INT": 32, "LONG": 64}

# Java's String.trim removes every character up to the space; ConfigDef trims each value so.
_JAVA_TRIM = "".join(map(chr, range(33)))
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
# Double.parseDouble's grammar: decimal or hexadecimal, an optional float/double suffix.
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?)")
# ConfigDef splits a list at commas and the whitespace (Java's \s) around them.
_LIST_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")

# Kafka 2.8's message format versions (kafka.api.ApiVersion): each full version, and each short
# one naming the last of its line. A value is matched on its first three dot-separated parts
# when it starts with "0.", else on its first two ("2.8.1" is "2.8").
_LEGACY_VERSIONS = ("0.8.0", "0.8.1", "0.8.2", "0.9.0")
_VERSIONS = ("0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0",
             "0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2", "1.0-IV0", "1.1-IV0", "2.0-IV0",
             "2.0-IV1", "2.1-IV0", "2.1-IV1", "2.1-IV2", "2.2-IV0", "2.2-IV1", "2.3-IV0",
             "2.3-IV1", "2.4-IV0", "2.4-IV1", "2.5-IV0", "2.6-IV0", "2.7-IV0", "2.7-IV1",
             "2.7-IV2", "2.8-IV0", "2.8-IV1")
MESSAGE_FORMAT_VERSIONS = frozenset(
    _LEGACY_VERSIONS + _VERSIONS + tuple(v.split("-")[0] for v in _VERSIONS))
LATEST_MESSAGE_FORMAT = _VERSIONS[-1]

# Values a parsed config can have.
Parsed = int | float | bool | str | list[str]


class _Refused(Exception):
    """A value the config's validator refuses: what Kafka shows of it, and why."""

    def __init__(self, shown: str, reason: str) -> None:
        super().__init__(reason)
        self.shown = shown
        self.reason = reason


def _java_double(x: float) -> str:
    """Double.toString: what Kafka describes a double config as."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        return repr(x)  # Python writes this range in plain decimals too, ".0" included
    d = Decimal(repr(x))  # the shortest digits that read back as x, as Java's are
    digits = "".join(map(str, d.as_tuple().digits)).rstrip("0") or "0"
    return f"{'-' if x < 0 else ''}{digits[0]}.{digits[1:] or '0'}E{d.adjusted()}"


def _java_list(items: list[str]) -> str:
    return "[" + ", ".join(items) + "]"


def parse_value(kind: str, text: str) -> Parsed:
    """ConfigDef.parseType for a string: raises ValueError with Kafka's reason."""
    trimmed = text.strip(_JAVA_TRIM)
    if kind in _BITS:
        bits = _BITS[kind]
        limit = 1 << (bits - 1)
        if _JAVA_INTEGER.fullmatch(trimmed) and -limit <= int(trimmed) < limit:
            return int(trimmed)
        raise ValueError(f"Not a number of type {kind}")
    if kind == "DOUBLE":
        if not _JAVA_DOUBLE.fullmatch(trimmed):
            raise ValueError("Not a number of type DOUBLE")
        # A trailing f/F/d/D is the suffix (hexadecimal digits end before the p exponent).
        body = trimmed[:-1] if trimmed[-1] in "fFdD" else trimmed
        if "x" not in body.lower():
            return float(body)  # Python reads NaN, Infinity and Java's decimals alike
        try:
            return float.fromhex(body)
        except OverflowError:  # Java rounds a hexadecimal too large to Infinity
            return -math.inf if body.startswith("-") else math.inf
    if kind == "BOOLEAN":
        if trimmed.lower() in ("true", "false"):
            return trimmed.lower() == "true"
        raise ValueError("Expected value to be either true or false")
    if kind == "LIST":
        return _LIST_SEPARATOR.split(trimmed) if trimmed else []
    return trimmed  # STRING (and PASSWORD, CLASS: no topic config of Kafka 2.8 has them)


def render(kind: str, value: Parsed) -> str:
    """ConfigDef.convertToString: the normalised form stored and described."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


# --- validators: Kafka's, on the parsed value ---------------------------------------------------
Check = Callable[[Parsed], None]


def _at_least(lo: int) -> Check:
    def check(value: Parsed) -> None:
        assert isinstance(value, int | float)
        if value < lo:
            raise _Refused(_shown(value), f"Value must be at least {lo}")
    return check


def _between(lo: int, hi: int) -> Check:
    def check(value: Parsed) -> None:
        assert isinstance(value, int | float)
        # NaN compares false both ways and passes, as in Kafka's Range.
        if value < lo:
            raise _Refused(_shown(value), f"Value must be at least {lo}")
        if value > hi:
            raise _Refused(_shown(value), f"Value must be no more than {hi}")
    return check


def _one_of(*allowed: str) -> Check:
    def check(value: Parsed) -> None:
        if value not in allowed:  # case-sensitive, as Kafka's ValidString
            raise _Refused(str(value), f"String must be one of: {', '.join(allowed)}")
    return check


def _each_of(*allowed: str) -> Check:
    def check(value: Parsed) -> None:
        assert isinstance(value, list)
        for item in value:  # an empty list is valid (Kafka 2.8's ValidList)
            if item not in allowed:
                raise _Refused(item, f"String must be one of: {', '.join(allowed)}")
    return check


_REPLICA = re.compile(r"(?:[0-9]+:[0-9]+)?")


def _throttled_replicas(name: str) -> Check:
    def check(value: Parsed) -> None:
        assert isinstance(value, list)
        if all(_REPLICA.fullmatch(i.strip(_JAVA_TRIM)) for i in value) \
                or "".join(value).strip(_JAVA_TRIM) == "*":
            return
        raise _Refused(_java_list(value), f"{name} must be the literal '*' or a list of replicas "
                       "in the following format: [partitionId]:[brokerId],[partitionId]:"
                       "[brokerId],...")
    return check


def _message_format(value: Parsed) -> None:
    assert isinstance(value, str)
    parts = value.split(".")
    key = ".".join(parts[:3] if value.startswith("0.") else parts[:2])
    if key not in MESSAGE_FORMAT_VERSIONS:
        raise _Refused(value, f"Version `{value}` is not a valid version")


def _shown(value: Parsed) -> str:
    return _java_double(value) if isinstance(value, float) else str(value)


# --- the table ----------------------------------------------------------------------------------
def _const(text: str) -> Callable[[BrokerConfig], str]:
    return lambda _c: text


def _or_unlimited(value: int | None) -> str:
    return str(UNLIMITED if value is None else value)


def _flush_messages(c: BrokerConfig) -> str:
    return "1" if c.storage.flush.mode is FlushMode.EVERY_BATCH else str(LONG_MAX)


def _flush_ms(c: BrokerConfig) -> str:
    flush = c.storage.flush
    return str(flush.interval_ms) if flush.mode is FlushMode.INTERVAL_MS else str(LONG_MAX)


NO_COMPACTION = "Stored; compaction is not implemented by twinbench."


@dataclass(frozen=True, slots=True)
class TopicConfigSpec:
    name: str
    kind: str  # Kafka's ConfigDef type, DescribeConfigs' config_type: LONG, INT, LIST, ...
    default: Callable[[BrokerConfig], str]  # the broker's value, for a topic not setting it
    check: Check | None  # Kafka's validator (None: any value of the type)
    doc: str  # what the config means
    effect: str  # what the brokers do with it: how they act on it, or that they only store it
    acted: bool
    broker_synonym: str | None = None  # the broker-wide config it falls back to in Kafka

    @property
    def documentation(self) -> str:
        """DescribeConfigs' documentation: the meaning, then what twinbench does with it."""
        return f"{self.doc} {self.effect}"

    def normalise(self, text: str) -> str:
        """The value as stored and described; InvalidConfig with Kafka's wording if refused."""
        try:
            value = parse_value(self.kind, text)
        except ValueError as exc:
            raise InvalidConfig(_invalid(text, self.name, str(exc))) from None
        if self.check is not None:
            try:
                self.check(value)
            except _Refused as exc:
                raise InvalidConfig(_invalid(exc.shown, self.name, exc.reason)) from None
        return render(self.kind, value)


def _invalid(shown: str, name: str, reason: str) -> str:
    return f"Invalid value {shown} for configuration {name}: {reason}"


SPECS: dict[str, TopicConfigSpec] = {s.name: s for s in sorted((
    TopicConfigSpec(
        "cleanup.policy", "LIST", _const("delete"), _each_of("compact", "delete"),
        "How a partition's old records go: delete drops whole segments past retention.ms or "
        "retention.bytes, compact keeps the newest record of each key.",
        "Acted on in part: retention deletes only when the list holds delete; with compact the "
        "partition leader refuses records without a key (INVALID_RECORD), but compact is "
        "otherwise stored only: compaction is not implemented by twinbench, so older values of "
        "a key are never removed.",
        acted=True, broker_synonym="log.cleanup.policy"),
    TopicConfigSpec(
        "compression.type", "STRING", _const("producer"),
        _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        "The codec the topic's batches are stored in; producer keeps the producer's own.",
        "Stored; recompression is not implemented by twinbench, which keeps every batch as the "
        "producer compressed it.",
        acted=False, broker_synonym="compression.type"),
    TopicConfigSpec(
        "delete.retention.ms", "LONG", _const("86400000"), _at_least(0),
        "How long a compacted topic keeps its tombstones (records with a null value).",
        NO_COMPACTION, acted=False, broker_synonym="log.cleaner.delete.retention.ms"),
    TopicConfigSpec(
        "file.delete.delay.ms", "LONG", _const("60000"), _at_least(0),
        "How long a deleted segment's files wait before they leave the disk.",
        "Stored; twinbench removes a deleted segment's files at once.",
        acted=False, broker_synonym="log.segment.delete.delay.ms"),
    TopicConfigSpec(
        "flush.messages", "LONG", _flush_messages, _at_least(0),
        "How many records may be appended before the partition is forced to disk.",
        "Acted on when 1: every append is fsynced before it is acknowledged. Any other value is "
        "stored only, and the broker-wide flush policy (--flush) applies.",
        acted=True, broker_synonym="log.flush.interval.messages"),
    TopicConfigSpec(
        "flush.ms", "LONG", _flush_ms, _at_least(0),
        "How long appended records may wait before the partition is forced to disk.",
        "Stored; the broker-wide flush policy (--flush) applies.",
        acted=False, broker_synonym="log.flush.interval.ms"),
    TopicConfigSpec(
        "follower.replication.throttled.replicas", "LIST", _const(""),
        _throttled_replicas("follower.replication.throttled.replicas"),
        "Replicas ([partition]:[broker], or * for all) whose copying is throttled on the "
        "follower's side.",
        "Stored; replication throttling is not implemented by twinbench.", acted=False),
    TopicConfigSpec(
        "index.interval.bytes", "INT", lambda c: str(c.storage.index_interval_bytes),
        _at_least(0), "Bytes of batches between two entries of a segment's offset index.",
        "Acted on for segments created after it is set (0 acts as 1: an entry per batch).",
        acted=True, broker_synonym="log.index.interval.bytes"),
    TopicConfigSpec(
        "leader.replication.throttled.replicas", "LIST", _const(""),
        _throttled_replicas("leader.replication.throttled.replicas"),
        "Replicas ([partition]:[broker], or * for all) whose copying is throttled on the "
        "leader's side.",
        "Stored; replication throttling is not implemented by twinbench.", acted=False),
    TopicConfigSpec(
        "max.compaction.lag.ms", "LONG", _const(str(LONG_MAX)), _at_least(1),
        "The longest a record may wait before compaction may remove it.",
        NO_COMPACTION, acted=False, broker_synonym="log.cleaner.max.compaction.lag.ms"),
    TopicConfigSpec(
        "max.message.bytes", "INT", lambda c: str(c.storage.max_batch_bytes), _at_least(0),
        "The largest record batch (compressed size) a producer may append to the topic.",
        "Acted on by the partition leader (MESSAGE_TOO_LARGE); followers copy whatever their "
        "leader accepted.",
        acted=True, broker_synonym="message.max.bytes"),
    TopicConfigSpec(
        "message.format.version", "STRING", _const(LATEST_MESSAGE_FORMAT), _message_format,
        "The record format version the broker writes the topic's batches in.",
        "Stored; twinbench stores RecordBatch v2 (magic 2) as sent and never converts it.",
        acted=False, broker_synonym="log.message.format.version"),
    TopicConfigSpec(
        "message.timestamp.difference.max.ms", "LONG", _const(str(LONG_MAX)), _at_least(0),
        "How far a record's CreateTime may lie from the broker's clock.",
        "Stored; twinbench does not check record timestamps.",
        acted=False, broker_synonym="log.message.timestamp.difference.max.ms"),
    TopicConfigSpec(
        "message.timestamp.type", "STRING", _const("CreateTime"),
        _one_of("CreateTime", "LogAppendTime"),
        "Whether records keep the producer's timestamp (CreateTime) or take the broker's "
        "(LogAppendTime).",
        "Stored; twinbench keeps the producer's timestamps (LogAppendTime is not implemented).",
        acted=False, broker_synonym="log.message.timestamp.type"),
    TopicConfigSpec(
        "min.cleanable.dirty.ratio", "DOUBLE", _const("0.5"), _between(0, 1),
        "The share of a partition not yet compacted at which compaction becomes due.",
        NO_COMPACTION, acted=False, broker_synonym="log.cleaner.min.cleanable.ratio"),
    TopicConfigSpec(
        "min.compaction.lag.ms", "LONG", _const("0"), _at_least(0),
        "The shortest a record stays before compaction may remove it.",
        NO_COMPACTION, acted=False, broker_synonym="log.cleaner.min.compaction.lag.ms"),
    TopicConfigSpec(
        "min.insync.replicas", "INT", lambda c: str(c.replication.min_insync_replicas),
        _at_least(1), "In-sync replicas a produce with acks=all needs.",
        "Acted on for replicated topics (NOT_ENOUGH_REPLICAS); a topic of replication factor 1 "
        "takes acks=all whatever the value.",
        acted=True, broker_synonym="min.insync.replicas"),
    TopicConfigSpec(
        "preallocate", "BOOLEAN", _const("false"), None,
        "Whether a new segment file is allocated on disk at its full size.",
        "Stored; twinbench does not preallocate segment files.",
        acted=False, broker_synonym="log.preallocate"),
    TopicConfigSpec(
        "retention.bytes", "LONG", lambda c: _or_unlimited(c.storage.retention_bytes), None,
        "The size past which a partition's oldest segments are deleted (negative: no limit).",
        "Acted on while cleanup.policy holds delete, for closed segments (0 acts as 1 byte).",
        acted=True, broker_synonym="log.retention.bytes"),
    TopicConfigSpec(
        "retention.ms", "LONG", lambda c: _or_unlimited(c.storage.retention_ms), _at_least(-1),
        "How long a segment is kept after its newest record before it is deleted (-1: always).",
        "Acted on while cleanup.policy holds delete, for closed segments (0 acts as 1 ms).",
        acted=True, broker_synonym="log.retention.ms"),
    TopicConfigSpec(
        "segment.bytes", "INT", lambda c: str(c.storage.segment_bytes), _at_least(14),
        "The size at which a partition rolls to a new segment file.",
        f"Acted on; values under {MIN_SEGMENT_BYTES} act as {MIN_SEGMENT_BYTES}, the storage's "
        "smallest segment.",
        acted=True, broker_synonym="log.segment.bytes"),
    TopicConfigSpec(
        "segment.index.bytes", "INT", _const(str(10 * 1024 * 1024)), _at_least(0),
        "The largest size of a segment's offset index file.",
        "Stored; twinbench's offset indexes grow as their segment does.",
        acted=False, broker_synonym="log.index.size.max.bytes"),
    TopicConfigSpec(
        "segment.jitter.ms", "LONG", _const("0"), _at_least(0),
        "A random time taken off segment.ms so that partitions do not all roll at once.",
        "Stored; rolling by time is not implemented by twinbench.",
        acted=False, broker_synonym="log.roll.jitter.ms"),
    TopicConfigSpec(
        "segment.ms", "LONG", _const(str(7 * 24 * 3600 * 1000)), _at_least(1),
        "How long a segment may stay open before it rolls, full or not.",
        "Stored; rolling by time is not implemented by twinbench (segments roll by size).",
        acted=False, broker_synonym="log.roll.ms"),
    TopicConfigSpec(
        "unclean.leader.election.enable", "BOOLEAN", _const("false"), None,
        "Whether a replica outside the ISR may lead when no in-sync replica is left.",
        "Stored; per-topic unclean election is not implemented by twinbench (an architecture's "
        "own broker-wide setting decides).",
        acted=False, broker_synonym="unclean.leader.election.enable"),
    TopicConfigSpec(
        "message.downconversion.enable", "BOOLEAN", _const("true"), None,
        "Whether the broker converts batches down to an older format for older consumers.",
        "Stored; twinbench never converts down (Fetch is served from v4: magic 2 only).",
        acted=False, broker_synonym="log.message.downconversion.enable"),
), key=lambda s: s.name)}


def unknown(name: str) -> InvalidConfig:
    return InvalidConfig(f"Unknown topic config name: {name}")


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """The configs a topic may have, normalised; InvalidConfig names the first bad one. A null
    value means "the default" and is dropped."""
    out: dict[str, str] = {}
    for name, value in configs.items():
        spec = SPECS.get(name)
        if spec is None:
            raise unknown(name)
        if value is not None:
            out[name] = spec.normalise(value)
    # Kafka's one check across configs (LogConfig.validateValues), on the values with defaults.
    lo = int(out.get("min.compaction.lag.ms", "0"))
    hi = int(out.get("max.compaction.lag.ms", str(LONG_MAX)))
    if lo > hi:
        raise InvalidConfig(f"conflict topic config setting min.compaction.lag.ms ({lo}) > "
                            f"max.compaction.lag.ms ({hi})")
    return out


def list_items(value: str) -> list[str]:
    """A stored LIST value's items (stored values are normalised: no spaces around commas)."""
    return value.split(",") if value else []


def alter_list(current: str, given: str | None, *, append: bool) -> str:
    """IncrementalAlterConfigs' APPEND (items not yet present, at the end) or SUBTRACT (every
    item given) on a list config's current value, its default when the topic sets none. An
    empty result is a value of its own: the empty list, not the default."""
    items = [i.strip() for i in current.split(",") if i.strip()]
    named = [i.strip() for i in (given or "").split(",") if i.strip()]
    if append:
        return ",".join(items + [i for i in dict.fromkeys(named) if i not in items])
    return ",".join(i for i in items if i not in named)


def effective_configs(broker: BrokerConfig, configs: Mapping[str, str]
                      ) -> list[tuple[TopicConfigSpec, str, bool]]:
    """(spec, value, is the topic's own setting) for every config, in table order."""
    return [(spec, configs[name], True) if name in configs else (spec, spec.default(broker), False)
            for name, spec in SPECS.items()]


def storage_config_for(base: StorageConfig, configs: Mapping[str, str]) -> StorageConfig:
    """The broker's storage config with a topic's own settings applied. Values are read
    leniently: one stored by an older broker, or one StorageConfig cannot hold, leaves the
    broker's own setting in place."""
    changes: dict[str, object] = {}
    for name, field_name in (("retention.ms", "retention_ms"),
                             ("retention.bytes", "retention_bytes")):
        value = _safe_int(configs.get(name))
        if value is not None:
            # Negative is unlimited (retention.ms only allows -1); StorageConfig holds positive
            # limits only, and 0 (delete every closed segment) acts as the smallest one.
            changes[field_name] = None if value < 0 else max(value, 1)
    if "cleanup.policy" in configs and "delete" not in list_items(configs["cleanup.policy"]):
        changes["retention_ms"] = changes["retention_bytes"] = None  # no deletion policy
    value = _safe_int(configs.get("segment.bytes"))
    if value is not None and value > 0:
        changes["segment_bytes"] = max(value, MIN_SEGMENT_BYTES)
    value = _safe_int(configs.get("index.interval.bytes"))
    if value is not None and value >= 0:
        changes["index_interval_bytes"] = max(value, 1)
    if _safe_int(configs.get("flush.messages")) == 1:
        changes["flush"] = FlushPolicy(FlushMode.EVERY_BATCH)
    if not changes:
        return base
    try:
        # changes holds StorageConfig field names and values of their types (built above).
        return dataclasses.replace(base, **changes)  # type: ignore[arg-type]
    except UserError:  # a stored value StorageConfig refuses: keep the broker's own
        return base


def _safe_int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class ProduceRules:
    """What a topic's leader checks of produced batches beyond what every topic gets. Only
    topics that set such a config have rules, so the produce path of every other topic pays one
    dictionary miss per topic per request."""

    keys_required: bool  # cleanup.policy holds compact: a record without a key is refused
    max_message_bytes: int | None  # the topic's own max.message.bytes


def produce_rules(configs: Mapping[str, str]) -> ProduceRules | None:
    """The topic's ProduceRules, None when it needs none."""
    keys = "compact" in list_items(configs.get("cleanup.policy", ""))
    limit = _safe_int(configs.get("max.message.bytes"))
    if not keys and limit is None:
        return None
    return ProduceRules(keys, limit)


def produce_rules_by_topic(configs: Mapping[str, Mapping[str, str]]) -> dict[str, ProduceRules]:
    """Every topic's ProduceRules, for the topics that have any (``BrokerContext.topic_rules``)."""
    return {name: rules for name, c in configs.items() if c and (rules := produce_rules(c))}
