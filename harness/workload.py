"""Workload files (``workloads/*.yaml``): schema, defaults and validation.

The core of a file (cells, clients, tries, policies, the cluster) is read here; each block of
a study (``[faults]``, ``[metadata]``, ``[latency]`` ... below) by that study's entry in
harness/studies, with the same parsing context (harness/schema.py), and kept in
``Workload.studies`` under the study's name (``wl.study(FAULT_STUDY)``).

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
    rate_search:                 # [latency] instead of rate: find each side's maximum rate
      start: 5000                # first rate tried (records/s); then ramp x factor, bisect
      factor: 2
      precision: 0.1             # stop when the bracket is this fraction of its lower end
      ceiling: 300000            # never try above (default: the load client's own limit)
      max_backlog_s: 1.0         # kept = on schedule and backlog <= this many seconds of load
    rate_fractions: [0.5, 0.9]   # [latency] then sessions at these fractions of it
    tries: 4
    scenarios: [split, streaming]
    policies:                    # a scalar or a list each; lists are swept (cross product)
      offset_commit: every_fetch # every_fetch | interval_ms:N | none
      metadata_check: per_request  # per_request | cached
    flush: os                    # broker flush policy: os | every_batch | interval_ms:N
    labels: [A, B]               # >1 label: the same arch run as several sides (A/A runs)
    client: twinbench            # the load client: twinbench | kafka-perf (Kafka's own perf
                                 # tools); a list runs each as a side on the same cluster
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
    rtt_ms: [0, 1, 5]            # [rtt] netns: round-trip time added between hosts, ms
                                 # (a list is swept, one cell each; harness/netdelay)
    warmup_sessions: 2           # unrecorded sessions on every freshly started cluster first
    metadata:                    # [metadata] every session a metadata session
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
    faults:                      # [faults] every session a fault session
      rate: 3000                 # records/s, all producers together, paced
      duration_s: 30             # production phase; faults are scheduled inside it
      drain_s: 60                # then consumers get this long to read what was acknowledged
      probe_ms: 50               # how often every broker's Metadata is polled
      cases:                     # each case is run on every cell and try
        - name: kill-leader
          schedule:              # at_s within [0, duration_s), in order
            - {at_s: 5, action: kill, broker: "leader:0"}   # or controller, voter, coordinator, N
            - {at_s: 15, action: restart, broker: "leader:0"}
    security: none               # [security] none | tls | sasl_ssl, on every twin (a list
                                 # is swept: one side each, every cluster up at once,
                                 # interleaved); throwaway certificates and users per run
    metrics: false               # [qos] true: every broker serves Prometheus metrics, into
    metrics_interval_s: 1.0      # metrics.csv this often during each session (and at its ends)
    transactions:                # [transactions] every session an exactly-once session
      sizes: [1, 10, 100]        # batches per transaction, one cell each (and each without)
      shapes: [produce, ctp]     # a producer alone; consume-transform-produce
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

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from brokers.core.config import FlushPolicy
from brokers.core.errors import UserError
from harness import architectures, services, studies
from harness.architectures.options import Options
from harness.schema import NAME_RE, Ctx, WorkloadError, defaults, given, keys, required
from harness.studies.study import Study
from workloads.payload import MIN_MSG_SIZE
from workloads.schedule import ARRIVALS

__all__ = [
    "SCENARIOS",
    "CellGroup",
    "Workload",
    "WorkloadError",
    "find_workload",
    "load_workload",
    "parse_workload",
]

C = TypeVar("C")

# Shipped workload files live next to the load client.
WORKLOAD_DIR = Path(__file__).resolve().parent.parent / "workloads"
SCENARIOS = ("split", "streaming")
OFFSET_COMMIT_RE = re.compile(r"every_fetch|none|interval_ms:([1-9]\d*)")
METADATA_CHECKS = ("per_request", "cached")
LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
SIZE_RE = re.compile(r"(\d+)\s*(B|KB|KiB|MB|MiB)?")
# KB and KiB both mean 1024 here: the paper's "1KB .. 128KB" are powers of two.
SIZE_UNITS = {None: 1, "B": 1, "KB": 1024, "KiB": 1024, "MB": 1024**2, "MiB": 1024**2}
# Largest record value accepted (a batch of 20 of these must fit the broker's 64 MiB limit).
MAX_MSG_SIZE = 1024**2


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
    # The load client (harness/driver/kafka_perf.py): "twinbench" (ours) or "kafka-perf"
    # (Kafka's ProducerPerformance/ConsumerPerformance); several: one side each, interleaved
    # on the same cluster (the cross-check of the two clients).
    client: tuple[str, ...] = ("twinbench",)
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
    # on a bridge (harness/cluster/netns.py; needs root), which partition faults require.
    network: str = "loopback"
    # Sessions run and thrown away on every cluster right after it starts (each a copy of the
    # first session the cluster will measure), so no measured session pays for a cold start:
    # ZooKeeper's JVM compiles its hot paths during its first ~10,000 requests (its CPU per
    # request falls threefold meanwhile), and the brokers fill their caches and pools.
    warmup_sessions: int = 0
    # Every study the file uses, by name (harness/studies): its part, parsed by its entry
    # (a FaultPlan, a MetadataPlan ...). A study absent here is not used.
    studies: dict[str, Any] = field(default_factory=dict)

    def study(self, entry: Study[C]) -> C | None:
        """This workload's part of ``entry``'s study, or None when it does not use it."""
        config: C | None = self.studies.get(entry.name)
        return config

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (tuples become lists) for the manifest: the file's keys, the
        studies' included, parsed, with every default filled in."""
        out = asdict(self)
        del out["studies"]
        for entry in studies.entries():
            out |= entry.manifest(self.studies.get(entry.name))
        return out

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


# Workload fields a file gives under `policies:` rather than at the top level.
_POLICY_KEYS = frozenset({"offset_commit", "metadata_check"})
_CELL_KEYS = keys(CellGroup)
_WORKLOAD_DEFAULTS = defaults(Workload)


def _given(data: Mapping[str, Any], key: str) -> Any:
    return given(data, key, _WORKLOAD_DEFAULTS)


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


def _cells(ctx: Ctx, raw: Any, data: Mapping[str, Any]) -> tuple[CellGroup, ...]:
    if not isinstance(raw, list) or not raw:
        raise ctx.fail("cells", "must be a non-empty list of {table, msg_sizes, batches}")
    groups: list[CellGroup] = []
    ids: set[str] = set()
    for i, item in enumerate(raw):
        where = f"cells[{i}]"
        if not isinstance(item, dict):
            raise ctx.fail(where, f"must be a mapping with table, msg_sizes, batches, got {item!r}")
        ctx.check_keys(item, _CELL_KEYS, where)
        for key in sorted(required(CellGroup)):
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


def _cell_messages(ctx: Ctx, where: str, item: Mapping[str, Any], data: Mapping[str, Any]
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


def _policies(ctx: Ctx, raw: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
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


def parse_workload(data: Any, source: str = "<workload>") -> Workload:
    """Validate a parsed YAML document and fill in the defaults (the dataclasses' own).

    Keys are checked in a fixed order, so a file with several mistakes always names the same
    one first."""
    ctx = Ctx(source)
    _check_document(ctx, data)
    kw: dict[str, Any] = {"name": _name(ctx, data["name"]),
                          "description": _description(ctx, _given(data, "description"))}
    kw |= _load(ctx, data)
    kw["scenarios"] = _scenarios(ctx, data)
    kw |= _open_loop(ctx, data, kw["scenarios"])
    kw["offset_commit"], kw["metadata_check"] = _policies(ctx, data.get("policies"))
    kw["flush"] = _flush(ctx, _given(data, "flush"))
    kw["labels"] = _labels(ctx, _given(data, "labels"))
    kw["client"] = _clients(ctx, _given(data, "client"))
    kw |= _cluster(ctx, data)
    kw["options"] = _options(ctx, data.get("options"))
    # Every study reads its own keys (and checks them against the rest of the document).
    kw["studies"] = {e.name: config for e in studies.entries()
                     if (config := e.parse(ctx, data, kw)) is not None}
    if "cells" not in data:  # a session kind without a grid (metadata), _check_document says
        return Workload(cells=(), **kw)
    return Workload(cells=_cells(ctx, data["cells"], data), **kw)


def _check_document(ctx: Ctx, data: Any) -> None:
    if not isinstance(data, dict):
        raise ctx.fail("", "must be a YAML mapping of keys (name, cells, ...)")
    for key in data:
        moved = _legacy_option(key)
        if moved is not None:
            raise ctx.fail(key, f"is now an option of {moved[0]}: write options: "
                           f"{{{moved[0]}: {{{moved[1]}: {data[key]!r}}}}}")
    ctx.check_keys(data, _top_keys(), "")
    for key in required(Workload):
        # A metadata workload has no grid of message sizes.
        if key not in data and not (key == "cells" and data.get("metadata") is not None):
            raise ctx.fail(key, "is missing")


def _top_keys() -> frozenset[str]:
    """What a file may say at the top level: the core's keys, ``policies``, every study's."""
    return (keys(Workload) - _POLICY_KEYS - {"studies"} | {"policies"}
            | {k for e in studies.entries() for k in e.keys})


def _session_kind(data: Mapping[str, Any]) -> str | None:
    """The scenario of the study whose sessions replace the paper's, when the file uses one."""
    return next((e.scenario for e in studies.entries()
                 if e.scenario is not None and any(data.get(k) is not None for k in e.keys)),
                None)


def _name(ctx: Ctx, name: Any) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ctx.fail("name", f"must match [a-z0-9][a-z0-9_-]*, got {name!r}")
    return name


def _description(ctx: Ctx, description: Any) -> str:
    if not isinstance(description, str):
        raise ctx.fail("description", "must be text")
    return description.strip()


def _load(ctx: Ctx, data: Mapping[str, Any]) -> dict[str, Any]:
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


def _scenarios(ctx: Ctx, data: Mapping[str, Any]) -> tuple[str, ...]:
    kind = _session_kind(data)
    if kind is not None:
        if data.get("scenarios", [kind]) not in (kind, [kind]):
            raise ctx.fail("scenarios", f"a workload with {kind} runs {kind} sessions only "
                           f"(scenarios: [{kind}], or leave it out)")
        return (kind,)
    return tuple(ctx.choice("scenarios", s, SCENARIOS)
                 for s in ctx.string_list("scenarios", _given(data, "scenarios")))


def _open_loop(ctx: Ctx, data: Mapping[str, Any], scenarios: tuple[str, ...]
               ) -> dict[str, Any]:
    """rate, arrivals, duration_s, warmup_s: open-loop and time-bounded sessions (a rate
    search, harness/studies/latency, chooses the rate itself)."""
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


def _flush(ctx: Ctx, flush: Any) -> str:
    try:
        FlushPolicy.parse(flush if isinstance(flush, str) else repr(flush))
    except UserError as exc:
        raise ctx.fail("flush", str(exc)) from None
    return flush


def _labels(ctx: Ctx, raw: Any) -> tuple[str, ...]:
    labels = ctx.string_list("labels", raw)
    for label in labels:
        if not isinstance(label, str) or not (label == "" or LABEL_RE.fullmatch(label)):
            raise ctx.fail("labels", f"labels must be short words like A or B, got {label!r}")
    return tuple(labels)


CLIENTS = ("twinbench", "kafka-perf")


def _clients(ctx: Ctx, raw: Any) -> tuple[str, ...]:
    return tuple(ctx.choice("client", v, CLIENTS) for v in ctx.string_list("client", raw))


def _cluster(ctx: Ctx, data: Mapping[str, Any]) -> dict[str, Any]:
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


def _options(ctx: Ctx, raw: Any) -> dict[str, dict[str, Any]]:
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
    for name, moved in legacy:
        if key in moved:
            return name, moved[key]
    return None


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
