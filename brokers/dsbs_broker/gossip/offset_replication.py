"""OffsetReplication: a group's committed offsets held by its next coordinators (sans-IO).

A group's offsets are committed on its coordinator, the top rendezvous rank of the group id over
the live members. Should it fail, the next rank takes the group over, so the next
``offset_replicas`` ranks hold copies. Two rules make a takeover lose nothing acknowledged:

* **A commit is acknowledged once enough successors hold it.** ``commit`` sends the entries at
  once (OFFSETS) to the group's first ``required`` replica peers (the others get them with the
  next timer batch) and completes when ``required`` of the replica peers have acknowledged them
  (OFFSETS_ACK), or fails after ``commit_timeout_s``. ``required`` is
  ``commit_acks`` (default 1), capped by ``offset_replicas`` and by the members this broker has
  ever known but itself, so a one-broker cluster commits alone and a coordinator cut off from
  every peer cannot commit at all (like min.insync.replicas on Kafka's __consumer_offsets).
  ``commit_acks=0`` is the paper's lazy replication: acknowledged on the coordinator's disk alone.
* **A coordinator whose view of the live members changed pulls a group before serving it.** A
  join, a death or a return can make this member a group's coordinator, and its own start
  leaves it knowing only its file. So on the first OffsetCommit or OffsetFetch of a group after
  its live set changed (``ensure_pulled``), it asks the group's other top ranks (OFFSETS_PULL);
  each sends the group's entries and answers OFFSETS_PULLED once the puller has acknowledged
  all of them. The group is served once every peer asked has answered or is seen dead; the
  coordinator meanwhile holds the request, and answers COORDINATOR_LOAD_IN_PROGRESS (which
  clients retry) if that takes long. The holders of an acknowledged commit are the old
  coordinator and at least one successor; after a death, a join or a return they are among the
  group's top ranks again, so a new coordinator holds every commit acknowledged before it, and
  its Lamport stamps (``tables/offsets.py``) order its commits after them whatever the wall
  clocks say. Pulls are per group and on demand, so a view change costs nothing for groups
  nobody uses, and nothing on a 1,000-member cluster's other members.

A broker serves no group's offsets unless it is ``quorate``: joined, and seeing a majority of
the members it knows alive; the minority side of a partition (or a broker restarted where no
seed answers) refuses with COORDINATOR_NOT_AVAILABLE instead of serving what its side holds.

What this cannot give without consensus (docs/dsbs-metadata.md): two members whose views differ
and that each see a majority alive can both consider themselves a group's coordinator; both
can commit if each reaches a successor that considers it live, and the entries then merge by
stamp.

Every ``offset_replication_interval_s`` the member also re-sends, in OFFSETS batches, entries a
peer has not acknowledged (UDP may lose them), and after a membership change offers every
group's entries to its current top ranks; merges are idempotent. Offsets are taken only from a
live member at its own gossip address.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Protocol

from brokers.dsbs_broker.packets.wire import (
    OffsetEntry,
    Offsets,
    OffsetsAck,
    OffsetsPull,
    OffsetsPulled,
    Status,
    chunk_offset_entries,
    encode_message,
    encode_offsets_raw,
)
from brokers.dsbs_broker.tables.members import MemberTable
from brokers.dsbs_broker.tables.offsets import Held, OffsetTable
from brokers.dsbs_broker.tables.validation import offset_problem

Addr = tuple[str, int]
_LEFT = Status.LEFT


class ReplicationHost(Protocol):
    """What offset replication needs from the gossip node (``SwimNode``)."""

    node_id: int
    members: MemberTable
    offsets: OffsetTable
    counters: defaultdict[str, int]

    @property
    def has_synced(self) -> bool: ...

    def live_order(self, key: str) -> list[int]: ...

    def packet_room(self, message_len: int) -> int: ...

    def send_packet(self, addr: Addr, message: bytes, extra: list[bytes] | None = None, *,
                    piggyback: bool = True, pad: bool = False) -> bool: ...


# Pulls answered at once at most (a flood of pulls must not grow a table without bound).
_MAX_PULLS_IN = 4096


@dataclass
class _Pull:
    rid: int
    waiting: set[int]  # peers yet to answer
    sent: float


@dataclass
class _Commit:
    items: Held
    peers: list[int]
    required: int
    deadline: float


class OffsetReplication:
    """Commits held by successors, pulls after view changes, and the retry timer."""

    def __init__(self, host: ReplicationHost, *, replicas: int, interval_s: float,
                 commit_acks: int = 1, commit_timeout_s: float = 5.0) -> None:
        self.host = host
        # Copies beyond the coordinator's own: the group's next `replicas` rendezvous ranks.
        self.replicas = replicas
        # How often the node calls replicate(); a batch unacknowledged for two is sent again,
        # and so is a pull not yet answered.
        self.interval_s = interval_s
        # Successor copies a commit waits for (capped, see the module docstring); 0: lazy.
        self.commit_acks = commit_acks
        # How long a commit waits for them before it fails (the client retries).
        self.commit_timeout_s = commit_timeout_s
        self._members_version = -1
        # --- commits waiting for successors: request id -> what they wait for; outcomes.
        self._commits: dict[int, _Commit] = {}
        self.completed: dict[int, bool] = {}
        # --- our pulls, per group, on demand: group -> the pull in progress.
        self._pulls_out: dict[str, _Pull] = {}
        self._pull_rid = 0
        # Groups pulled since the live set last changed (cleared when it changes).
        self._pulled: set[str] = set()
        self._live_version = -1
        # Groups whose pull finished (the coordinator wakes the requests waiting for them).
        self.loaded: list[str] = []
        # --- pulls we answer: (puller, its request id) -> the entries it must acknowledge.
        self._pulls_in: dict[tuple[int, int], Held] = {}

    def quorate(self) -> bool:
        """May this broker serve committed offsets at all? Only once a seed has answered since
        it started (or it has no seeds) and while it sees a majority of the members it knows
        (LEFT ones aside, itself included) alive, suspects not counted. A broker started while
        no seed answers, or cut off from most of the cluster, holds only what its own file or
        its side had: it would serve offsets older than ones acknowledged elsewhere (the
        nemesis read such offsets back on a broker restarted behind a one-way cut). Refusing
        is what Kafka's minority side does too: it has no leader for __consumer_offsets."""
        host = self.host
        if not host.has_synced:
            return False
        known = alive = 0
        for m in host.members.members.values():
            if m.status != _LEFT:
                known += 1
                alive += m.status == Status.ALIVE
        return 2 * alive > known

    def replica_peers(self, group: str) -> list[int]:
        """Peers holding copies of ``group``'s offsets: the other top ranks of its order."""
        order = self.host.live_order(group)[: self.replicas + 1]
        return [n for n in order if n != self.host.node_id]

    def required(self) -> int:
        """Successor acknowledgements a commit needs now (see the module docstring)."""
        known = sum(1 for m in self.host.members.members.values() if m.status != _LEFT)
        return max(0, min(self.commit_acks, self.replicas, known - 1))

    # --- commits ----------------------------------------------------------------------------
    def commit(self, rid: int, group: str, entries: list[OffsetEntry], now: float) -> None:
        """Send a commit's entries to the group's successors; ``completed[rid]`` says when
        ``required()`` of them hold them (True) or that they did not in time (False)."""
        peers = self.replica_peers(group)
        keys = [(e.group, e.topic, e.partition) for e in entries]
        self.host.offsets.mark_dirty(keys, peers)
        need = self.required()
        if need == 0:
            # Lazy (commit_acks=0, or no other member): the timer sends them, as in the paper.
            self.completed[rid] = True
            return
        if len(peers) < need:
            self.host.counters["offset_commits_without_successors"] += 1
            self.completed[rid] = False
        else:
            self._commits[rid] = _Commit([(k, e.stamp) for k, e in zip(keys, entries,
                                                                       strict=True)],
                                         peers, need, now + self.commit_timeout_s)
        # At once to the first `need` ranks only; the others get them with the next timer
        # batch (gathered and deduplicated), and count for the commit too when they answer, so
        # a silent first rank delays commits by about one interval, not to their timeout.
        for p in peers[:need]:
            self._send(p, now)

    def _settle_commits(self) -> None:
        held = self.host.offsets.holds
        for rid, c in list(self._commits.items()):
            if sum(1 for p in c.peers if held(p, c.items)) >= c.required:
                del self._commits[rid]
                self.completed[rid] = True

    # --- pulls ------------------------------------------------------------------------------
    def _check_view(self, now: float) -> None:
        v = self.host.members.live_version
        if v == self._live_version:
            return
        self._live_version = v
        self._pulled.clear()
        # Pulls asked of the old view's peers start again with the new view's.
        groups = list(self._pulls_out)
        self._pulls_out.clear()
        for group in groups:
            self.ensure_pulled(group, now)

    def is_pulled(self, group: str, now: float) -> bool:
        self._check_view(now)
        return group in self._pulled

    def ensure_pulled(self, group: str, now: float) -> bool:
        """Whether ``group`` may be served; if not, a pull is under way (``loaded`` names the
        group when it is done)."""
        self._check_view(now)
        if group in self._pulled:
            return True
        if group in self._pulls_out:
            return False
        peers = set(self.replica_peers(group))
        if not peers:
            self._pulled.add(group)
            self.loaded.append(group)
            return True
        self._pull_rid = (self._pull_rid + 1) & 0xFFFFFFFF or 1
        pull = _Pull(self._pull_rid, peers, now)
        self._pulls_out[group] = pull
        self.host.counters["offset_pulls"] += 1
        self._send_pull(group, pull, now)
        return False

    def _send_pull(self, group: str, pull: _Pull, now: float) -> None:
        pull.sent = now
        msg = encode_message(OffsetsPull(pull.rid, group))
        for n in pull.waiting:
            m = self.host.members.get(n)
            if m is not None:
                self.host.send_packet(m.gossip_addr, msg, piggyback=False)

    def _finish(self, group: str) -> None:
        del self._pulls_out[group]
        self._pulled.add(group)
        self.loaded.append(group)

    def _pull_tick(self, now: float) -> None:
        self._check_view(now)
        members = self.host.members
        for group, pull in list(self._pulls_out.items()):
            for n in list(pull.waiting):
                m = members.get(n)
                if m is None or not m.live:
                    pull.waiting.discard(n)  # it can neither answer nor hold anything new
            if not pull.waiting:
                self._finish(group)
            elif now - pull.sent >= self.interval_s:
                self._send_pull(group, pull, now)

    def on_pull(self, msg: OffsetsPull, sender: int, addr: Addr, now: float) -> None:
        """A coordinator pulls a group: send it the group's entries, answer once it holds them."""
        host = self.host
        m = host.members.get(sender)
        if m is None or not m.live or m.gossip_addr != addr:
            host.counters["dropped_offsets_from_non_member"] += 1
            return
        t = host.offsets
        keys = list(t.group_keys(msg.group))
        held = t.held.get(sender)
        if held is not None:
            for k in keys:  # it may have restarted: it holds only what it acknowledges now
                held.pop(k, None)
        t.mark_dirty(keys, [sender])
        if len(self._pulls_in) >= _MAX_PULLS_IN:
            self._pulls_in.pop(next(iter(self._pulls_in)))  # the oldest: it will ask again
        self._pulls_in[(sender, msg.rid)] = [(k, t.entries[k].stamp) for k in keys]
        self._send(sender, now)
        self._answer_pulls(sender)

    def _answer_pulls(self, peer: int) -> None:
        holds = self.host.offsets.holds
        for (p, rid), items in list(self._pulls_in.items()):
            if p != peer or (items and not holds(peer, items)):
                continue
            del self._pulls_in[(p, rid)]
            m = self.host.members.get(peer)
            if m is not None and m.live:
                self.host.send_packet(m.gossip_addr, encode_message(OffsetsPulled(rid)),
                                      piggyback=False)

    def on_pulled(self, msg: OffsetsPulled, sender: int) -> None:
        for group, pull in self._pulls_out.items():
            if pull.rid == msg.rid:
                pull.waiting.discard(sender)
                if not pull.waiting:
                    self._finish(group)
                return

    # --- the timer and the batches ----------------------------------------------------------
    def tick(self, now: float) -> None:
        """Every tick: pulls and commit deadlines (the batches have their own interval)."""
        if self._pulls_out:
            self._pull_tick(now)
        for rid, c in list(self._commits.items()):
            if now >= c.deadline:
                del self._commits[rid]
                self.host.counters["offset_commits_timed_out"] += 1
                self.completed[rid] = False
        if self._pulls_in:
            for key in list(self._pulls_in):
                m = self.host.members.get(key[0])
                if m is None or not m.live:
                    del self._pulls_in[key]

    def next_deadline(self) -> float:
        d = float("inf")
        if self._pulls_out:
            d = min(p.sent for p in self._pulls_out.values()) + self.interval_s
        if self._commits:
            d = min(d, min(c.deadline for c in self._commits.values()))
        return d

    def replicate(self, now: float) -> None:
        """Send every live replica peer the entries it has not acknowledged yet."""
        host = self.host
        t = host.offsets
        if not t.entries:
            return
        if self._members_version != host.members.version:
            # Membership changed: successors may be new (or a coordinator came back); offer
            # every group's entries to its current top ranks. Merges are idempotent.
            self._members_version = host.members.version
            for g in t.groups():
                t.mark_dirty(t.group_keys(g), self.replica_peers(g))
        t.expire_inflight(now, 2 * self.interval_s)
        for peer in list(t.dirty):
            self._send(peer, now)

    def _send(self, peer: int, now: float) -> None:
        host = self.host
        t = host.offsets
        m = host.members.get(peer)
        if m is None or not m.live:
            t.dirty.pop(peer, None)  # re-offered when it comes back (membership change)
            return
        entries = t.take_dirty(peer)
        if not entries:
            return
        room = host.packet_room(1 + 4 + 2)
        for chunk in chunk_offset_entries(entries, room=room):
            batch = t.new_batch(peer, now, [e for e, _ in chunk])
            msg = encode_offsets_raw(batch, [b for _, b in chunk])
            host.send_packet(m.gossip_addr, msg, piggyback=False)
            host.counters["offset_batches_out"] += 1

    def on_offsets(self, msg: Offsets, sender: int, addr: Addr) -> None:
        """A batch from a coordinator: merged and acknowledged, if every entry is valid."""
        host = self.host
        m = host.members.get(sender)
        if m is None or not m.live or m.gossip_addr != addr:
            host.counters["dropped_offsets_from_non_member"] += 1
            return
        for e in msg.entries:
            problem = offset_problem(e)
            if problem is not None:
                # Unacknowledged: a sender bug, not loss.
                host.counters[f"dropped_invalid_{problem}"] += 1
                return
        host.offsets.merge(msg.entries)
        host.send_packet(addr, encode_message(OffsetsAck(msg.batch)), piggyback=False)

    def on_ack(self, msg: OffsetsAck, sender: int) -> None:
        if self.host.offsets.acked(sender, msg.batch):
            if self._commits:
                self._settle_commits()
            if self._pulls_in:
                self._answer_pulls(sender)
