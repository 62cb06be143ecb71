"""Workload files (``workloads/*.yaml``): schema, defaults and validation.

A workload file says *what* to measure; ``twinbench run --arch`` says *on which architecture*.
Everything is checked when the file is loaded, before a process starts: an unknown key (with a
"did you mean" hint), a value of the wrong type or out of range, or an impossible combination
(more consumers than partitions) raises :class:`WorkloadError`, whose message is one line
naming the file and the key, e.g. ``paper.yaml: tries: must be an integer >= 1, got 0``.

Shape (every key but ``name`` and ``cells`` optional; defaults are the paper's experiment)::

    name: paper                  # [a-z0-9_-]+, goes into run ids
    description: free text
    brokers: 3                   # broker processes
    partitions: 3                # of each session's topic (default: one per broker)
    producers: 3                 # concurrent producer clients, distinct producer ids
    consumers: 3                 # concurrent consumer clients, one group, static assignment
    producer_mode: sync          # sync | pipelined
    window: 8                    # requests in flight per producer (pipelined only)
    producer_partitions: split   # split (each producer its share) | all (round-robin over all)
    replication_factor: 1        # replicas of each session's topic (above 1: replicating
                                 # architectures only, docs/replication.md)
    acks: 1                      # produce acks: 1 | -1 (all in-sync replicas) | 0
    min_insync_replicas: 2       # every broker's --min-insync-replicas (default: the broker's, 1)
    messages: 30000              # records per session, all producers together
    rate: [5000, 20000]          # open loop: records/s, all producers together (a list is
                                 # swept, one cell each); absent: closed loop
    arrivals: uniform            # open loop: uniform | poisson (seeded exponential gaps)
    duration_s: 30               # open loop, instead of messages: producers run this long
    warmup_s: 5                  # of duration_s, not counted (must be shorter)
    rate_search:                 # instead of rate: find each side's maximum sustainable rate
      start: 5000                # first rate tried (records/s); then ramp x factor, bisect
      factor: 2
      precision: 0.1             # stop when the bracket is this fraction of its lower end
      ceiling: 300000            # never try above (default: the load client's own limit)
      max_backlog_s: 1.0         # kept = on schedule and backlog <= this many seconds of load
    rate_fractions: [0.5, 0.9]   # then sessions at these fractions of each side's maximum
    tries: 4
    scenarios: [split, streaming]
    policies:                    # a scalar or a list each; lists are swept (cross product)
      offset_commit: every_fetch # every_fetch | interval_ms:N | none
      metadata_check: per_request  # per_request | cached
    flush: os                    # broker flush policy: os | every_batch | interval_ms:N
    labels: [A, B]               # >1 label: the same arch run as several sides (A/A runs)
    restart: never               # never | cell | try: fresh cluster (and data) that often
    placement: auto              # auto: pin client and brokers to different CPUs | none
    options:                     # each architecture's and service's own knobs, by its name,
      zk: {session_timeout_ms: 6000}    # validated by its registry entry (harness/
      dsbs: {gossip_preset: lan}        # architectures/, harness/services/); names a run
      zookeeper: {nodes: 1}             # does not measure are checked and ignored
    consumer_timeout_s: 600      # safety net: a consumer still short of records this long after
                                 # it started stops, and what it never saw counts as lost
    fetch_max_wait_ms: 100       # Fetch long-poll
    network: loopback            # loopback | netns (each broker in a network namespace; root)
    rtt_ms: [0, 1, 5]            # netns: round-trip time added between every two hosts, ms
                                 # (a list is swept, one cell each; harness/netdelay)
    warmup_sessions: 2           # unrecorded sessions on every freshly started cluster first
    metadata:                    # makes every session a metadata session (scenario "metadata")
      probe_ms: 20               # how often every broker's Metadata is polled while waiting
      timeout_s: 120             # a step that has not converged by then fails the session
      idle_s: 5                  # after each step: window of idle coordination traffic
      max_topics: 1000           # broker limits of the clusters (--max-topics,
      max_partitions_per_topic: 1000   # --max-partitions-per-topic); at most 10000 each
      cases:                     # each case x size is a cell, run on every try
        - {name: topic-storm, kind: topic-storm, n: [1, 10, 100, 1000], partitions: 1}
        - {name: partition-scale, kind: partition-scale, n: [1, 10, 100, 1000]}
        - {name: group-churn, kind: group-churn, n: [1, 10, 100], partitions: 100}
        - {name: broker-join, kind: broker-join, n: [2, 4, 8]}
    faults:                      # makes every session a fault session (scenario "faults")
      rate: 3000                 # records/s, all producers together, paced
      duration_s: 30             # production phase; faults are scheduled inside it
      drain_s: 60                # then consumers get this long to read what was acknowledged
      probe_ms: 50               # how often every broker's Metadata is polled
      cases:                     # each case is run on every cell and try
        - name: kill-leader
          schedule:              # at_s within [0, duration_s), in order
            - {at_s: 5, action: kill, broker: "leader:0"}   # or controller, coordinator, N
            - {at_s: 15, action: restart, broker: "leader:0"}
    security: none               # none | tls | sasl_ssl, applied to both twins alike (a list
                                 # is swept: one side each, every cluster up at once,
                                 # interleaved); throwaway certificates and users per run
    metrics: false               # true: every broker serves Prometheus metrics, sampled into
    metrics_interval_s: 1.0      # metrics.csv this often during each session (and at its ends)
    cells:
      - table: size_grid         # which paper grid (size_grid, batch_sweep, kb_grid, policy...)
        msg_sizes: [8, 16, 32, 64, 128]   # bytes, or "1KiB", "128KiB"
        batches: [20]            # records per produce request (and per fetch)
        messages: [100, 1000]    # optional: records per session, swept (cell id -m<count>);
                                 # default: the workload's messages

A metadata workload needs no ``cells`` and runs every session on fresh clusters (``restart:
try`` is implied): what one session created would otherwise weigh on the next.

The parsed :class:`Workload` is frozen; :meth:`Workload.as_dict` is what the manifest records.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Set
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from brokers.core.config import FlushPolicy
from brokers.core.errors import UserError
from harness import architectures, services
from harness.architectures.options import Options
from harness.certs import SECURITY_LEVELS
from harness.fault_actions import ACTIONS
from harness.netdelay.control import MAX_RTT_MS
from harness.rate_search import SearchConfig
from workloads.payload import MIN_MSG_SIZE
from workloads.schedule import ARRIVALS

__all__ = [
    "SCENARIOS",
    "CellGroup",
    "MetadataCase",
    "MetadataPlan",
    "Workload",
    "WorkloadError",
    "find_workload",
    "load_workload",
    "parse_workload",
]

# Shipped workload files live next to the load client.
WORKLOAD_DIR = Path(__file__).resolve().parent.parent / "workloads"
SCENARIOS = ("split", "streaming")
# The scenario of every session of a metadata workload (it lists none).
METADATA_SCENARIO = "metadata"
OFFSET_COMMIT_RE = re.compile(r"every_fetch|none|interval_ms:([1-9]\d*)")
METADATA_CHECKS = ("per_request", "cached")
NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")
LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
SIZE_RE = re.compile(r"(\d+)\s*(B|KB|KiB|MB|MiB)?")
# KB and KiB both mean 1024 here: the paper's "1KB .. 128KB" are powers of two.
SIZE_UNITS = {None: 1, "B": 1, "KB": 1024, "KiB": 1024, "MB": 1024**2, "MiB": 1024**2}
# Largest record value accepted (a batch of 20 of these must fit the broker's 64 MiB limit).
MAX_MSG_SIZE = 1024**2


FAULT_TARGET_RE = re.compile(r"leader:(\d+)|controller|coordinator|(\d+)")


class WorkloadError(UserError):
    """A workload file is malformed; the message is one line: ``<file>: <key>: <problem>``."""


@dataclass(frozen=True)
class CellGroup:
    # The paper grid these cells belong to; becomes records.csv's `table` and the cell_id prefix.
    table: str
    # Bytes per record value.
    msg_sizes: tuple[int, ...]
    # Records per produce request (and per fetch).
    batches: tuple[int, ...]
    # Records per session, all producers together, one cell each (cell id suffix -m<count>:
    # the Kafka + Prometheus paper's cases of 100 to 10,000 messages); empty: the workload's
    # `messages`, and no suffix.
    messages: tuple[int, ...] = ()


@dataclass(frozen=True)
class FaultStep:
    # Seconds after the production phase starts.
    at_s: float
    # A harness.fault_actions action name: a broker's (kill, pause, resume, restart,
    # partition, heal) or a service's (stop-zookeeper, start-zookeeper, kill-zookeeper).
    action: str
    # Broker actions: "leader:P" (P's leader when the step runs), "controller",
    # "coordinator" (of the session's probe group, harness/driver/faults.py) or a node id;
    # resolved once per session
    # and remembered, so a later step naming the same target means the same broker.
    broker: str | None = None
    # A service action's server: its index in the service's ensemble (kill-zookeeper ...).
    server: int | None = None

    @property
    def target(self) -> str:
        """The broker as written, or the service (``zookeeper``, ``zookeeper:1``)."""
        if self.broker is not None:
            return self.broker
        service = ACTIONS[self.action].service
        return f"{service}" if self.server is None else f"{service}:{self.server}"


@dataclass(frozen=True)
class FaultCase:
    # [a-z0-9_-]+; names the case in faults.csv and the figures.
    name: str
    steps: tuple[FaultStep, ...]

    @property
    def services(self) -> frozenset[str]:
        """The services the case acts on (ZooKeeper): it runs only on architectures that have
        them, and has no counterpart on the others."""
        return frozenset(service for s in self.steps if (service := ACTIONS[s.action].service))


@dataclass(frozen=True)
class FaultPlan:
    # Target production rate, records/s, all producers together (paced, so a fault shows as
    # a dip against a flat line, and the machine keeps CPU for timers and detection).
    rate: float
    # Length of the production phase, in which the schedule runs.
    duration_s: float
    # After production, how long consumers may take to read what was acknowledged.
    drain_s: float = field(default=60.0, kw_only=True)
    # Every broker's Metadata is polled this often (detection and rejoin resolution).
    probe_ms: int = field(default=50, kw_only=True)
    # Width of the timeline's buckets.
    bucket_ms: int = field(default=100, kw_only=True)
    cases: tuple[FaultCase, ...]


# Metadata scenarios (harness/driver/metadata.py): what each kind's n counts.
METADATA_KINDS = {
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
    # A METADATA_KINDS key: what the session does.
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


# What one load-client process schedules on time against the null sink on the 2-core
# development VM (`python -m harness.perf --open-loop`: 325,000 records/s; README "Open loop"),
# rounded down: a search never asks for more, and a target above it measures the client.
CLIENT_CEILING_RPS = 300_000.0


@dataclass(frozen=True)
class RateSearchPlan:
    # First rate tried, records/s, all producers together; should be comfortably kept.
    start: float
    # Ramp: each kept rate is multiplied by this until one fails; then bisection.
    factor: float = field(default=2.0, kw_only=True)
    # The search ends when the bracket is at most this fraction of its lower end wide.
    precision: float = field(default=0.1, kw_only=True)
    # Never tried above this (a rate the load client cannot schedule measures the client).
    ceiling: float = field(default=CLIENT_CEILING_RPS, kw_only=True)
    # A rate is kept when the producers kept their schedule, nothing was lost, and the backlog
    # (acknowledged, not yet consumed) when production ended was at most this many seconds of
    # the rate: a bounded backlog, as OpenMessaging Benchmark's rate search asks.
    max_backlog_s: float = field(default=1.0, kw_only=True)


@dataclass(frozen=True)
class Workload:
    # Short name; part of every run id.
    name: str
    # The grids to run: each group's msg_sizes x batches.
    cells: tuple[CellGroup, ...]
    # Free text for humans.
    description: str = ""
    # Broker processes in the cluster.
    brokers: int = 3
    # Partitions of each session's topic (the paper: one per broker; a file that names no
    # partitions gets one per broker, whatever its broker count).
    partitions: int = 3
    # Concurrent producer clients (the paper's "producer group"), each with its own producer id.
    producers: int = 3
    # Concurrent consumer clients in one group; partitions are split among them statically.
    consumers: int = 3
    # sync = one request in flight per producer (the paper's clients); pipelined = `window`.
    producer_mode: str = "sync"
    # Requests in flight per producer in pipelined mode (1 in sync mode; a pipelined workload
    # that names no window gets PIPELINED_WINDOW).
    window: int = 1
    # split = producer i sends to its share of the partitions; all = every producer round-robins
    # over every partition (starting at a different one).
    producer_partitions: str = "split"
    # Replicas of each session's topic (1, the paper's setting: no replication); above 1 only
    # on architectures that replicate (docs/replication.md), at most `brokers`.
    replication_factor: int = 1
    # Produce acks: 1 (the paper's: the leader wrote it), -1 (every in-sync replica has it),
    # 0 (no answer).
    acks: int = 1
    # acks=-1 needs this many in-sync replicas (every broker's --min-insync-replicas; None: the
    # broker default, 1). At most replication_factor.
    min_insync_replicas: int | None = None
    # Records per session, all producers together (the paper: 30,000).
    messages: int = 30_000
    # Open loop (workloads/schedule.py): target records/s, all producers together, split evenly
    # among them; several values are swept, each a cell of its own. Empty: closed loop (the
    # paper's clients, as fast as acknowledgements come).
    rate: tuple[float, ...] = ()
    # Open loop: "uniform" (evenly spaced records) or "poisson" (exponential gaps, seeded).
    arrivals: str = "uniform"
    # Time-bounded sessions (open loop, streaming only): producers run this long instead of
    # sending `messages` records.
    duration_s: float | None = None
    # The first seconds of duration_s, left out of throughput and latency (warm-up).
    warmup_s: float = 0.0
    # Open loop without a fixed rate: search each side's maximum sustainable rate per cell and
    # try (each step a time-bounded session), recorded in rate_search.csv and max_rate.csv.
    rate_search: RateSearchPlan | None = None
    # With rate_search: afterwards, sessions at these fractions of each side's maximum (the
    # mean over tries), one cell each (cell id suffix -f<percent>).
    rate_fractions: tuple[float, ...] = ()
    # Sessions per cell and scenario (the paper: 4).
    tries: int = 4
    # split = produce everything, then consume it (each phase timed alone); streaming = both at
    # once.
    scenarios: tuple[str, ...] = SCENARIOS
    # docs/architecture.md, fairness rule 2; swept when more than one value is given (one run
    # log per combination).
    offset_commit: tuple[str, ...] = ("every_fetch",)
    metadata_check: tuple[str, ...] = ("per_request",)
    # Storage flush policy of every broker.
    flush: str = "os"
    # Sides of the run. One label = one run log; several (A/A) = the same architecture measured
    # as if it were several, tries interleaved, one run log per label.
    labels: tuple[str, ...] = ("",)
    # When to start a fresh cluster (with empty data): never (only when metadata_check changes),
    # per cell, or per try (the KiB grid writes gigabytes per session).
    restart: str = "never"
    # auto: pin the load client and the brokers (and ZooKeeper) to different CPUs when there
    # are two or more (docs/architecture.md, "Measuring on a small VM"); none: leave it to the
    # scheduler.
    placement: str = "auto"
    # Each architecture's and service's own options, by its name, as the file gives them
    # (validated by the entry's Options class when the file is loaded; the cluster parses them
    # again for the architecture it starts). Opaque to everything but the entries.
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Safety net, not a measurement knob: a consumer still short of its records this long after
    # it started stops, and what it never saw counts as lost. Generous because a batch-1 session
    # under the paper's policies takes minutes on a small VM (a commit per record).
    consumer_timeout_s: float = 600.0
    # Fetch long-poll: how long a broker may hold a fetch with no data.
    fetch_max_wait_ms: int = 100
    # loopback: every process on 127.0.0.1. netns: each broker in its own network namespace
    # on a bridge (harness/netns.py; needs root), which partition faults require.
    network: str = "loopback"
    # netns only: round-trip times (ms) swept, one cell each (cell id suffix -rtt<ms>): a delay
    # line (harness/netdelay) adds this between every two brokers and between each broker and
    # the root namespace's load client and ZooKeeper, as separate machines would. Empty: no
    # delay line.
    rtt_ms: tuple[float, ...] = ()
    # Sessions run and thrown away on every cluster right after it starts (each a copy of the
    # first session the cluster will measure), so no measured session pays for a cold start:
    # ZooKeeper's JVM compiles its hot paths during its first ~10,000 requests (its CPU per
    # request falls threefold meanwhile), and the brokers fill their caches and pools.
    warmup_sessions: int = 0
    # Fault injection: every session runs the cases' schedules under paced streaming load
    # (scenario "faults") instead of the paper's split/streaming sessions.
    faults: FaultPlan | None = None
    # Metadata scenarios: every session runs one case at one size on fresh clusters (scenario
    # "metadata") instead of producing and consuming.
    metadata: MetadataPlan | None = None
    # Listener security of every broker, the same on every architecture (docs/architecture.md,
    # fairness rule 2): none (PLAINTEXT), tls (SSL), sasl_ssl (SASL_SSL, SCRAM-SHA-512).
    # Several values are swept: one side each, all their clusters up at once, sessions
    # interleaved, so the cost of security is measured under the same conditions.
    security: tuple[str, ...] = ("none",)
    # Every broker serves Prometheus metrics (--metrics) and the driver samples them into
    # metrics.csv: before each session, every metrics_interval_s during it, and after it.
    # Off by default: metering adds a clock read per request on the brokers.
    metrics: bool = False
    metrics_interval_s: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (tuples become lists) for the manifest."""
        return asdict(self)

    @property
    def policy_combinations(self) -> list[tuple[str, str]]:
        """(offset_commit, metadata_check) pairs, metadata_check outermost (restart order)."""
        return [(oc, mc) for mc in self.metadata_check for oc in self.offset_commit]


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------

# The dataclasses above are the one definition of what a file may say and of every default:
# the key lists and the defaults below are read off their fields.
# Requests in flight per producer when a pipelined workload names no window.
PIPELINED_WINDOW = 8


def _keys(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def _required(cls: type) -> tuple[str, ...]:
    """Fields without a default, in declaration order: the keys a file must give."""
    return tuple(f.name for f in fields(cls)
                 if f.default is MISSING and f.default_factory is MISSING)


def _defaults(cls: type) -> dict[str, Any]:
    return {f.name: f.default for f in fields(cls) if f.default is not MISSING}


# Workload fields a file gives under `policies:` rather than at the top level.
_POLICY_KEYS = frozenset({"offset_commit", "metadata_check"})
_TOP_KEYS = _keys(Workload) - _POLICY_KEYS | {"policies"}
_FAULT_KEYS = _keys(FaultPlan)
_SEARCH_KEYS = _keys(RateSearchPlan)
# A file calls a case's steps its schedule.
_CASE_KEYS = _keys(FaultCase) - {"steps"} | {"schedule"}
_STEP_KEYS = _keys(FaultStep)
_CELL_KEYS = _keys(CellGroup)
_WORKLOAD_DEFAULTS = _defaults(Workload)
_FAULT_DEFAULTS = _defaults(FaultPlan)
_METADATA_KEYS = _keys(MetadataPlan)
_METADATA_DEFAULTS = _defaults(MetadataPlan)
# A file calls a case's sizes n.
_METADATA_CASE_KEYS = _keys(MetadataCase) - {"sizes"} | {"n"}


def _given(data: Mapping[str, Any], key: str,
           defaults: Mapping[str, Any] = _WORKLOAD_DEFAULTS) -> Any:
    """The file's value for ``key``, else the dataclass default (a tuple default as a list,
    the form a file gives it in)."""
    if key in data:
        return data[key]
    default = defaults[key]
    return list(default) if isinstance(default, tuple) else default


class _Ctx:
    """Carries the file name so every error says where it is."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, problem: str) -> WorkloadError:
        where = f"{self.source}: {key}: " if key else f"{self.source}: "
        return WorkloadError(where + " ".join(problem.split()))

    def check_keys(self, mapping: Mapping[str, Any], allowed: Set[str], where: str) -> None:
        for key in mapping:
            if not isinstance(key, str):
                raise self.fail(where, f"keys must be strings, got {key!r}")
            if key not in allowed:
                hint = difflib.get_close_matches(key, sorted(allowed), n=1)
                tip = f" (did you mean {hint[0]!r}?)" if hint else ""
                full = f"{where}.{key}" if where else key
                raise self.fail(full, f"unknown key{tip}; known: {', '.join(sorted(allowed))}")

    def integer(self, key: str, value: Any, lo: int, hi: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < lo or (
            hi is not None and value > hi
        ):
            bound = f">= {lo}" if hi is None else f"between {lo} and {hi}"
            raise self.fail(key, f"must be an integer {bound}, got {value!r}")
        return value

    def number(self, key: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise self.fail(key, f"must be a positive number, got {value!r}")
        return float(value)

    def choice(self, key: str, value: Any, choices: tuple[str, ...]) -> str:
        if value not in choices:
            raise self.fail(key, f"must be one of {', '.join(choices)}, got {value!r}")
        return str(value)

    def string_list(self, key: str, value: Any) -> list[Any]:
        """A scalar or a non-empty list without repeats, as a list."""
        items = value if isinstance(value, list) else [value]
        if not items:
            raise self.fail(key, "must not be empty")
        seen: set[str] = set()
        for item in items:
            if repr(item) in seen:
                raise self.fail(key, f"lists {item!r} twice")
            seen.add(repr(item))
        return items


def parse_size(text: Any) -> int | None:
    """8, "8", "8B", "1KiB", "128KB" -> bytes; None when unparsable."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int):
        return text
    if not isinstance(text, str):
        return None
    m = SIZE_RE.fullmatch(text.strip())
    if not m:
        return None
    return int(m.group(1)) * SIZE_UNITS[m.group(2)]


def _cells(ctx: _Ctx, raw: Any, data: Mapping[str, Any]) -> tuple[CellGroup, ...]:
    if not isinstance(raw, list) or not raw:
        raise ctx.fail("cells", "must be a non-empty list of {table, msg_sizes, batches}")
    groups: list[CellGroup] = []
    ids: set[str] = set()
    for i, item in enumerate(raw):
        where = f"cells[{i}]"
        if not isinstance(item, dict):
            raise ctx.fail(where, f"must be a mapping with table, msg_sizes, batches, got {item!r}")
        ctx.check_keys(item, _CELL_KEYS, where)
        for key in sorted(_required(CellGroup)):
            if key not in item:
                raise ctx.fail(f"{where}.{key}", "is missing")
        table = item["table"]
        if not isinstance(table, str) or not NAME_RE.fullmatch(table):
            raise ctx.fail(f"{where}.table", f"must match [a-z0-9_-]+, got {table!r}")
        sizes = []
        for s in ctx.string_list(f"{where}.msg_sizes", item["msg_sizes"]):
            n = parse_size(s)
            if n is None or not MIN_MSG_SIZE <= n <= MAX_MSG_SIZE:
                raise ctx.fail(
                    f"{where}.msg_sizes",
                    f"{s!r} is not a size between {MIN_MSG_SIZE} B and 1 MiB "
                    "(bytes, or a string such as '4KiB')",
                )
            sizes.append(n)
        batches = [
            ctx.integer(f"{where}.batches", b, 1, 10_000)
            for b in ctx.string_list(f"{where}.batches", item["batches"])
        ]
        counts = _cell_messages(ctx, f"{where}.messages", item, data)
        for size in sizes:
            for batch in batches:
                cell_id = f"{table}-{size}B-b{batch}"
                if cell_id in ids:
                    raise ctx.fail(where, f"cell {cell_id} is listed twice")
                ids.add(cell_id)
        groups.append(CellGroup(table, tuple(sizes), tuple(batches), counts))
    return tuple(groups)


def _cell_messages(ctx: _Ctx, where: str, item: Mapping[str, Any], data: Mapping[str, Any]
                   ) -> tuple[int, ...]:
    """A cell group's own message counts (each a cell), checked like the workload's."""
    if "messages" not in item:
        return ()
    for key, why in (("duration_s", "time-bounded sessions send for duration_s"),
                     ("faults", "fault sessions are paced by faults.rate"),
                     ("rate_search", "rate searches run time-bounded sessions")):
        if data.get(key) is not None:
            raise ctx.fail(where, f"a cell group's messages do not apply here: {why}")
    producers = _given(data, "producers")
    counts = [ctx.integer(where, n, 1, 100_000_000)
              for n in ctx.string_list(where, item["messages"])]
    for n in counts:
        if isinstance(producers, int) and n < producers:
            raise ctx.fail(where, f"{n} messages cannot feed {producers} producers")
    return tuple(counts)


def _policies(ctx: _Ctx, raw: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ctx.fail("policies", "must be a mapping with offset_commit and metadata_check")
    ctx.check_keys(raw, _POLICY_KEYS, "policies")
    commits = []
    for v in ctx.string_list("policies.offset_commit", _given(raw, "offset_commit")):
        if not isinstance(v, str) or not OFFSET_COMMIT_RE.fullmatch(v.strip()):
            raise ctx.fail(
                "policies.offset_commit",
                f"must be every_fetch, none or interval_ms:N (N > 0), got {v!r}",
            )
        commits.append(v.strip())
    checks = [
        ctx.choice("policies.metadata_check", v, METADATA_CHECKS)
        for v in ctx.string_list("policies.metadata_check", _given(raw, "metadata_check"))
    ]
    return tuple(commits), tuple(checks)


def _fault_step(ctx: _Ctx, where: str, raw: Any, duration_s: float, brokers: int,
                partitions: int, servers: Mapping[str, int], network: str) -> FaultStep:
    if not isinstance(raw, dict):
        raise ctx.fail(where, f"must be a mapping with at_s and action, got {raw!r}")
    ctx.check_keys(raw, _STEP_KEYS, where)
    for key in _required(FaultStep):
        if key not in raw:
            raise ctx.fail(f"{where}.{key}", "is missing")
    at = raw["at_s"]
    if isinstance(at, bool) or not isinstance(at, int | float) or not 0 <= at < duration_s:
        raise ctx.fail(f"{where}.at_s", f"must be a time within [0, {duration_s:g}) s (the "
                       f"production phase), got {at!r}")
    action = raw["action"]
    if action not in ACTIONS:
        raise ctx.fail(f"{where}.action", f"unknown fault {action!r}; choose one of "
                       f"{', '.join(ACTIONS)}")
    a = ACTIONS[action]
    broker, server = raw.get("broker"), raw.get("server")
    if a.target == "broker":
        if broker is None:
            raise ctx.fail(f"{where}.broker", f"{action} needs a broker: leader:P, controller, "
                           "coordinator or a node id")
        text = str(broker)
        m = FAULT_TARGET_RE.fullmatch(text)
        if isinstance(broker, bool) or m is None:
            raise ctx.fail(f"{where}.broker", f"must be leader:P, controller, coordinator or "
                           f"a node id, got {broker!r}")
        if m.group(1) is not None and int(m.group(1)) >= partitions:
            raise ctx.fail(f"{where}.broker", f"{text}: the topic has partitions 0.."
                           f"{partitions - 1}")
        if m.group(2) is not None and int(m.group(2)) >= brokers:
            raise ctx.fail(f"{where}.broker", f"no broker {text} (brokers 0..{brokers - 1})")
        if server is not None:
            raise ctx.fail(f"{where}.server", f"{action} takes a broker, not a server")
        if a.needs_netns and network != "netns":
            raise ctx.fail(f"{where}.action", f"{action} needs network: netns (brokers in "
                           "network namespaces)")
        return FaultStep(float(at), action, broker=text)
    assert a.service is not None
    if broker is not None:
        raise ctx.fail(f"{where}.broker", f"{action} acts on {a.service}, not on a broker")
    if a.server == "required" and server is None:
        raise ctx.fail(f"{where}.server", f"{action} needs the server index")
    if a.server == "no" and server is not None:
        raise ctx.fail(f"{where}.server", f"{action} acts on every {a.service} server")
    if server is not None:
        ctx.integer(f"{where}.server", server, 0, servers[a.service] - 1)
    return FaultStep(float(at), action, server=server)


def _fault_case(ctx: _Ctx, where: str, raw: Any, **limits: Any) -> FaultCase:
    if not isinstance(raw, dict):
        raise ctx.fail(where, f"must be a mapping with name and schedule, got {raw!r}")
    ctx.check_keys(raw, _CASE_KEYS, where)
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ctx.fail(f"{where}.name", f"must match [a-z0-9][a-z0-9_-]*, got {name!r}")
    schedule = raw.get("schedule")
    if not isinstance(schedule, list) or not schedule:
        raise ctx.fail(f"{where}.schedule", "must be a non-empty list of steps")
    steps = [_fault_step(ctx, f"{where}.schedule[{i}]", s, **limits)
             for i, s in enumerate(schedule)]
    if [s.at_s for s in steps] != sorted(s.at_s for s in steps):
        raise ctx.fail(f"{where}.schedule", "steps must be in time order")
    # Every undoing step needs its fault first (resume what was paused, heal what was cut off).
    open_faults: dict[str, str] = {}
    for i, s in enumerate(steps):
        a = ACTIONS[s.action]
        key = a.service if a.service is not None else s.target
        if a.undo is not None:
            open_faults[key] = s.action
        elif s.action != "restart" or key in open_faults:
            opener = open_faults.pop(key, None)
            if opener is None or ACTIONS[opener].undo != s.action:
                raise ctx.fail(f"{where}.schedule[{i}]", f"{s.action} of {s.target} without "
                               "the fault it undoes before it")
    if not any(ACTIONS[s.action].undo or s.action == "restart" for s in steps):
        openers = [a.name for a in ACTIONS.values() if a.undo] + ["restart"]
        raise ctx.fail(f"{where}.schedule", f"injects no fault ({', '.join(openers)})")
    return FaultCase(name, tuple(steps))


def _faults(ctx: _Ctx, raw: Any, **limits: Any) -> FaultPlan:
    if not isinstance(raw, dict):
        raise ctx.fail("faults", "must be a mapping with rate, duration_s and cases")
    ctx.check_keys(raw, _FAULT_KEYS, "faults")
    for key in _required(FaultPlan):
        if key not in raw:
            raise ctx.fail(f"faults.{key}", "is missing")
    rate = ctx.number("faults.rate", raw["rate"])
    duration = ctx.number("faults.duration_s", raw["duration_s"])
    drain = ctx.number("faults.drain_s", _given(raw, "drain_s", _FAULT_DEFAULTS))
    probe = ctx.integer("faults.probe_ms", _given(raw, "probe_ms", _FAULT_DEFAULTS), 5, 10_000)
    bucket = ctx.integer("faults.bucket_ms", _given(raw, "bucket_ms", _FAULT_DEFAULTS), 10,
                         10_000)
    cases = raw["cases"]
    if not isinstance(cases, list) or not cases:
        raise ctx.fail("faults.cases", "must be a non-empty list of {name, schedule}")
    parsed = [_fault_case(ctx, f"faults.cases[{i}]", c, duration_s=duration, **limits)
              for i, c in enumerate(cases)]
    names = [c.name for c in parsed]
    for n in names:
        if names.count(n) > 1:
            raise ctx.fail("faults.cases", f"case {n!r} is listed twice")
    return FaultPlan(rate, duration, drain_s=drain, probe_ms=probe, bucket_ms=bucket,
                     cases=tuple(parsed))


def _metadata_case(ctx: _Ctx, where: str, raw: Any, plan: dict[str, Any]) -> MetadataCase:
    if not isinstance(raw, dict):
        raise ctx.fail(where, f"must be a mapping with name, kind and n, got {raw!r}")
    ctx.check_keys(raw, _METADATA_CASE_KEYS, where)
    for key in ("name", "kind", "n"):
        if key not in raw:
            raise ctx.fail(f"{where}.{key}", "is missing")
    name = raw["name"]
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ctx.fail(f"{where}.name", f"must match [a-z0-9][a-z0-9_-]*, got {name!r}")
    kind = ctx.choice(f"{where}.kind", raw["kind"], tuple(METADATA_KINDS))
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


def _metadata(ctx: _Ctx, raw: Any) -> MetadataPlan:
    if not isinstance(raw, dict):
        raise ctx.fail("metadata", "must be a mapping with cases (and probe_ms, timeout_s, ...)")
    ctx.check_keys(raw, _METADATA_KEYS, "metadata")
    if "cases" not in raw:
        raise ctx.fail("metadata.cases", "is missing")
    plan: dict[str, Any] = {
        "probe_ms": ctx.integer("metadata.probe_ms",
                                _given(raw, "probe_ms", _METADATA_DEFAULTS), 1, 10_000),
        "timeout_s": ctx.number("metadata.timeout_s",
                                _given(raw, "timeout_s", _METADATA_DEFAULTS)),
        "max_topics": ctx.integer("metadata.max_topics",
                                  _given(raw, "max_topics", _METADATA_DEFAULTS), 1,
                                  MACHINE_MAX_TOPICS),
        "max_partitions_per_topic": ctx.integer(
            "metadata.max_partitions_per_topic",
            _given(raw, "max_partitions_per_topic", _METADATA_DEFAULTS), 1,
            MACHINE_MAX_PARTITIONS),
    }
    if plan["timeout_s"] > 3600:
        raise ctx.fail("metadata.timeout_s", f"must be at most 3600 s, got {plan['timeout_s']:g}")
    idle = _given(raw, "idle_s", _METADATA_DEFAULTS)
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


def parse_workload(data: Any, source: str = "<workload>") -> Workload:
    """Validate a parsed YAML document and fill in the defaults (the dataclasses' own).

    Keys are checked in a fixed order, so a file with several mistakes always names the same
    one first."""
    ctx = _Ctx(source)
    _check_document(ctx, data)
    kw: dict[str, Any] = {"name": _name(ctx, data["name"]),
                          "description": _description(ctx, _given(data, "description"))}
    kw |= _load(ctx, data)
    kw["scenarios"] = _scenarios(ctx, data)
    kw |= _open_loop(ctx, data, kw["scenarios"])
    kw["offset_commit"], kw["metadata_check"] = _policies(ctx, data.get("policies"))
    kw["flush"] = _flush(ctx, _given(data, "flush"))
    kw["labels"] = _labels(ctx, _given(data, "labels"))
    kw |= _cluster(ctx, data)
    kw["options"] = _options(ctx, data.get("options"))
    kw["rtt_ms"] = _rtt(ctx, data, kw["network"])
    kw |= _security_and_metrics(ctx, data)
    if data.get("faults") is not None:
        servers = {name: services.get(name).size(
            services.get(name).options.parse(kw["options"].get(name), name))
            for name in services.names()}
        kw["faults"] = _faults(ctx, data["faults"], brokers=kw["brokers"],
                               partitions=kw["partitions"], servers=servers,
                               network=kw["network"])
    if data.get("metadata") is not None:
        kw["metadata"] = _metadata(ctx, data["metadata"])
        if "cells" not in data:
            return Workload(cells=(), **kw)
    return Workload(cells=_cells(ctx, data["cells"], data), **kw)


def _check_document(ctx: _Ctx, data: Any) -> None:
    if not isinstance(data, dict):
        raise ctx.fail("", "must be a YAML mapping of keys (name, cells, ...)")
    for key in data:
        moved = _legacy_option(key)
        if moved is not None:
            raise ctx.fail(key, f"is now an option of {moved[0]}: write options: "
                           f"{{{moved[0]}: {{{moved[1]}: {data[key]!r}}}}}")
    ctx.check_keys(data, _TOP_KEYS, "")
    for key in _required(Workload):
        # A metadata workload has no grid of message sizes.
        if key not in data and not (key == "cells" and data.get("metadata") is not None):
            raise ctx.fail(key, "is missing")
    if data.get("faults") is not None and data.get("metadata") is not None:
        raise ctx.fail("metadata", "a workload runs fault sessions or metadata sessions, "
                       "not both")


def _name(ctx: _Ctx, name: Any) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ctx.fail("name", f"must match [a-z0-9][a-z0-9_-]*, got {name!r}")
    return name


def _description(ctx: _Ctx, description: Any) -> str:
    if not isinstance(description, str):
        raise ctx.fail("description", "must be text")
    return description.strip()


def _load(ctx: _Ctx, data: Mapping[str, Any]) -> dict[str, Any]:
    """Who makes the load and how much: brokers, partitions, clients, messages, tries."""
    brokers = ctx.integer("brokers", _given(data, "brokers"), 1, 64)
    # One partition per broker unless the file says otherwise.
    partitions = ctx.integer("partitions", data.get("partitions", brokers), 1, 1024)
    producers = ctx.integer("producers", _given(data, "producers"), 1, 256)
    consumers = ctx.integer("consumers", _given(data, "consumers"), 1, 256)
    if consumers > partitions:
        raise ctx.fail(
            "consumers",
            f"{consumers} consumers but {partitions} partitions: a consumer would own none",
        )
    mode = ctx.choice("producer_mode", _given(data, "producer_mode"), ("sync", "pipelined"))
    if "window" in data and mode != "pipelined":
        raise ctx.fail("window", "only applies to producer_mode: pipelined")
    window = ctx.integer("window", data.get("window", PIPELINED_WINDOW if mode == "pipelined"
                                            else _WORKLOAD_DEFAULTS["window"]), 1, 1024)
    spread = ctx.choice("producer_partitions", _given(data, "producer_partitions"),
                        ("split", "all"))
    messages = ctx.integer("messages", _given(data, "messages"), 1, 100_000_000)
    if messages < producers:
        raise ctx.fail("messages", f"{messages} messages cannot feed {producers} producers")
    tries = ctx.integer("tries", _given(data, "tries"), 1, 1000)
    replication = ctx.integer("replication_factor", _given(data, "replication_factor"), 1,
                              brokers)
    acks = ctx.integer("acks", _given(data, "acks"), -1, 1)
    min_isr = _given(data, "min_insync_replicas")
    if min_isr is not None:
        min_isr = ctx.integer("min_insync_replicas", min_isr, 1, replication)
    return {"brokers": brokers, "partitions": partitions, "producers": producers,
            "consumers": consumers, "producer_mode": mode, "window": window,
            "producer_partitions": spread, "messages": messages, "tries": tries,
            "replication_factor": replication, "acks": acks, "min_insync_replicas": min_isr}


def _scenarios(ctx: _Ctx, data: Mapping[str, Any]) -> tuple[str, ...]:
    if data.get("metadata") is not None:
        if data.get("scenarios", ["metadata"]) not in ("metadata", ["metadata"]):
            raise ctx.fail("scenarios", "a workload with metadata runs metadata sessions only "
                           "(scenarios: [metadata], or leave it out)")
        return (METADATA_SCENARIO,)
    if data.get("faults") is not None:
        if data.get("scenarios", ["faults"]) not in ("faults", ["faults"]):
            raise ctx.fail("scenarios", "a workload with faults runs fault sessions only "
                           "(scenarios: [faults], or leave it out)")
        return ("faults",)
    return tuple(ctx.choice("scenarios", s, SCENARIOS)
                 for s in ctx.string_list("scenarios", _given(data, "scenarios")))


def _open_loop(ctx: _Ctx, data: Mapping[str, Any], scenarios: tuple[str, ...]
               ) -> dict[str, Any]:
    """rate, arrivals, duration_s, warmup_s, rate_search, rate_fractions: open-loop and
    time-bounded sessions."""
    out: dict[str, Any] = {}
    if "rate" in data:
        if data.get("faults") is not None:
            raise ctx.fail("rate", "a fault workload paces its load with faults.rate")
        if "rate_search" in data:
            raise ctx.fail("rate", "give rate or rate_search, not both")
        out["rate"] = tuple(ctx.number("rate", r) for r in ctx.string_list("rate", data["rate"]))
    open_loop = "rate" in data or "rate_search" in data
    for key in ("arrivals", "duration_s"):
        if key in data and not open_loop:
            raise ctx.fail(key, "only applies to open-loop load (give a rate or rate_search)")
    out |= _rate_search(ctx, data)
    if "arrivals" in data:
        out["arrivals"] = ctx.choice("arrivals", data["arrivals"], ARRIVALS)
    if "duration_s" in data:
        if "messages" in data:
            raise ctx.fail("duration_s", "give messages or duration_s, not both")
        if scenarios != ("streaming",):
            raise ctx.fail("duration_s", "time-bounded sessions are streaming only "
                           "(scenarios: [streaming])")
        out["duration_s"] = ctx.number("duration_s", data["duration_s"])
    if "warmup_s" in data:
        if "duration_s" not in data:
            raise ctx.fail("warmup_s", "only applies to time-bounded sessions (duration_s)")
        warmup = data["warmup_s"]
        if isinstance(warmup, bool) or not isinstance(warmup, int | float) or warmup < 0:
            raise ctx.fail("warmup_s", f"must be a number >= 0, got {warmup!r}")
        if warmup >= out["duration_s"]:
            raise ctx.fail("warmup_s", f"must be shorter than duration_s "
                           f"({out['duration_s']:g}), got {warmup!r}")
        out["warmup_s"] = float(warmup)
    return out


def _rate_search(ctx: _Ctx, data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    raw = data.get("rate_search")
    if "rate_fractions" in data and raw is None:
        raise ctx.fail("rate_fractions", "fractions of what? give rate_search too")
    if raw is None:
        return out
    if not isinstance(raw, dict) or "start" not in raw:
        raise ctx.fail("rate_search", "must be a mapping with at least start (records/s)")
    ctx.check_keys(raw, _SEARCH_KEYS, "rate_search")
    if "duration_s" not in data:
        raise ctx.fail("rate_search", "each step is a time-bounded session: give duration_s")
    if data.get("restart", "never") != "never":
        raise ctx.fail("rate_search", "searches run on one cluster per side: restart: never")
    if data.get("faults") is not None:
        raise ctx.fail("rate_search", "a fault workload paces its load with faults.rate")
    nums = {k: ctx.number(f"rate_search.{k}", v) for k, v in raw.items()}
    try:
        # The search's own checks (start > 0, factor > 1, ...), named after the file's key.
        SearchConfig(start=nums["start"], factor=nums.get("factor", 2.0),
                     precision=nums.get("precision", 0.1),
                     ceiling=nums.get("ceiling", CLIENT_CEILING_RPS))
    except UserError as exc:
        raise ctx.fail("rate_search", str(exc)) from None
    if nums.get("max_backlog_s", 1.0) <= 0:
        raise ctx.fail("rate_search.max_backlog_s", "must be > 0")
    out["rate_search"] = RateSearchPlan(**nums)
    if "rate_fractions" in data:
        fractions = [ctx.number("rate_fractions", f)
                     for f in ctx.string_list("rate_fractions", data["rate_fractions"])]
        if any(f > 2 for f in fractions) or len(set(fractions)) != len(fractions):
            raise ctx.fail("rate_fractions", "must be distinct fractions in (0, 2] of the "
                           "maximum sustainable rate (1 = the maximum)")
        out["rate_fractions"] = tuple(fractions)
    return out


def _rtt(ctx: _Ctx, data: Mapping[str, Any], network: str) -> tuple[float, ...]:
    if "rtt_ms" not in data:
        return ()
    values = []
    for v in ctx.string_list("rtt_ms", data["rtt_ms"]):
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= MAX_RTT_MS:
            raise ctx.fail("rtt_ms", f"must be round-trip times in [0, {MAX_RTT_MS:g}] ms, "
                           f"got {v!r}")
        values.append(float(v))
    if network != "netns":
        raise ctx.fail("rtt_ms", "the delay is put between network namespaces: give "
                       "network: netns (root)")
    for key in ("faults", "metadata", "rate_search"):
        if data.get(key) is not None:
            raise ctx.fail("rtt_ms", f"applies to the paper's sessions and to fixed rates, "
                           f"not to {key} workloads")
    return tuple(values)


def _flush(ctx: _Ctx, flush: Any) -> str:
    try:
        FlushPolicy.parse(flush if isinstance(flush, str) else repr(flush))
    except UserError as exc:
        raise ctx.fail("flush", str(exc)) from None
    return flush


def _labels(ctx: _Ctx, raw: Any) -> tuple[str, ...]:
    labels = ctx.string_list("labels", raw)
    for label in labels:
        if not isinstance(label, str) or not (label == "" or LABEL_RE.fullmatch(label)):
            raise ctx.fail("labels", f"labels must be short words like A or B, got {label!r}")
    return tuple(labels)


def _cluster(ctx: _Ctx, data: Mapping[str, Any]) -> dict[str, Any]:
    """How the cluster is run: restarts, placement, ZooKeeper, gossip, timeouts, network."""
    restart = ctx.choice("restart", _given(data, "restart"), ("never", "cell", "try"))
    if data.get("metadata") is not None:
        if "restart" in data and restart != "try":
            raise ctx.fail("restart", "metadata sessions each need fresh clusters (what one "
                           "created would weigh on the next): restart: try, or leave it out")
        restart = "try"
    placement = ctx.choice("placement", _given(data, "placement"), ("auto", "none"))
    timeout = ctx.number("consumer_timeout_s", _given(data, "consumer_timeout_s"))
    max_wait = ctx.integer("fetch_max_wait_ms", _given(data, "fetch_max_wait_ms"), 0, 30_000)
    network = ctx.choice("network", _given(data, "network"), ("loopback", "netns"))
    warmup = ctx.integer("warmup_sessions", _given(data, "warmup_sessions"), 0, 100)
    return {"restart": restart, "placement": placement, "consumer_timeout_s": timeout,
            "fetch_max_wait_ms": max_wait, "network": network, "warmup_sessions": warmup}


def _options(ctx: _Ctx, raw: Any) -> dict[str, dict[str, Any]]:
    """The ``options`` block: every name an architecture or a service, every block valid for
    its entry (checked now, whichever architectures a run will measure)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ctx.fail("options", "must be a mapping of architecture or service names to "
                       "their options")
    out: dict[str, dict[str, Any]] = {}
    for name, block in raw.items():
        if block is not None and not isinstance(block, dict):
            raise ctx.fail(f"options.{name}", "must be a mapping of option names to values")
        if name in architectures.names():
            options: type[Options] = architectures.get(name).options
        elif name in services.names():
            options = services.get(name).options
        else:
            raise ctx.fail(f"options.{name}", "names no architecture or service (choose "
                           f"{', '.join((*architectures.names(), *services.names()))})")
        try:
            options.parse(block, f"options.{name}")
        except UserError as exc:
            raise ctx.fail("", str(exc)) from None
        out[str(name)] = dict(block or {})
    return out


def _legacy_option(key: str) -> tuple[str, str] | None:
    """A top-level key that an architecture or a service now has as an option: (its name,
    the option), else None."""
    legacy = [(a.name, a.legacy_keys) for a in architectures.entries()]
    legacy += [(n, services.get(n).legacy_keys) for n in services.names()]
    for name, keys in legacy:
        if key in keys:
            return name, keys[key]
    return None


def _security_and_metrics(ctx: _Ctx, data: Mapping[str, Any]) -> dict[str, Any]:
    """security (swept like a policy) and the metrics sampling."""
    levels = tuple(ctx.choice("security", v, tuple(SECURITY_LEVELS))
                   for v in ctx.string_list("security", _given(data, "security")))
    if levels != ("none",):
        for key, sessions in (("faults", "fault"), ("metadata", "metadata")):
            if data.get(key) is not None:
                raise ctx.fail("security", f"{sessions} sessions connect in plaintext; "
                               "security applies to split and streaming sessions only")
    metrics = _given(data, "metrics")
    if not isinstance(metrics, bool):
        raise ctx.fail("metrics", f"must be true or false, got {metrics!r}")
    if "metrics_interval_s" in data and not metrics:
        raise ctx.fail("metrics_interval_s", "only applies with metrics: true")
    interval = ctx.number("metrics_interval_s", _given(data, "metrics_interval_s"))
    if not 0.05 <= interval <= 60:
        raise ctx.fail("metrics_interval_s", f"must be between 0.05 and 60 s, got {interval:g}")
    if metrics and (data.get("faults") is not None or data.get("metadata") is not None):
        raise ctx.fail("metrics", "sampled during split and streaming sessions only")
    return {"security": levels, "metrics": metrics, "metrics_interval_s": interval}


@dataclass(frozen=True)
class LoadedWorkload:
    # The validated workload.
    workload: Workload
    # The file verbatim (the manifest keeps it: the parsed form loses comments).
    text: str
    # Where it came from.
    path: Path = field(default_factory=Path)


def find_workload(name_or_path: str | Path) -> Path:
    """A path as given, else a shipped workload by name (``paper`` -> workloads/paper.yaml)."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    for candidate in (WORKLOAD_DIR / p.name, WORKLOAD_DIR / f"{p.name}.yaml"):
        if candidate.is_file() and p.parent == Path():
            return candidate
    shipped = ", ".join(sorted(x.stem for x in WORKLOAD_DIR.glob("*.yaml")))
    raise WorkloadError(f"workload file {str(name_or_path)!r} not found (shipped: {shipped})")


def load_workload(name_or_path: str | Path) -> LoadedWorkload:
    """Read, parse and validate a workload file; raises WorkloadError (one line)."""
    path = find_workload(name_or_path)
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"{path.name}: cannot read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise WorkloadError(f"{path.name}: {where}not valid YAML ({problem})") from None
    return LoadedWorkload(parse_workload(data, path.name), text, path)
