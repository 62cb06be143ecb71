"""The ``metadata`` block of a workload: metadata scenarios and the clusters' limits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.schema import NAME_RE, Ctx, defaults, given, keys

# The scenario of every session of a metadata workload (it lists none).
SCENARIO = "metadata"
# Metadata scenarios (harness/studies/metadata/session.py): what each kind's n counts.
KINDS = {
    "topic-storm": "topics created at once (each with the case's partitions)",
    "partition-scale": "partitions of one topic",
    "group-churn": "members joining one group (half of them then leave)",
    "broker-join": "brokers in the cluster before one more joins (and then leaves)",
}
# Kinds whose case names the partitions of the topics it uses.
_KINDS_WITH_PARTITIONS = ("topic-storm", "group-churn")
# What this harness lets a workload ask of one cluster, whatever limits it sets: a 2-core VM
# holds 10,000 partitions per broker process comfortably; beyond, a run would measure swapping.
MACHINE_MAX_PARTITIONS = 10_000
MACHINE_MAX_TOPICS = 10_000
# Group members: each is a client of its own (connections, heartbeats) on the load client's
# CPU, and the brokers allow 500 connections per client address.
MACHINE_MAX_MEMBERS = 200
# Brokers before a join: the cluster launcher's limit is 64 in all.
MACHINE_MAX_BROKERS = 63


@dataclass(frozen=True)
class MetadataCase:
    # [a-z0-9_-]+; with the size, names the cell (<name>-n<size>) in metadata.csv.
    name: str
    # A KINDS key: what the session does.
    kind: str
    # The sizes swept (topics or partitions, by kind), one cell each.
    sizes: tuple[int, ...]
    # topic-storm: partitions of every topic created; group-churn: of the group's topic.
    partitions: int = 1

    def total_partitions(self, n: int) -> int:
        """Partitions a session of size ``n`` creates in the cluster."""
        if self.kind == "topic-storm":
            return n * self.partitions
        return n if self.kind == "partition-scale" else self.partitions

    def topics(self, n: int) -> int:
        return n if self.kind == "topic-storm" else 1


@dataclass(frozen=True)
class MetadataPlan:
    cases: tuple[MetadataCase, ...]
    # Every broker's Metadata is polled this often while waiting for a step to converge.
    probe_ms: int = 20
    # A step that has not converged by then fails the session (one error line, no hang).
    timeout_s: float = 120.0
    # After the step: seconds of idle coordination traffic measured (0: not measured).
    idle_s: float = 5.0
    # The clusters' broker limits (--max-topics, --max-partitions-per-topic): a case asking
    # for more is refused when the file is loaded.
    max_topics: int = 1000
    max_partitions_per_topic: int = 1000


_METADATA_KEYS = keys(MetadataPlan)
_METADATA_DEFAULTS = defaults(MetadataPlan)
# A file calls a case's sizes n.
_METADATA_CASE_KEYS = keys(MetadataCase) - {"sizes"} | {"n"}


def _metadata_case(ctx: Ctx, where: str, raw: Any, plan: dict[str, Any]) -> MetadataCase:
    if not isinstance(raw, dict):
        raise ctx.fail(where, f"must be a mapping with name, kind and n, got {raw!r}")
    ctx.check_keys(raw, _METADATA_CASE_KEYS, where)
    for key in ("name", "kind", "n"):
        if key not in raw:
            raise ctx.fail(f"{where}.{key}", "is missing")
    name = raw["name"]
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ctx.fail(f"{where}.name", f"must match [a-z0-9][a-z0-9_-]*, got {name!r}")
    kind = ctx.choice(f"{where}.kind", raw["kind"], tuple(KINDS))
    cap = {"group-churn": MACHINE_MAX_MEMBERS, "broker-join": MACHINE_MAX_BROKERS}.get(
        kind, MACHINE_MAX_PARTITIONS)
    sizes = tuple(ctx.integer(f"{where}.n", n, 1, cap)
                  for n in ctx.string_list(f"{where}.n", raw["n"]))
    if "partitions" in raw and kind not in _KINDS_WITH_PARTITIONS:
        raise ctx.fail(f"{where}.partitions", f"only applies to kinds "
                       f"{', '.join(_KINDS_WITH_PARTITIONS)} (not {kind})")
    partitions = ctx.integer(f"{where}.partitions", raw.get("partitions", 1), 1,
                             MACHINE_MAX_PARTITIONS)
    case = MetadataCase(name, kind, sizes, partitions)
    # Limits are checked here, before a process starts: a case beyond what the brokers allow
    # would only collect refusals, and one beyond what the machine holds would exhaust it.
    for n in sizes:
        total = case.total_partitions(n)
        if total > MACHINE_MAX_PARTITIONS:
            raise ctx.fail(f"{where}.n", f"{n} x {partitions} partitions = {total:,} "
                           f"partitions; this harness creates at most "
                           f"{MACHINE_MAX_PARTITIONS:,} in one session")
        if case.topics(n) > plan["max_topics"]:
            raise ctx.fail(f"{where}.n", f"{n} topics, but the brokers allow max_topics="
                           f"{plan['max_topics']} (raise metadata.max_topics, at most "
                           f"{MACHINE_MAX_TOPICS:,})")
        per_topic = n if kind == "partition-scale" else case.total_partitions(n) // max(
            1, case.topics(n))
        if per_topic > plan["max_partitions_per_topic"]:
            raise ctx.fail(f"{where}.n" if kind == "partition-scale" else f"{where}.partitions",
                           f"{per_topic} partitions in one topic, but the brokers allow "
                           f"max_partitions_per_topic={plan['max_partitions_per_topic']} "
                           f"(raise metadata.max_partitions_per_topic, at most "
                           f"{MACHINE_MAX_PARTITIONS:,})")
    return case


def parse(ctx: Ctx, data: Mapping[str, Any], core: Mapping[str, Any]) -> MetadataPlan | None:
    raw = data.get("metadata")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ctx.fail("metadata", "must be a mapping with cases (and probe_ms, timeout_s, ...)")
    ctx.check_keys(raw, _METADATA_KEYS, "metadata")
    if "cases" not in raw:
        raise ctx.fail("metadata.cases", "is missing")
    plan: dict[str, Any] = {
        "probe_ms": ctx.integer("metadata.probe_ms",
                                given(raw, "probe_ms", _METADATA_DEFAULTS), 1, 10_000),
        "timeout_s": ctx.number("metadata.timeout_s",
                                given(raw, "timeout_s", _METADATA_DEFAULTS)),
        "max_topics": ctx.integer("metadata.max_topics",
                                  given(raw, "max_topics", _METADATA_DEFAULTS), 1,
                                  MACHINE_MAX_TOPICS),
        "max_partitions_per_topic": ctx.integer(
            "metadata.max_partitions_per_topic",
            given(raw, "max_partitions_per_topic", _METADATA_DEFAULTS), 1,
            MACHINE_MAX_PARTITIONS),
    }
    if plan["timeout_s"] > 3600:
        raise ctx.fail("metadata.timeout_s", f"must be at most 3600 s, got {plan['timeout_s']:g}")
    idle = given(raw, "idle_s", _METADATA_DEFAULTS)
    if isinstance(idle, bool) or not isinstance(idle, int | float) or not 0 <= idle <= 600:
        raise ctx.fail("metadata.idle_s", f"must be a number of seconds in [0, 600], "
                       f"got {idle!r}")
    plan["idle_s"] = float(idle)
    cases = raw["cases"]
    if not isinstance(cases, list) or not cases:
        raise ctx.fail("metadata.cases", "must be a non-empty list of {name, kind, n}")
    parsed = [_metadata_case(ctx, f"metadata.cases[{i}]", c, plan)
              for i, c in enumerate(cases)]
    names = [c.name for c in parsed]
    for n in names:
        if names.count(n) > 1:
            raise ctx.fail("metadata.cases", f"case {n!r} is listed twice")
    return MetadataPlan(cases=tuple(parsed), **plan)


def broker_args(plan: MetadataPlan) -> tuple[str, ...]:
    """The limits its cases were checked against, on every broker of its clusters."""
    return ("--max-topics", str(plan.max_topics),
            "--max-partitions-per-topic", str(plan.max_partitions_per_topic))
