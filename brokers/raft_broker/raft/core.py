"""``RaftNode``: the Raft consensus algorithm as a deterministic state machine.

Sans-IO, after etcd-io/raft's design: no sockets, no clocks, no disks, no threads. The caller
feeds it ticks (``tick``), received messages (``step``), proposals (``propose``) and read
requests (``read_index``), then asks ``ready()`` what to do and calls ``advance`` once done.
The same node runs on the simulated network (``sim.py``) and, later, on the broker's transport.

The caller's loop, in this order (etcd's rules; safety depends on them):

1. ``ready = node.ready()``;
2. persist ``ready.snapshot`` (it replaces the whole log), then ``ready.entries`` (first drop
   every persisted entry at or after ``ready.entries[0].index``), then ``ready.hard_state``;
   all of it durably (fsync) *before* step 3, since a vote or an acknowledged Append sent and
   then forgotten in a crash breaks Raft's guarantees;
3. send ``ready.messages``;
4. restore the state machine from ``ready.snapshot`` if there is one, then apply
   ``ready.committed`` in order; then answer ``ready.reads`` (their index is applied now);
5. ``node.advance(ready)``.

Roles: follower, pre-candidate, candidate, leader. Learners (non-voting members, as every
KRaft broker is to the controller quorum) receive and apply the log but never campaign, vote
or count toward a quorum.

Elections. A voter that hears from no leader for a randomized timeout in [election_ticks,
2 * election_ticks) campaigns. With ``pre_vote`` it first asks for pre-votes at term + 1 without
raising its own term; only a majority of pre-votes makes it a candidate (term + 1, votes for
itself). A voter grants a (pre-)vote only to a candidate whose log is at least as up to date as
its own (last term, then last index), and a real vote at most once per term (``voted_for``,
persisted). With ``check_quorum`` a node that heard from a live leader within the last election
timeout ignores (pre-)vote requests of a higher term: the leader lease.

Terms. A message of a higher term makes the node a follower of that term, except a pre-vote
request (it asks about a term nobody has entered) and a granted pre-vote answer (it echoes our
own future term); a refused pre-vote answer carries the refuser's real term, which is adopted.
A message of a lower term is answered with the node's term when it is an Append, a snapshot or
a vote request, so a stale leader or candidate learns it is behind; other stale messages are
dropped.

Leading. A new leader appends an empty no-op entry of its term (so an entry of its term can
commit, which commits its predecessors and allows reads), then replicates per follower from
``next``/``match`` in three states: probe (one Append at ``next - 1`` at a time, sent again with
every heartbeat, until the follower's log is found to match; a refusal's hint moves ``next``
back), replicate (pipelined, up to ``max_inflight`` Appends unanswered) and snapshot (``next``
fell below the leader's snapshot base: the snapshot is sent whole). Index N commits when a
majority of voters holds it and its entry has the current term. Every heartbeat_ticks each
follower gets an Append; in replicate it is at ``match``, which the follower holds, so entries
still on their way (reordered) do not make it fail. Lost entries are found when the follower
refuses the next Append (a gap), or when about half an election timeout of heartbeats passes
with entries or a snapshot outstanding and no progress: the leader probes again from
``match``. With ``check_quorum`` a leader that has not heard from a majority of voters over an
election timeout steps down.

Reads (Raft thesis sec. 6.4, ReadIndex). The leader records its commit index for the read
(after an entry of its own term has committed: until then reads wait), then confirms it is
still the leader: it sends a heartbeat with a fresh ``seq`` and waits for a majority of voters
to answer a message at least that new in its term. The confirmed read is handed out with the
next Ready, whose committed entries reach its index. A leader that steps down fails its
pending reads (``Ready.failed_reads``).

Input is untrusted as far as cheap checks go: a message for another node, from an id that is no
member, or inconsistent with itself is dropped and counted in ``counters``, never raised.
"""

from __future__ import annotations

import enum
import random
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass

from brokers.raft_broker.raft.config import RaftConfig
from brokers.raft_broker.raft.log import HardState, RaftLog, Snapshot
from brokers.raft_broker.raft.messages import (
    MAX_U32,
    Append,
    AppendResponse,
    Entry,
    InstallSnapshot,
    Message,
    RequestVote,
    SnapshotResponse,
    VoteResponse,
)


class Role(enum.StrEnum):
    FOLLOWER = "follower"
    PRE_CANDIDATE = "pre-candidate"
    CANDIDATE = "candidate"
    LEADER = "leader"


class NotLeader(Exception):
    """Only the leader takes proposals and reads; ``leader_hint`` is the leader this node
    knows of (None when it knows none)."""

    def __init__(self, leader_hint: int | None) -> None:
        super().__init__(f"not the leader (leader: {leader_hint})")
        self.leader_hint = leader_hint


@dataclass(frozen=True, slots=True)
class ReadState:
    """A confirmed read: answer it from state that has applied ``index``."""

    read_id: int
    index: int


@dataclass(frozen=True, slots=True)
class Ready:
    """What the caller must do now, in the order of the module's docstring."""

    # Term, vote and commit index to persist; None when unchanged since the last Ready.
    hard_state: HardState | None
    # Entries to persist, contiguous; persisted entries at or after the first one's index are
    # replaced (a leader of a later term overwrote them).
    entries: tuple[Entry, ...]
    # A snapshot received from the leader: persist it in place of the whole log, and restore
    # the state machine from it before applying ``committed``.
    snapshot: Snapshot | None
    # To send once the above is durable.
    messages: tuple[Message, ...]
    # Newly committed entries, to apply in order (no-ops have empty data).
    committed: tuple[Entry, ...]
    # Reads confirmed: answer each once ``committed`` is applied (its index then is).
    reads: tuple[ReadState, ...]
    # Read ids this node can no longer confirm (it stopped leading): retry them elsewhere.
    failed_reads: tuple[int, ...]


class _State(enum.Enum):
    PROBE = 0
    REPLICATE = 1
    SNAPSHOT = 2


class _Progress:
    """The leader's view of one follower."""

    __slots__ = ("acked_seq", "active", "commit_sent", "inflight", "match", "next",
                 "probe_sent", "snapshot_index", "state", "wait")

    def __init__(self, next_index: int) -> None:
        self.match = 0  # highest index known to match the leader's log
        self.next = next_index  # next index to send
        self.state = _State.PROBE
        self.probe_sent = False  # probe: an Append is out, wait for its answer or a heartbeat
        self.inflight: deque[int] = deque()  # replicate: last index of each unanswered Append
        self.active = False  # answered since the last quorum check
        self.acked_seq = 0  # highest seq it answered in this term
        self.snapshot_index = 0  # snapshot: the index of the snapshot sent
        self.wait = 0  # heartbeats with something outstanding and no progress
        # The highest commit index an Append sent to it lets it apply (its commit is capped
        # at what that Append proves it holds).
        self.commit_sent = 0

    def become_probe(self, next_index: int) -> None:
        self.state = _State.PROBE
        self.next = next_index
        self.probe_sent = False
        self.inflight.clear()
        self.wait = 0

    def become_replicate(self) -> None:
        self.state = _State.REPLICATE
        self.next = self.match + 1
        self.probe_sent = False
        self.inflight.clear()
        self.wait = 0


@dataclass(slots=True)
class _Read:
    read_id: int
    index: int
    seq: int  # 0: waiting for the first commit of the leader's term


class RaftNode:
    def __init__(
        self,
        node_id: int,
        voters: Sequence[int],
        *,
        learners: Sequence[int] = (),
        config: RaftConfig | None = None,
        rng: random.Random | None = None,
        hard_state: HardState | None = None,
        entries: Sequence[Entry] = (),
        snapshot: Snapshot | None = None,
    ) -> None:
        """A member of a fixed cluster, resuming from what it persisted (``hard_state``, the
        snapshot and the entries after it) or starting empty."""
        members = (*voters, *learners)
        if not voters:
            raise ValueError("a Raft cluster needs at least one voter")
        if len(set(members)) != len(members):
            raise ValueError("voter and learner ids must be distinct")
        if any(not 0 <= m <= MAX_U32 for m in members):
            raise ValueError("node ids must fit an unsigned 32-bit integer")
        if node_id not in members:
            raise ValueError(f"node {node_id} is neither a voter nor a learner")
        self.id = node_id
        self.voters: tuple[int, ...] = tuple(sorted(voters))
        self.learners: tuple[int, ...] = tuple(sorted(learners))
        self.is_voter = node_id in self.voters
        self._members = frozenset(members)
        self._peers: tuple[int, ...] = tuple(sorted(self._members - {node_id}))
        self._quorum = len(self.voters) // 2 + 1
        self.cfg = config or RaftConfig()
        self._rng = rng or random.Random(node_id)

        hs = hard_state or HardState()
        self.term = hs.term
        self.voted_for = hs.voted_for
        base_index, base_term = (snapshot.index, snapshot.term) if snapshot else (0, 0)
        self.log = RaftLog(base_index, base_term, entries)
        self.commit_index = max(hs.commit, base_index)
        if self.commit_index > self.log.last_index:
            raise ValueError(f"commit index {hs.commit} is past the last entry "
                             f"{self.log.last_index}")
        # The application restores its state from the snapshot it persisted; committed entries
        # after it are handed out again by the first Ready.
        self.applied = base_index
        self._handed = base_index  # last index handed out to apply
        self._snapshot = snapshot  # the latest snapshot, sent to followers behind its base
        self._pending_snapshot: Snapshot | None = None  # received, not yet handed out
        self._unstable_from = self.log.last_index + 1  # first entry not yet handed to persist
        self._handed_hs = HardState(self.term, self.voted_for, self.commit_index)

        self.role = Role.FOLLOWER
        self.leader_id: int | None = None
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._timeout = self._random_timeout()
        self._votes: dict[int, bool] = {}
        self._progress: dict[int, _Progress] = {}
        self._seq = 0
        self._reads: list[_Read] = []
        self._ready_reads: list[ReadState] = []
        self._failed_reads: list[int] = []
        self._msgs: list[Message] = []
        self.counters: defaultdict[str, int] = defaultdict(int)

    # -- the caller's API --------------------------------------------------------------------

    def tick(self) -> None:
        """Advance the logical clock by one tick."""
        self._election_elapsed += 1
        if self.role is Role.LEADER:
            if self._election_elapsed >= self.cfg.election_ticks:
                self._election_elapsed = 0
                if self.cfg.check_quorum and not self._quorum_active():
                    self.counters["stepped_down_no_quorum"] += 1
                    self._become_follower(self.term, None)
                    return
            self._heartbeat_elapsed += 1
            if self._heartbeat_elapsed >= self.cfg.heartbeat_ticks:
                self._heartbeat_elapsed = 0
                self._broadcast_heartbeat()
        elif self.is_voter and self._election_elapsed >= self._timeout:
            self._campaign()

    def step(self, msg: Message) -> None:
        """Handle one received message."""
        if msg.dst != self.id:
            self.counters["dropped_wrong_dst"] += 1
            return
        if msg.src == self.id or msg.src not in self._members:
            self.counters["dropped_unknown_src"] += 1
            return
        if isinstance(msg, RequestVote | VoteResponse) and (
                not self.is_voter or msg.src not in self.voters):
            self.counters["dropped_vote_not_voter"] += 1
            return
        if msg.term > self.term:
            if isinstance(msg, RequestVote):
                if self._in_lease():
                    # A leader was heard within the election timeout: the requester is cut
                    # off or behind, and must not disrupt a working quorum.
                    self.counters["vote_ignored_in_lease"] += 1
                    return
                if not msg.pre:
                    self._become_follower(msg.term, None)
            elif isinstance(msg, VoteResponse) and msg.pre and msg.granted:
                pass  # echoes the term we asked about; raised only once a majority grants
            elif isinstance(msg, Append | InstallSnapshot):
                self._become_follower(msg.term, msg.src)
            else:
                self._become_follower(msg.term, None)
        elif msg.term < self.term:
            self._answer_stale(msg)
            return
        if isinstance(msg, Append):
            self._on_append(msg)
        elif isinstance(msg, AppendResponse):
            self._on_append_response(msg)
        elif isinstance(msg, RequestVote):
            self._on_vote_request(msg)
        elif isinstance(msg, VoteResponse):
            self._on_vote_response(msg)
        elif isinstance(msg, InstallSnapshot):
            self._on_snapshot(msg)
        else:
            self._on_snapshot_response(msg)

    def propose(self, data: bytes) -> int:
        """Append ``data`` to the log as the leader; returns its index. It is committed once
        a Ready hands it out in ``committed`` (the same index and term); a leader that loses
        its term first may see it overwritten."""
        if self.role is not Role.LEADER:
            raise NotLeader(self.leader_id)
        index = self._append_own(data)
        for peer in self._peers:
            self._send_append(peer, heartbeat=False)
        return index

    def read_index(self, read_id: int) -> None:
        """Ask for a linearizable read barrier; ``read_id`` comes back in ``Ready.reads`` (or
        ``Ready.failed_reads``)."""
        if self.role is not Role.LEADER:
            raise NotLeader(self.leader_id)
        self._reads.append(_Read(read_id, 0, 0))
        if self.log.term_at(self.commit_index) == self.term:
            self._start_reads()

    def has_ready(self) -> bool:
        return bool(self._msgs or self._ready_reads or self._failed_reads
                    or self._pending_snapshot is not None
                    or self._unstable_from <= self.log.last_index
                    or self.commit_index > self._handed
                    or self._hard_state() != self._handed_hs)

    def ready(self) -> Ready:
        """Everything to persist, send and apply since the last Ready (handed out once)."""
        hs = self._hard_state()
        hard_state = hs if hs != self._handed_hs else None
        self._handed_hs = hs
        snapshot, self._pending_snapshot = self._pending_snapshot, None
        if snapshot is not None:
            self._handed = max(self._handed, snapshot.index)
        entries: tuple[Entry, ...] = ()
        last = self.log.last_index
        if self._unstable_from <= last:
            entries = tuple(self.log.slice(max(self._unstable_from, self.log.first_index),
                                           last + 1))
        self._unstable_from = last + 1
        committed: tuple[Entry, ...] = ()
        if self.commit_index > self._handed:
            committed = tuple(self.log.slice(self._handed + 1, self.commit_index + 1))
            self._handed = self.commit_index
        messages, self._msgs = tuple(self._msgs), []
        reads, self._ready_reads = tuple(self._ready_reads), []
        failed, self._failed_reads = tuple(self._failed_reads), []
        return Ready(hard_state, entries, snapshot, messages, committed, reads, failed)

    def advance(self, ready: Ready) -> None:
        """The caller persisted, sent and applied ``ready``."""
        if ready.snapshot is not None:
            self.applied = max(self.applied, ready.snapshot.index)
        if ready.committed:
            self.applied = max(self.applied, ready.committed[-1].index)

    @property
    def should_compact(self) -> bool:
        """Has the log grown ``snapshot_threshold`` applied entries past the last snapshot?"""
        threshold = self.cfg.snapshot_threshold
        return threshold > 0 and self.applied - self.log.snapshot_index >= threshold

    def compact(self, index: int, data: bytes) -> None:
        """The application's snapshot of its state through ``index`` (applied): the log drops
        the entries up to it and sends ``data`` to followers behind it. The caller persists the
        snapshot itself and may then drop the persisted entries up to ``index``."""
        if not self.log.snapshot_index < index <= self.applied:
            raise ValueError(f"cannot compact to {index}: the log starts after "
                             f"{self.log.snapshot_index} and {self.applied} is applied")
        term = self.log.term_at(index)
        assert term is not None  # snapshot_index < index <= applied <= last_index
        self.log.compact(index)
        self._snapshot = Snapshot(index, term, data)
        self.counters["compactions"] += 1

    @property
    def snapshot(self) -> Snapshot | None:
        """The latest snapshot (compacted here or received), None before any."""
        return self._snapshot

    # -- state changes -----------------------------------------------------------------------

    def _hard_state(self) -> HardState:
        return HardState(self.term, self.voted_for, self.commit_index)

    def _random_timeout(self) -> int:
        n = self.cfg.election_ticks
        return n + self._rng.randrange(n)

    def _reset_timers(self) -> None:
        self._election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._timeout = self._random_timeout()

    def _in_lease(self) -> bool:
        return (self.cfg.check_quorum and self.leader_id is not None
                and self._election_elapsed < self.cfg.election_ticks)

    def _become_follower(self, term: int, leader: int | None) -> None:
        if term != self.term:
            self.term = term
            self.voted_for = None
        if self.role is Role.LEADER:
            self._fail_reads()
        self.role = Role.FOLLOWER
        self.leader_id = leader
        self._votes = {}
        self._progress = {}
        self._reset_timers()

    def _campaign(self) -> None:
        self._reset_timers()
        self.leader_id = None
        self._votes = {self.id: True}
        if self.cfg.pre_vote:
            self.role = Role.PRE_CANDIDATE
            self.counters["pre_campaigns"] += 1
            self._request_votes(pre=True)
        else:
            self._start_election()

    def _start_election(self) -> None:
        self._reset_timers()
        self.term += 1
        self.voted_for = self.id
        self.leader_id = None
        self.role = Role.CANDIDATE
        self._votes = {self.id: True}
        self.counters["campaigns"] += 1
        self._request_votes(pre=False)

    def _request_votes(self, *, pre: bool) -> None:
        if self._tally() > 0:  # a single voter: nobody to ask
            self._won(pre=pre)
            return
        term = self.term + 1 if pre else self.term
        last_index, last_term = self.log.last_index, self.log.last_term
        for peer in self.voters:
            if peer != self.id:
                self._msgs.append(RequestVote(self.id, peer, term, last_index, last_term, pre))

    def _tally(self) -> int:
        """1 when a majority of voters granted, -1 when a majority refused, else 0."""
        granted = sum(1 for v in self._votes.values() if v)
        if granted >= self._quorum:
            return 1
        if len(self._votes) - granted > len(self.voters) - self._quorum:
            return -1
        return 0

    def _won(self, *, pre: bool) -> None:
        if pre:
            self._start_election()
        else:
            self._become_leader()

    def _become_leader(self) -> None:
        self.role = Role.LEADER
        self.leader_id = self.id
        self._votes = {}
        self._reset_timers()
        self.counters["elected"] += 1
        nxt = self.log.last_index + 1
        self._progress = {peer: _Progress(nxt) for peer in self._peers}
        # The no-op: an entry of this term, whose commit commits everything before it.
        self._append_own(b"")
        for peer in self._peers:
            self._send_append(peer, heartbeat=True)

    def _append_own(self, data: bytes) -> int:
        index = self.log.last_index + 1
        self.log.append((Entry(self.term, index, data),), self.commit_index)
        self._unstable_from = min(self._unstable_from, index)
        self._maybe_commit()
        return index

    # -- leader ------------------------------------------------------------------------------

    def _quorum_active(self) -> bool:
        active = 1  # the leader itself (always a voter)
        for peer, pr in self._progress.items():
            if pr.active and peer in self.voters:
                active += 1
            pr.active = False
        return active >= self._quorum

    def _maybe_commit(self) -> None:
        matches = sorted((self.log.last_index if v == self.id else self._progress[v].match
                          for v in self.voters), reverse=True)
        n = matches[self._quorum - 1]
        # Only an entry of the current term commits by counting (Raft's Figure 8): earlier
        # ones commit with it.
        if n > self.commit_index and self.log.term_at(n) == self.term:
            self.commit_index = n
            if self._reads and self._reads[-1].seq == 0:
                self._start_reads()
            # Tell the followers now rather than at the next heartbeat: a broker waiting to
            # see its own proposal applied (an offset commit) would otherwise wait up to a
            # tick for every commit. Followers still probing or taking a snapshot learn it
            # when they catch up.
            for peer in self._peers:
                self._notify_commit(peer, self._progress[peer])

    def _notify_commit(self, peer: int, pr: _Progress) -> None:
        """Send ``peer`` the commit index at once when it holds entries it does not know are
        committed, rather than at the next heartbeat: a broker waiting to see its own proposal
        applied (an offset commit) would otherwise wait up to a tick for every one. A follower
        still probing or taking a snapshot learns it when it catches up."""
        if pr.state is _State.REPLICATE and min(self.commit_index, pr.match) > pr.commit_sent:
            self.counters["commit_notices"] += 1
            self._send_append(peer, heartbeat=True)

    def _start_reads(self) -> None:
        self._seq += 1
        for r in self._reads:
            if r.seq == 0:
                r.index, r.seq = self.commit_index, self._seq
        if self._quorum == 1:
            self._confirm_reads()
            return
        for peer in self._peers:
            if peer in self.voters:
                self._send_append(peer, heartbeat=True)

    def _confirm_reads(self) -> None:
        while self._reads and self._reads[0].seq > 0:
            r = self._reads[0]
            acks = 1 + sum(1 for v in self.voters
                           if v != self.id and self._progress[v].acked_seq >= r.seq)
            if acks < self._quorum:
                return
            self._reads.pop(0)
            self._ready_reads.append(ReadState(r.read_id, r.index))

    def _fail_reads(self) -> None:
        self._failed_reads.extend(r.read_id for r in self._reads)
        self._reads = []

    def _broadcast_heartbeat(self) -> None:
        # Heartbeats a follower may leave outstanding entries or a snapshot unanswered before
        # they count as lost and are sent again: about half an election timeout.
        patience = max(1, self.cfg.election_ticks // (2 * self.cfg.heartbeat_ticks))
        for peer in self._peers:
            pr = self._progress[peer]
            if pr.state is _State.SNAPSHOT or (pr.state is _State.REPLICATE
                                               and pr.next - 1 > pr.match):
                pr.wait += 1
                if pr.wait >= patience:
                    # Lost on the way (or its answer was): probe from what is known to match,
                    # which sends the entries or the snapshot again.
                    self.counters["resent_after_wait"] += 1
                    pr.become_probe(pr.match + 1)
            else:
                pr.wait = 0
            self._send_append(peer, heartbeat=True)

    def _send_append(self, peer: int, *, heartbeat: bool) -> None:
        """Send ``peer`` what its progress allows. A heartbeat always sends something."""
        pr = self._progress[peer]
        if pr.state is _State.SNAPSHOT:
            if heartbeat:
                self._send_keepalive(peer)
            return
        if pr.state is _State.REPLICATE:
            entries = (self.log.slice(pr.next, pr.next + self.cfg.max_append_entries)
                       if len(pr.inflight) < self.cfg.max_inflight
                       and pr.next >= self.log.first_index else [])
            if entries:
                prev = pr.next - 1
                prev_term = self.log.term_at(prev)
                assert prev_term is not None  # prev >= snapshot_index, see the slice above
                pr.next = entries[-1].index + 1
                pr.inflight.append(entries[-1].index)
            elif pr.next <= self.log.snapshot_index:
                self._send_snapshot(peer, pr)  # compacted past what it has to get next
                return
            elif not heartbeat:
                return
            else:
                # A heartbeat at what the follower is known to hold: it always matches, so
                # entries still travelling (reordered) do not make it fail; lost ones are
                # found by the follower refusing the next Append or by the wait above.
                prev = pr.match
                prev_term = self.log.term_at(prev)
                if prev_term is None:
                    self._send_keepalive(peer)
                    return
            pr.commit_sent = max(pr.commit_sent,
                                 min(self.commit_index, prev + len(entries)))
            self._msgs.append(Append(self.id, peer, self.term, prev, prev_term,
                                     tuple(entries), self.commit_index, self._seq))
            return
        # Probe: one Append at next - 1 at a time, sent again with every heartbeat (without
        # entries) until answered.
        if pr.probe_sent and not heartbeat:
            return
        prev = pr.next - 1
        prev_term = self.log.term_at(prev)
        if prev_term is None:
            if prev < self.log.snapshot_index:
                self._send_snapshot(peer, pr)
                return
            # next ran past our log (a bogus hint): start over from what is known to match.
            pr.become_probe(pr.match + 1)
            prev = pr.match
            prev_term = self.log.term_at(prev)
            if prev_term is None:
                self._send_snapshot(peer, pr)
                return
        entries = ([] if pr.probe_sent else
                   self.log.slice(pr.next, pr.next + self.cfg.max_append_entries))
        pr.probe_sent = True
        self._msgs.append(Append(self.id, peer, self.term, prev, prev_term, tuple(entries),
                                 self.commit_index, self._seq))

    def _send_keepalive(self, peer: int) -> None:
        # Keeps the follower's election timer reset (and confirms reads) while what it needs
        # is on its way: an Append at index 0 matches any log and commits nothing.
        self._msgs.append(Append(self.id, peer, self.term, 0, 0, (), 0, self._seq))

    def _send_snapshot(self, peer: int, pr: _Progress) -> None:
        snap = self._snapshot
        if snap is None:  # a base without a snapshot: only a caller's bug gets here
            self.counters["snapshot_missing"] += 1
            return
        pr.state = _State.SNAPSHOT
        pr.snapshot_index = snap.index
        pr.wait = 0
        pr.next = snap.index + 1
        pr.probe_sent = False
        pr.inflight.clear()
        self.counters["snapshots_sent"] += 1
        self._msgs.append(InstallSnapshot(self.id, peer, self.term, snap.index, snap.term,
                                          snap.data, self._seq))

    def _heard(self, pr: _Progress, seq: int) -> None:
        pr.active = True
        if pr.acked_seq < seq <= self._seq:
            pr.acked_seq = seq
            if self._reads:
                self._confirm_reads()

    def _on_append_response(self, m: AppendResponse) -> None:
        if self.role is not Role.LEADER:
            return
        pr = self._progress[m.src]
        self._heard(pr, m.seq)
        if m.success:
            self._on_match(m.src, pr, m.index)
            return
        if pr.state is _State.SNAPSHOT:
            return
        if (pr.state is _State.REPLICATE and m.index <= pr.match) or (
                pr.state is _State.PROBE and m.index != pr.next - 1):
            self.counters["stale_rejections"] += 1
            return
        self.counters["append_rejections"] += 1
        nxt = max(pr.match + 1, min(m.index, m.hint + 1, self.log.last_index + 1))
        pr.become_probe(nxt)
        self._send_append(m.src, heartbeat=False)

    def _on_snapshot_response(self, m: SnapshotResponse) -> None:
        if self.role is not Role.LEADER:
            return
        pr = self._progress[m.src]
        self._heard(pr, m.seq)
        self._on_match(m.src, pr, m.index)

    def _on_match(self, peer: int, pr: _Progress, index: int) -> None:
        """``peer``'s log matches ours through ``index``."""
        if index > self.log.last_index:
            self.counters["dropped_bad_match"] += 1
            return
        advanced = index > pr.match
        if advanced:
            pr.match = index
            pr.wait = 0
        if pr.state is _State.PROBE:
            pr.become_replicate()
        elif pr.state is _State.SNAPSHOT:
            if pr.match >= pr.snapshot_index:
                pr.become_replicate()
        else:
            pr.next = max(pr.next, pr.match + 1)
            while pr.inflight and pr.inflight[0] <= pr.match:
                pr.inflight.popleft()
        if advanced and peer in self.voters:
            self._maybe_commit()
        self._send_append(peer, heartbeat=False)
        self._notify_commit(peer, pr)

    # -- follower and candidates -------------------------------------------------------------

    def _answer_stale(self, m: Message) -> None:
        if isinstance(m, Append):
            self._msgs.append(AppendResponse(self.id, m.src, self.term, False, m.prev_index,
                                             self.log.last_index, m.seq))
        elif isinstance(m, InstallSnapshot):
            self._msgs.append(SnapshotResponse(self.id, m.src, self.term, 0, m.seq))
        elif isinstance(m, RequestVote):
            self._msgs.append(VoteResponse(self.id, m.src, self.term, False, m.pre))
        else:
            self.counters["dropped_stale"] += 1

    def _on_vote_request(self, m: RequestVote) -> None:
        can_vote = (self.voted_for == m.src
                    or (self.voted_for is None and self.leader_id is None)
                    or (m.pre and m.term > self.term))
        if can_vote and self.log.is_up_to_date(m.last_index, m.last_term):
            self._msgs.append(VoteResponse(self.id, m.src, m.term, True, m.pre))
            if not m.pre:
                self.voted_for = m.src
                self._election_elapsed = 0
        else:
            self._msgs.append(VoteResponse(self.id, m.src, self.term, False, m.pre))

    def _on_vote_response(self, m: VoteResponse) -> None:
        if self.role is Role.PRE_CANDIDATE:
            if not m.pre or (m.granted and m.term != self.term + 1):
                return
        elif self.role is Role.CANDIDATE:
            if m.pre or m.term != self.term:
                return
        else:
            return
        self._votes[m.src] = m.granted
        outcome = self._tally()
        if outcome > 0:
            self._won(pre=self.role is Role.PRE_CANDIDATE)
        elif outcome < 0:
            self._become_follower(self.term, None)

    def _follow(self, leader: int) -> bool:
        """An Append or snapshot of our term from ``leader``; False when it must be dropped."""
        if self.role is Role.LEADER:
            # Two leaders in one term: impossible unless the message is forged.
            self.counters["dropped_second_leader"] += 1
            return False
        if self.role is not Role.FOLLOWER:
            self._become_follower(self.term, leader)
        self.leader_id = leader
        self._election_elapsed = 0
        return True

    def _on_append(self, m: Append) -> None:
        if not self._follow(m.src):
            return
        if m.entries and not _plausible(m):
            self.counters["dropped_implausible_append"] += 1
            return
        prev_index, prev_term, entries = m.prev_index, m.prev_term, m.entries
        if prev_index < self.commit_index:
            # What we committed matches the leader; look only past it.
            k = self.commit_index - prev_index  # entries[k - 1] is at commit_index
            if k > len(entries):
                self._reply(m, True, self.commit_index)
                return
            prev_index, prev_term, entries = self.commit_index, entries[k - 1].term, entries[k:]
        if self.log.term_at(prev_index) != prev_term:
            self.counters["append_rejected"] += 1
            hint = self.log.conflict_hint(prev_index, prev_term, self.commit_index)
            self._msgs.append(AppendResponse(self.id, m.src, self.term, False, m.prev_index,
                                             hint, m.seq))
            return
        written = self.log.append(entries, self.commit_index)
        if written is not None:
            self._unstable_from = min(self._unstable_from, written)
        last_new = prev_index + len(entries)
        # Commit only what the leader's Append showed to match: past last_new our log may
        # still hold entries of a deposed leader.
        self.commit_index = max(self.commit_index, min(m.commit, last_new))
        self._reply(m, True, last_new)

    def _reply(self, m: Append, success: bool, index: int) -> None:
        self._msgs.append(AppendResponse(self.id, m.src, self.term, success, index,
                                         self.log.last_index, m.seq))

    def _on_snapshot(self, m: InstallSnapshot) -> None:
        if not self._follow(m.src):
            return
        if m.index <= self.commit_index:
            index = self.commit_index  # we hold it already
        elif self.log.term_at(m.index) == m.snap_term:
            # Our log holds the snapshot's last entry: it and all before it match.
            self.commit_index = index = m.index
        else:
            self.log.restore(m.index, m.snap_term)
            self.commit_index = index = m.index
            self._snapshot = self._pending_snapshot = Snapshot(m.index, m.snap_term, m.data)
            self._unstable_from = m.index + 1
            self.counters["snapshots_installed"] += 1
        self._msgs.append(SnapshotResponse(self.id, m.src, self.term, index, m.seq))


def _plausible(m: Append) -> bool:
    """Entries' terms never decrease along a log, start at or after prev_term, and never pass
    the leader's term."""
    term = m.prev_term
    for e in m.entries:
        if e.term < term:
            return False
        term = e.term
    return term <= m.term
