"""What a run consists of, decided before anything starts (pure functions, no I/O).

* A **side** is one run log: one architecture, one label and one combination of coordination
  policies. A plain workload on one architecture has one side; an A/A workload
  (``labels: [A, B]``), a policy sweep and a run over both architectures have several.
* A **cell** is one (table, message size, batch) point of a grid, and for open-loop workloads
  one target rate (``rate: [..]`` sweeps like a grid axis; the cell id ends in ``-r<rate>``) or
  one fraction of each side's maximum sustainable rate (``rate_fractions``; ``-f<percent>``),
  and with ``rtt_ms: [..]`` one round-trip time (``-rtt<ms>``, last).
* A **search** (``rate_search``) finds that maximum for every side, base cell and try before
  the epoch's sessions: adaptive, so it is not planned here but stepped by the runner
  (harness/studies/latency/steps.py), the sides' steps alternating like sessions.
* A **session** is one side x cell x try x scenario: a fresh topic, the producers, the
  consumers, verification, one set of rows. A study whose sessions replace the paper's plans
  them itself (harness/driver/kinds.py): a fault workload's are one per fault case instead of
  per scenario (``grid_schedule`` with its own sessions), a metadata workload's one per case
  x size x try on fresh clusters.
* An **epoch** is the sessions that share one cluster. ``metadata_check`` is a broker setting,
  so sides differing in it need different clusters; ``restart: cell|try`` asks for more epochs.

* An **epoch** runs one cluster per architecture and security level among its sides, all up
  at once (an idle cluster costs a heartbeat or a gossip packet now and then): a ``security``
  sweep interleaves plaintext and secured clusters session by session like the architectures.

Order inside an epoch: cell, then try, then scenario, then side, so the sides of a comparison
(zk and dsbs, A and B, or two offset_commit policies) alternate instead of running A then B
(docs/architecture.md, "Measuring on a small VM"); odd tries run the sides in order and even
tries in reverse (A B B A), so neither side always goes first after the other.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness import architectures
from harness.studies import latency, rtt, security
from harness.workload import Workload
from workloads.consumer import CommitPolicy


@dataclass(frozen=True)
class Cell:
    # Which paper grid (records.csv `table`).
    table: str
    # Bytes per record value.
    msg_size: int
    # Records per produce request and per fetch.
    batch: int
    # Open loop: target records/s, all producers together (None: closed loop).
    rate: float | None = None
    # rate_fractions: this fraction of the side's maximum sustainable rate; the runner sets
    # `rate` from the side's searches, and the cell id stays the same for every side.
    fraction: float | None = None
    # Metadata sessions: the case's size (topics or partitions); the cell is <case>-n<n>.
    n: int | None = None
    # Records per session from the cell group's own sweep (cell id suffix -m<count>); None:
    # the workload's messages.
    messages: int | None = None
    # Round-trip time (ms) the delay line adds during the cell's sessions (workload rtt_ms;
    # the cell id ends in -rtt<ms>); None: no delay line.
    rtt_ms: float | None = None

    @property
    def base_id(self) -> str:
        """The (table, size, batch) point: what a rate search's rows are keyed by."""
        return f"{self.table}-{self.msg_size}B-b{self.batch}"

    @property
    def cell_id(self) -> str:
        if self.n is not None:
            return f"{self.table}-n{self.n}"
        if self.fraction is not None:
            return f"{self.base_id}-f{self.fraction * 100:g}"
        # The rate, then the delay line's rtt, last: the analysis tells open-loop and rtt cells
        # by their id's endings.
        base = self.base_id if self.messages is None else f"{self.base_id}-m{self.messages}"
        cell = base if self.rate is None else f"{base}-r{self.rate:g}"
        return cell if self.rtt_ms is None else f"{cell}-rtt{self.rtt_ms:g}"


@dataclass(frozen=True)
class ClusterKey:
    """Which of an epoch's clusters a side runs on: one per architecture and security level."""

    arch: str
    # A workload security level (harness/cluster/certs.py SECURITY_LEVELS).
    security: str = "none"

    def __str__(self) -> str:
        return self.arch if self.security == "none" else f"{self.arch} ({self.security})"


@dataclass(frozen=True)
class Side:
    # Position among the run's sides (stable across epochs).
    index: int
    # A registry name (harness/architectures/): whose cluster runs this side's sessions.
    arch: str
    # The manifest's `label` (A/B for an A/A run; the policies for a sweep; else the user's).
    label: str
    # The coordination policies in force for every session of this side.
    offset_commit: str
    metadata_check: str
    # The brokers' listener security (a workload security level); its clusters are its own.
    security: str = "none"
    # The load client (harness/driver/kafka_perf.py); sides differing only in it share a
    # cluster.
    client: str = "twinbench"

    @property
    def cluster(self) -> ClusterKey:
        return ClusterKey(self.arch, self.security)


@dataclass(frozen=True)
class Session:
    side: Side
    cell: Cell
    # 1-based, as in the paper.
    try_no: int
    # split | streaming, or the scenario of the study whose sessions replace the paper's
    # (faults, metadata).
    scenario: str
    # That study's case for this session (a FaultCase, a MetadataCase at size cell.n);
    # None for the paper's sessions.
    case: Any = None


@dataclass(frozen=True)
class Epoch:
    # Broker setting of this epoch's clusters (docs/architecture.md, fairness rule 2).
    metadata_check: str
    sessions: tuple[Session, ...]
    # Sides whose maximum sustainable rates are searched first (rate_search workloads).
    searches: tuple[Side, ...] = ()

    @property
    def clusters(self) -> tuple[ClusterKey, ...]:
        """The clusters this epoch needs (an architecture at a security level), in order of
        first use."""
        return tuple(dict.fromkeys([*(s.cluster for s in self.searches),
                                    *(s.side.cluster for s in self.sessions)]))

    @property
    def arches(self) -> tuple[str, ...]:
        """The architectures of those clusters, in order of first use."""
        return tuple(dict.fromkeys(k.arch for k in self.clusters))


def base_cells(workload: Workload) -> list[Cell]:
    """Every (table, size, batch) point once: what rate searches run on."""
    return [Cell(group.table, size, batch) for group in workload.cells
            for size in group.msg_sizes for batch in group.batches]


def cells(workload: Workload) -> list[Cell]:
    """Every (table, size, batch) point, once per target rate of an open-loop workload or per
    fraction of a searched one (none when a search has no fractions), or once per message
    count of a group that sweeps them."""
    search = workload.study(latency.LATENCY_STUDY)
    if search is not None:
        return [Cell(c.table, c.msg_size, c.batch, fraction=f) for c in base_cells(workload)
                for f in search.fractions]
    rates: tuple[float | None, ...] = workload.rate or (None,)
    swept = workload.study(rtt.RTT)
    rtts: tuple[float | None, ...] = swept if swept else (None,)
    return [Cell(group.table, size, batch, rate, messages=count, rtt_ms=rtt)
            for group in workload.cells for size in group.msg_sizes
            for batch in group.batches for rate in rates
            for count in (group.messages or (None,)) for rtt in rtts]


def sides(
    workload: Workload, label: str | None = None, arches: tuple[str, ...] | None = None
) -> list[Side]:
    """One side per architecture x label x policy combination x load client (``arches``: the
    baseline architecture alone by default). ``label`` (the CLI's) names a single side; the
    architecture is not part of the label (each run log records its own); the client is, as
    ``client=<name>``, when the workload names several."""
    if arches is None:
        arches = (architectures.baseline().name,)
    labels = list(workload.labels)
    if label is not None:
        labels = [f"{label}-{x}" for x in labels] if len(labels) > 1 else [label]
    combos = workload.policy_combinations
    levels = security.levels(workload.study(security.SECURITY))
    out: list[Side] = []
    for mc in workload.metadata_check:
        for lab in labels:
            for oc, mc2 in combos:
                if mc2 != mc:
                    continue
                for level in levels:
                    parts = [lab] if lab else []
                    if len(combos) > 1:
                        parts.append(f"{oc}+{mc}")
                    if len(levels) > 1:
                        parts.append(f"security={level}")
                    for client in workload.client:
                        named = [*parts, f"client={client}"] if len(workload.client) > 1 \
                            else parts
                        for arch in arches:
                            # Real Kafka has no per-request check: its sides are the cached
                            # cells' alone (workload validation refused a run it has none
                            # of). An external cluster (--bootstrap) is named by its label.
                            if (arch not in architectures.names()
                                    or mc in architectures.get(arch).metadata_checks):
                                out.append(Side(len(out), arch, " ".join(named), oc, mc,
                                                level, client))
    return out


# The sessions of one cell and try, the sides in the try's order.
SessionsOf = Callable[[Cell, int, Sequence[Side]], list[Session]]


def paper_sessions(workload: Workload) -> SessionsOf:
    """The paper's sessions: one per scenario and side."""
    def sessions(cell: Cell, try_no: int, order: Sequence[Side]) -> list[Session]:
        return [Session(side, cell, try_no, scenario) for scenario in workload.scenarios
                for side in order]
    return sessions


def grid_schedule(workload: Workload, all_sides: list[Side],
                  sessions_of: SessionsOf | None = None) -> list[Epoch]:
    """Sessions grouped by the cluster they run on, in execution order: per metadata_check,
    cell, then try (epochs cut where ``restart`` asks), each try's sessions from
    ``sessions_of`` (default: the paper's)."""
    sessions_of = sessions_of or paper_sessions(workload)
    epochs: list[Epoch] = []
    grid = cells(workload)
    searching = workload.study(latency.LATENCY_STUDY) is not None
    for mc in workload.metadata_check:
        group = [s for s in all_sides if s.metadata_check == mc]
        if not group:
            continue
        current: list[Session] = []
        for cell in grid:
            for try_no in range(1, workload.tries + 1):
                order = group if try_no % 2 else group[::-1]
                current.extend(sessions_of(cell, try_no, order))
                if workload.restart == "try":
                    epochs.append(Epoch(mc, tuple(current)))
                    current = []
            if workload.restart == "cell" and current:
                epochs.append(Epoch(mc, tuple(current)))
                current = []
        searches = tuple(group) if searching else ()
        if current or searches:
            epochs.append(Epoch(mc, tuple(current), searches))
    return [e for e in epochs if e.sessions or e.searches]


# ---------------------------------------------------------------------------------------------
# Who sends and reads what
# ---------------------------------------------------------------------------------------------


def producer_counts(messages: int, producers: int) -> list[int]:
    """``messages`` split as evenly as possible; the first producers take the remainder."""
    base, extra = divmod(messages, producers)
    return [base + (1 if i < extra else 0) for i in range(producers)]


def producer_partitions(workload: Workload, index: int) -> tuple[int, ...]:
    """The partitions producer ``index`` round-robins over.

    split: its share (p % producers == index), or one partition when producers outnumber
    partitions; all: every partition, starting at a different one per producer so the
    producers do not move in lockstep from partition to partition.
    """
    n, parts = workload.producers, workload.partitions
    if workload.producer_partitions == "all":
        return tuple((index + k) % parts for k in range(parts))
    if n > parts:
        return (index % parts,)
    return tuple(p for p in range(parts) if p % n == index)


def consumer_partitions(workload: Workload, index: int) -> tuple[int, ...]:
    """Static assignment: consumer ``index`` owns p % consumers == index (never empty)."""
    return tuple(p for p in range(workload.partitions) if p % workload.consumers == index)


def planned_per_partition(count: int, partitions: tuple[int, ...], batch: int) -> dict[int, int]:
    """Records a producer will send to each partition: it sends full batches of ``batch`` (the
    last one shorter) round-robin over ``partitions`` (as workloads.producer does)."""
    out = dict.fromkeys(partitions, 0)
    n = len(partitions)
    full, rest = divmod(count, batch)
    for i, p in enumerate(partitions):
        out[p] += (full // n + (1 if i < full % n else 0)) * batch
    if rest:
        out[partitions[full % n]] += rest
    return out


def commit_policy(text: str) -> CommitPolicy:
    """Workload spelling -> the consumer's: every_fetch | none | interval_ms:N."""
    if text in ("every_fetch", "none"):
        return text  # type: ignore[return-value]  # one of the two literals, just checked
    name, _, value = text.partition(":")
    if name != "interval_ms" or not value.isdigit() or int(value) <= 0:
        raise ValueError(f"bad offset_commit policy {text!r}")
    return ("interval_ms", int(value))
