"""A deterministic simulated cluster for the Raft core, with faults and a safety checker.

One step is one tick. During a step the messages due are delivered (decoded from the bytes
``encode`` made, so the codec runs on every message), every running node ticks, the client
workload proposes and reads, and every running node's Ready is handled as the caller must:
persisted to its simulated disk, sent, applied, advanced. A message sent at step s arrives at
step s + 1 + d, d drawn from 0..``max_delay`` (reordering), unless lost (``loss``) or cut off
by a partition when it is due; with ``duplicate`` a second copy travels with its own delay.
Everything is drawn from one seeded generator: a seed replays exactly.

Faults (``Fault``, a schedule drawn from the seed by ``make_schedule``): crash (everything not
on the node's disk is lost: its memory, its application state, the messages to it) and
restart from the disk; pause and resume (a paused node neither ticks, sends nor receives);
partitions into sides, one-way cuts, heal. A fault aimed at the leader (``LEADER``) picks the
one running at that step.

The application is the list of entries applied, in order; its snapshot (taken every
``snapshot_threshold`` applied entries, so followers that fall behind get InstallSnapshot) is
that list encoded. The client proposes unique values to whichever node leads (holding back while
``max_backlog`` entries are uncommitted there) and counts a proposal acknowledged when its
proposer applies it at the index and term it was given.

Checked every step (``Checker``), failing with ``SimFailure`` (the seed, the options and the
schedule in its message, so it replays):

1. election safety: at most one leader per term, ever;
2. log matching: two logs holding an entry of the same index and term hold the same entries up
   to it (checked every few steps and at the end);
3. leader completeness: a committed entry is in the log (or under the snapshot) of every
   leader elected after it was seen committed, and of every leader of a higher term than the
   node that saw it;
4. state-machine safety: every node's applied sequence is a prefix of one history;
5. acknowledged proposals survive: after the final heal and quiescence every node has applied
   every acknowledged value;
6. reads are linearizable: a read's index covers every proposal acknowledged before it was
   asked, and the node has applied that index when it answers.

Liveness, after the final heal (every node restarted or resumed, the network whole, no more
loss): within ``converge_steps`` a leader is elected and every node has committed and applied
the leader's whole log, and a read on the leader is served.

``run_seed`` runs one seed end to end and returns its ``SimReport``; a make target or a test
loops it over as many seeds as it likes.
"""

from __future__ import annotations

import random
import struct
from collections import defaultdict
from dataclasses import dataclass, field

from brokers.raft_broker.raft.config import RaftConfig
from brokers.raft_broker.raft.core import RaftNode, Ready, Role
from brokers.raft_broker.raft.log import HardState, Snapshot
from brokers.raft_broker.raft.messages import Entry, Message, decode, encode

# A fault's target meaning "whichever node leads when the fault fires".
LEADER = -1

_HISTORY_ENTRY = struct.Struct(">QQI")  # index, term, data length


class SimFailure(AssertionError):
    """A safety or liveness check failed; the message says how to replay it."""


def encode_history(history: list[Entry]) -> bytes:
    """The application's state (the entries applied, in order) as snapshot data."""
    parts: list[bytes] = []
    for e in history:
        parts.append(_HISTORY_ENTRY.pack(e.index, e.term, len(e.data)))
        parts.append(e.data)
    return b"".join(parts)


def decode_history(data: bytes) -> list[Entry]:
    out: list[Entry] = []
    off = 0
    while off < len(data):
        index, term, size = _HISTORY_ENTRY.unpack_from(data, off)
        off += _HISTORY_ENTRY.size
        out.append(Entry(term, index, data[off:off + size]))
        off += size
    return out


@dataclass(frozen=True)
class Fault:
    step: int
    # crash, restart, pause, resume, partition, cut, heal
    action: str
    # Node ids (LEADER for the running leader); a partition's first side (the rest is the
    # other), a cut's source and destination.
    targets: tuple[int, ...] = ()
    # Faults sharing a tag share their LEADER: a restart or resume tagged like a crash or pause
    # of the leader undoes it on the node it hit.
    tag: int = 0

    def __str__(self) -> str:
        who = ",".join(f"leader#{self.tag}" if t == LEADER else str(t) for t in self.targets)
        return f"{self.step}:{self.action}" + (f"({who})" if who else "")


@dataclass(frozen=True)
class SimOptions:
    voters: int = 3
    learners: int = 0
    config: RaftConfig = field(default_factory=lambda: RaftConfig(
        election_ticks=10, heartbeat_ticks=2, snapshot_threshold=25))
    loss: float = 0.0
    duplicate: float = 0.0
    max_delay: int = 0
    # Per step: chance the client proposes a value to the leader, and asks it for a read.
    propose_rate: float = 0.5
    read_rate: float = 0.1
    # The client holds back while the leader has this many entries uncommitted (flow control,
    # as a real client's bounded outstanding requests): a configuration that replicates slower
    # than the client proposes would otherwise build a backlog that grows with the run.
    max_backlog: int = 32
    # Steps the cluster gets after the final heal to elect a leader and converge.
    converge_steps: int = 400

    def describe(self) -> str:
        c = self.config
        return (f"voters={self.voters} learners={self.learners} loss={self.loss} "
                f"duplicate={self.duplicate} max_delay={self.max_delay} "
                f"election_ticks={c.election_ticks} heartbeat_ticks={c.heartbeat_ticks} "
                f"pre_vote={c.pre_vote} check_quorum={c.check_quorum} "
                f"max_append_entries={c.max_append_entries} max_inflight={c.max_inflight} "
                f"snapshot_threshold={c.snapshot_threshold}")


@dataclass
class SimReport:
    seed: int
    options: SimOptions
    schedule: list[Fault]
    steps: int = 0
    max_term: int = 0
    leaders: int = 0  # distinct (term, leader) pairs
    committed: int = 0  # the longest applied history
    acknowledged: int = 0
    reads: int = 0
    snapshots_installed: int = 0
    messages: int = 0
    converge_steps: int = 0  # steps after the final heal until converged
    faults: list[str] = field(default_factory=list)  # as applied, leader targets resolved

    def describe(self) -> str:
        return (f"seed={self.seed} {self.options.describe()}\n"
                f"schedule: {' '.join(map(str, self.schedule)) or '(none)'}")


@dataclass
class Disk:
    """What a node persisted through its Ready: all a restart gets back."""

    hard_state: HardState = field(default_factory=HardState)
    snapshot: Snapshot | None = None
    entries: list[Entry] = field(default_factory=list)  # contiguous after the snapshot

    @property
    def base(self) -> int:
        return self.snapshot.index if self.snapshot else 0


class SimNode:
    """A running node: the Raft core and its application (the history it applied)."""

    def __init__(self, node: RaftNode, history: list[Entry]) -> None:
        self.raft = node
        self.history = history


class Checker:
    """Safety checks 1-4 and 6 as the run goes; 5 at its end (``SimCluster.final_checks``)."""

    def __init__(self, fail: SimFailureFactory) -> None:
        self._fail = fail
        self.leaders: dict[int, int] = {}  # term -> leader
        self.history: list[Entry] = []  # the one history every applied sequence is a prefix of
        self.committed: dict[int, Entry] = {}  # index -> entry, seen committed by some node
        self._seen_commit: dict[int, int] = defaultdict(int)  # node -> commit index scanned

    def leader(self, sn: SimNode) -> None:
        node = sn.raft
        known = self.leaders.get(node.term)
        if known == node.id:
            return
        if known is not None:
            raise self._fail(f"two leaders in term {node.term}: {known} and {node.id}")
        self.leaders[node.term] = node.id
        for e in self.committed.values():
            self._holds(sn, e, "elected")

    def _holds(self, sn: SimNode, e: Entry, when: str) -> None:
        log = sn.raft.log
        if e.index > log.snapshot_index:
            held = log.entry(e.index) if e.index <= log.last_index else None
        elif e.index <= len(sn.history):
            held = sn.history[e.index - 1]
        else:
            snap = sn.raft.snapshot
            past = decode_history(snap.data) if snap is not None else []
            held = past[e.index - 1] if e.index <= len(past) else None
        if held != e:
            raise self._fail(f"leader {sn.raft.id} of term {sn.raft.term} ({when}) lacks "
                             f"committed entry {e}: holds {held}")

    def commits(self, sn: SimNode, leaders: list[SimNode]) -> None:
        """Record what ``sn`` newly sees committed; a leader of a higher term must hold it."""
        node = sn.raft
        start = max(self._seen_commit[node.id], node.log.snapshot_index) + 1
        for index in range(start, node.commit_index + 1):
            e = node.log.entry(index)
            known = self.committed.setdefault(index, e)
            if known != e:
                raise self._fail(f"node {node.id} committed {e} where {known} was committed")
            for ld in leaders:
                if ld.raft.term > node.term:
                    self._holds(ld, e, f"after node {node.id} saw it committed")
        self._seen_commit[node.id] = max(self._seen_commit[node.id], node.commit_index)

    def applied(self, node_id: int, entries: list[Entry], start: int) -> None:
        """``node_id`` applied ``entries`` as its history from position ``start`` on."""
        for k, e in enumerate(entries, start + 1):
            if e.index != k:
                raise self._fail(f"node {node_id} applied {e} as its entry {k}")
            if k <= len(self.history):
                if self.history[k - 1] != e:
                    raise self._fail(f"node {node_id} applied {e} where another node "
                                     f"applied {self.history[k - 1]}")
            else:
                self.history.append(e)

    def log_matching(self, nodes: list[SimNode]) -> None:
        for i, a in enumerate(nodes):
            for b in nodes[i + 1:]:
                _check_pair(a.raft, b.raft, self._fail)


class SimFailureFactory:
    """Makes the ``SimFailure`` of a run: the step, what failed, and how to replay it."""

    def __init__(self) -> None:
        self.context = ""
        self.step = 0

        self.applied: list[str] = []

    def __call__(self, what: str) -> SimFailure:
        return SimFailure(f"step {self.step}: {what}\n{self.context}\n"
                          f"faults applied: {' '.join(self.applied) or '(none)'}")


def _check_pair(a: RaftNode, b: RaftNode, fail: SimFailureFactory) -> None:
    lo = max(a.log.first_index, b.log.first_index)
    hi = min(a.log.last_index, b.log.last_index)
    i = hi
    while i >= lo and a.log.term_at(i) != b.log.term_at(i):
        i -= 1
    for j in range(lo, i + 1):
        if a.log.entry(j) != b.log.entry(j):
            raise fail(f"log matching: nodes {a.id} and {b.id} agree at index {i} but differ "
                       f"at {j}: {a.log.entry(j)} vs {b.log.entry(j)}")


class SimCluster:
    def __init__(self, seed: int, options: SimOptions, schedule: list[Fault]) -> None:
        self.seed = seed
        self.opts = options
        self.rng = random.Random(seed)
        self.voters = tuple(range(1, options.voters + 1))
        self.learners = tuple(range(options.voters + 1, options.voters + options.learners + 1))
        self.ids = (*self.voters, *self.learners)
        self.report = SimReport(seed, options, schedule)
        self.fail = SimFailureFactory()
        self.fail.context = self.report.describe()
        self.fail.applied = self.report.faults
        self.checker = Checker(self.fail)
        self.disks = {i: Disk() for i in self.ids}
        self.nodes: dict[int, SimNode | None] = {}
        self._incarnation: dict[int, int] = defaultdict(int)
        self.paused: set[int] = set()
        self.sides: dict[int, int] = {}
        self.cuts: set[tuple[int, int]] = set()
        self.loss = options.loss
        self.duplicate = options.duplicate
        self.now = 0
        self._wire: dict[int, list[tuple[int, int, bytes]]] = defaultdict(list)
        self._schedule = sorted(schedule, key=lambda f: f.step)
        self._next_fault = 0
        self._tagged: dict[int, int] = {}  # fault tag -> the leader it hit
        self._values = 0
        self._proposals: dict[bytes, tuple[int, int, int]] = {}  # value -> node, index, term
        self.acked: dict[bytes, int] = {}  # value -> index
        self._max_acked = 0
        self._reads: dict[int, tuple[int, int]] = {}  # read id -> node, max acked index then
        self._read_ids = 0
        self.reads_served = 0
        self.proposing = True
        for i in self.ids:
            self.start(i)

    # -- nodes -------------------------------------------------------------------------------

    def start(self, node_id: int) -> SimNode:
        """Start ``node_id`` from its disk (empty the first time)."""
        self._incarnation[node_id] += 1
        disk = self.disks[node_id]
        raft = RaftNode(
            node_id, self.voters, learners=self.learners, config=self.opts.config,
            rng=random.Random(f"{self.seed}/{node_id}/{self._incarnation[node_id]}"),
            hard_state=disk.hard_state, entries=disk.entries, snapshot=disk.snapshot)
        history = decode_history(disk.snapshot.data) if disk.snapshot else []
        self.checker.applied(node_id, history, 0)
        sn = SimNode(raft, history)
        self.nodes[node_id] = sn
        self.paused.discard(node_id)
        return sn

    def running(self) -> list[SimNode]:
        return [sn for i, sn in self.nodes.items() if sn is not None and i not in self.paused]

    def leaders(self) -> list[SimNode]:
        return [sn for sn in self.running() if sn.raft.role is Role.LEADER]

    def leader(self) -> SimNode | None:
        """The running leader of the highest term, if any."""
        ls = self.leaders()
        return max(ls, key=lambda sn: sn.raft.term) if ls else None

    # -- faults ------------------------------------------------------------------------------

    def _target(self, t: int, tag: int) -> int:
        if t != LEADER:
            return t
        if tag in self._tagged:
            return self._tagged[tag]
        ld = self.leader()
        target = ld.raft.id if ld is not None else self.rng.choice(self.ids)
        if tag:
            self._tagged[tag] = target
        return target

    def apply(self, fault: Fault) -> None:
        targets = [self._target(t, fault.tag) for t in fault.targets]
        self.report.faults.append(f"{self.now}:{fault.action}({','.join(map(str, targets))})")
        if fault.action == "crash":
            self.crash(targets[0])
        elif fault.action == "restart":
            self.restart(targets[0])
        elif fault.action == "pause":
            self.pause(targets[0])
        elif fault.action == "resume":
            self.resume(targets[0])
        elif fault.action == "partition":
            self.partition(*targets)
        elif fault.action == "cut":
            self.cut(targets[0], targets[1])
        elif fault.action == "heal":
            self.heal()
        else:
            raise ValueError(f"unknown fault {fault.action!r}")

    def crash(self, node_id: int) -> None:
        """Lose the node's memory; its disk stays."""
        self.nodes[node_id] = None
        self.paused.discard(node_id)

    def restart(self, node_id: int) -> None:
        """Start a crashed node from its disk (a running one is left alone)."""
        if self.nodes.get(node_id) is None:
            self.start(node_id)

    def pause(self, node_id: int) -> None:
        if self.nodes.get(node_id) is not None:
            self.paused.add(node_id)

    def resume(self, node_id: int) -> None:
        self.paused.discard(node_id)

    def partition(self, *side: int) -> None:
        """Split the network: ``side`` on one side, every other node on the other."""
        self.sides = {i: int(i in side) for i in self.ids}

    def cut(self, src: int, dst: int) -> None:
        """Drop every message from ``src`` to ``dst`` (one way) until ``heal``."""
        self.cuts.add((src, dst))

    def heal(self) -> None:
        self.sides = {}
        self.cuts = set()

    def heal_all(self) -> None:
        """The end of the faults: every node running, the network whole, no more loss."""
        for i in self.ids:
            if self.nodes.get(i) is None:
                self.start(i)
        self.paused.clear()
        self.sides = {}
        self.cuts = set()
        self.loss = 0.0

    # -- the network -------------------------------------------------------------------------

    def _send(self, m: Message) -> None:
        data = encode(m)
        self.report.messages += 1
        copies = 2 if self.duplicate and self.rng.random() < self.duplicate else 1
        for _ in range(copies):
            if self.loss and self.rng.random() < self.loss:
                continue
            delay = 1 + (self.rng.randint(0, self.opts.max_delay) if self.opts.max_delay else 0)
            self._wire[self.now + delay].append((m.src, m.dst, data))

    def _reachable(self, src: int, dst: int) -> bool:
        if (src, dst) in self.cuts:
            return False
        return self.sides.get(src, 0) == self.sides.get(dst, 0)

    # -- one step ----------------------------------------------------------------------------

    def step(self) -> None:
        self.now += 1
        self.fail.step = self.now
        while (self._next_fault < len(self._schedule)
               and self._schedule[self._next_fault].step <= self.now):
            self.apply(self._schedule[self._next_fault])
            self._next_fault += 1
        due = self._wire.pop(self.now, [])
        if self.opts.max_delay:
            self.rng.shuffle(due)
        for src, dst, data in due:
            sn = self.nodes.get(dst)
            if sn is None or dst in self.paused or not self._reachable(src, dst):
                continue
            sn.raft.step(decode(data))
            if sn.raft.role is Role.LEADER:
                self.checker.leader(sn)
        for sn in self.running():
            sn.raft.tick()
            if sn.raft.role is Role.LEADER:
                self.checker.leader(sn)
        if self.proposing:
            self._client()
        running = self.running()
        for sn in running:
            if sn.raft.has_ready():
                self._handle_ready(sn)
        leaders = [sn for sn in running if sn.raft.role is Role.LEADER]
        for sn in running:
            self.checker.commits(sn, leaders)
        if self.now % 10 == 0:
            self.checker.log_matching(running)

    def _client(self) -> None:
        ld = self.leader()
        if ld is None:
            return
        backlog = ld.raft.log.last_index - ld.raft.commit_index
        if self.rng.random() < self.opts.propose_rate and backlog < self.opts.max_backlog:
            self._values += 1
            value = b"v%d" % self._values
            index = ld.raft.propose(value)
            self._proposals[value] = (ld.raft.id, index, ld.raft.term)
        if self.rng.random() < self.opts.read_rate:
            self.read(ld)

    def read(self, sn: SimNode) -> None:
        """Ask ``sn`` (a leader) for a read, remembering what was acknowledged before it."""
        self._read_ids += 1
        self._reads[self._read_ids] = (sn.raft.id, self._max_acked)
        sn.raft.read_index(self._read_ids)

    def _handle_ready(self, sn: SimNode) -> None:
        node = sn.raft
        rd: Ready = node.ready()
        disk = self.disks[node.id]
        # 1. persist: snapshot, entries, hard state.
        if rd.snapshot is not None:
            disk.snapshot = rd.snapshot
            disk.entries = []
        if rd.entries:
            first = rd.entries[0].index
            if not disk.base < first <= disk.base + len(disk.entries) + 1:
                raise self.fail(f"node {node.id}'s Ready writes entries from {first} onto a "
                                f"disk holding {disk.base + 1}..{disk.base + len(disk.entries)}")
            del disk.entries[first - disk.base - 1:]
            disk.entries.extend(rd.entries)
        if rd.hard_state is not None:
            disk.hard_state = rd.hard_state
            if rd.hard_state.commit > disk.base + len(disk.entries):
                raise self.fail(f"node {node.id} persists commit {rd.hard_state.commit} past "
                                f"its persisted log")
        # 2. send.
        for m in rd.messages:
            self._send(m)
        # 3. apply.
        if rd.snapshot is not None:
            sn.history = decode_history(rd.snapshot.data)
            self.checker.applied(node.id, sn.history, 0)
            self.report.snapshots_installed += 1
        if rd.committed:
            start = len(sn.history)
            sn.history.extend(rd.committed)
            self.checker.applied(node.id, list(rd.committed), start)
            for e in rd.committed:
                prop = self._proposals.get(e.data)
                if prop is not None and prop == (node.id, e.index, e.term):
                    self.acked[e.data] = e.index
                    self._max_acked = max(self._max_acked, e.index)
        for r in rd.reads:
            asked = self._reads.pop(r.read_id, None)
            if asked is None or asked[0] != node.id:
                raise self.fail(f"node {node.id} served read {r.read_id} it was not asked")
            if r.index < asked[1]:
                raise self.fail(f"read {r.read_id} at index {r.index} misses a proposal "
                                f"acknowledged at {asked[1]} before it was asked")
            if len(sn.history) < r.index:
                raise self.fail(f"read {r.read_id} served at index {r.index} with "
                                f"{len(sn.history)} applied")
            self.reads_served += 1
        for read_id in rd.failed_reads:
            self._reads.pop(read_id, None)
        node.advance(rd)
        # 4. compact.
        if node.should_compact:
            node.compact(node.applied, encode_history(sn.history))
            snap = node.snapshot
            assert snap is not None
            del disk.entries[:snap.index - disk.base]
            disk.snapshot = snap

    # -- the end -----------------------------------------------------------------------------

    def converged(self) -> bool:
        ld = self.leader()
        if ld is None or len(self.running()) != len(self.ids):
            return False
        last = ld.raft.log.last_index
        if ld.raft.log.last_term != ld.raft.term:
            return False
        return all(sn.raft.commit_index == last and sn.raft.applied == last
                   and sn.raft.leader_id == ld.raft.id for sn in self.running())

    def final_checks(self) -> None:
        running = self.running()
        self.checker.log_matching(running)
        for value, index in self.acked.items():
            for sn in running:
                if len(sn.history) < index or sn.history[index - 1].data != value:
                    raise self.fail(f"acknowledged {value!r} at index {index} is not in node "
                                    f"{sn.raft.id}'s applied history")


def make_schedule(rng: random.Random, steps: int, ids: tuple[int, ...]) -> list[Fault]:
    """A random fault schedule over ``steps``: 1-6 faults, each undone after 5-80 steps (a
    bounce: crashes each followed by a restart within 3 steps)."""
    faults: list[Fault] = []
    for tag in range(1, rng.randint(1, 6) + 1):
        at = rng.randrange(1, max(2, steps))
        end = at + rng.randint(5, 80)
        kind = rng.choice(("crash", "crash_leader", "bounce", "pause", "pause_leader",
                           "partition", "isolate_leader", "cut"))
        if kind == "bounce":
            # Crash and restart at once, again and again: what a node remembers of its vote
            # and its log is all it has.
            who = rng.choice(ids)
            for k in range(rng.randint(1, 5)):
                down = at + 7 * k
                faults += [Fault(down, "crash", (who,)),
                           Fault(down + rng.randint(1, 3), "restart", (who,))]
        elif kind in ("crash", "crash_leader", "pause", "pause_leader"):
            who = LEADER if kind.endswith("_leader") else rng.choice(ids)
            stop, go = ("crash", "restart") if kind.startswith("crash") else ("pause", "resume")
            faults += [Fault(at, stop, (who,), tag), Fault(end, go, (who,), tag)]
        elif kind == "partition":
            side = tuple(sorted(rng.sample(ids, rng.randint(1, max(1, len(ids) - 1)))))
            faults += [Fault(at, "partition", side), Fault(end, "heal")]
        elif kind == "isolate_leader":
            faults += [Fault(at, "partition", (LEADER,), tag), Fault(end, "heal")]
        elif len(ids) > 1:
            src, dst = rng.sample(ids, 2)
            faults += [Fault(at, "cut", (src, dst)), Fault(end, "heal")]
    return sorted(faults, key=lambda f: f.step)


def options_for(seed: int) -> SimOptions:
    """The cluster shape, network and Raft settings a seed stands for."""
    rng = random.Random(f"options/{seed}")
    voters = rng.choice((1, 3, 3, 3, 5))
    learners = rng.choice((0, 0, 1, 2))
    entries, inflight = rng.choice((1, 4, 64)), rng.choice((1, 4, 16))
    plain = rng.random() < 0.5  # half the seeds run the defaults: pre-vote and check-quorum
    config = RaftConfig(
        election_ticks=10,
        heartbeat_ticks=rng.choice((1, 2, 3)),
        pre_vote=plain or rng.random() < 0.5,
        check_quorum=plain or rng.random() < 0.5,
        # At least 4 entries a round trip: stop-and-wait with single entries over a reordering
        # network drains the backlog too slowly for converge_steps (slow, not stuck).
        max_append_entries=entries,
        max_inflight=inflight if entries * inflight >= 4 else 4,
        snapshot_threshold=rng.choice((10, 25, 50)),
    )
    return SimOptions(
        voters=voters, learners=learners, config=config,
        loss=rng.choice((0.0, 0.02, 0.1)), duplicate=rng.choice((0.0, 0.05)),
        max_delay=rng.choice((0, 0, 2, 4)))


def run_seed(seed: int, steps: int = 300, *, options: SimOptions | None = None,
             schedule: list[Fault] | None = None) -> SimReport:
    """Run one seed: ``steps`` steps under the seed's faults, then heal, converge and check.
    Raises ``SimFailure`` (seed, options and schedule in its message) on any violation, and on
    any other exception (chained) as well, so every failure says how to replay it."""
    opts = options or options_for(seed)
    ids = tuple(range(1, opts.voters + opts.learners + 1))
    plan = schedule if schedule is not None else make_schedule(
        random.Random(f"schedule/{seed}"), steps, ids)
    sim = SimCluster(seed, opts, plan)
    sim.fail.context += (f"\nreplay: brokers.raft_broker.raft.sim.run_seed({seed}, steps={steps})"
                         f" (the seed's own options and schedule), or RAFT_SEED={seed} "
                         f"RAFT_STEPS={steps} pytest -s tests/unit/brokers/raft_broker/raft/"
                         f"test_sim.py::test_one_seed")
    try:
        return _run(sim, steps)
    except SimFailure:
        raise
    except Exception as exc:
        raise sim.fail(f"{type(exc).__name__}: {exc}") from exc


def _run(sim: SimCluster, steps: int) -> SimReport:
    opts = sim.opts
    for _ in range(steps):
        sim.step()
    sim.heal_all()
    sim.proposing = False
    healed = sim.now
    while not sim.converged():
        if sim.now - healed >= opts.converge_steps:
            ld = sim.leader()
            state = ", ".join(
                f"{sn.raft.id}:{sn.raft.role} t{sn.raft.term} c{sn.raft.commit_index} "
                f"a{sn.raft.applied} l{sn.raft.log.last_index}" for sn in sim.running())
            raise sim.fail(f"no convergence {opts.converge_steps} steps after the heal "
                           f"(leader {ld.raft.id if ld else None}; {state})")
        sim.step()
    report = sim.report
    report.converge_steps = sim.now - healed
    # A read on the converged leader is served within two election timeouts.
    ld = sim.leader()
    assert ld is not None
    served = sim.reads_served
    sim.read(ld)
    for _ in range(opts.config.election_ticks * 2):
        sim.step()
        if sim.reads_served > served:
            break
    else:
        raise sim.fail("a read on the converged leader was not served")
    sim.final_checks()
    report.steps = sim.now
    report.max_term = max(sn.raft.term for sn in sim.running())
    report.leaders = len(sim.checker.leaders)
    report.committed = len(sim.checker.history)
    report.acknowledged = len(sim.acked)
    report.reads = sim.reads_served
    return report
