"""TxnReplication: transaction records carried to every member, held by a peer before a write
is acknowledged, and pulled after view changes (sans-IO).

A transactional id's coordinator (the top rendezvous rank of its placement key over the live
members) writes the id's record into its own table (``tables/transactions.py``), then ``write``
sends it at once to every live peer. Each peer merges it (the higher version wins) and answers
TXN_ACK with the version it then holds. Three rules make the coordinator's death lose nothing
it acknowledged:

* **A write is acknowledged once a peer holds it.** ``write`` completes (``completed[rid]``)
  when ``required`` peers have acknowledged the record: ``write_acks`` (the offsets' setting,
  default 1) capped by the other members this broker has ever known, so a broker alone writes
  alone and a broker that sees no peer cannot write. Any live peer counts: every member
  receives every record, and the next coordinator pulls from every live peer (below) before it
  serves, so one surviving holder is enough. A peer that answers with a higher version by
  another writer means another broker coordinates the id too: the write fails as superseded.
  A write that failed otherwise (no peer in time) stays in the table and keeps being sent, but
  ``serves`` refuses the id until a peer holds it: the core, reading the record again after the
  failure, must not act on a decision only this broker holds (start the markers of a
  PREPARE_COMMIT that its successor would not know of).
* **A member whose view of the live members changed pulls before it serves.** A death, a join
  or a return can make it an id's coordinator, and its own start leaves it with only its file.
  So ``ensure_pulled`` asks every live peer (TXN_PULL); each sends the records the puller has
  not acknowledged to it in this run of the puller's process, and answers TXN_PULLED once the
  puller acknowledged all of them. The coordinator serves transactions again once every peer
  asked has answered or is seen dead. The holders of an acknowledged write are its writer and
  a peer; whichever is alive answers the pull.
* **What is not acknowledged is sent again.** A record sent and not acknowledged within two
  intervals is sent again, to every live member, as the same batch while it is still the id's
  newest (so the receiver fills in the pieces it lacks from each sending, and a lost
  acknowledgement is answered again), as a new batch once a newer record replaced it. Records
  for a dead member wait for its pull when it returns.

A record can outgrow a datagram (it lists every partition of its transaction), so it travels as
``encode_txn_entry`` bytes cut into TXN_PART pieces that each fit one, numbered as one batch of
the sender's run; the receiver joins them (a bounded number of batches at once, each bounded by
``GossipLimits.max_transaction_bytes``, abandoned after a few intervals without a new piece)
before it checks and merges the record, and acknowledges the batch. Pieces are taken only from
a live member at its own gossip address, as offsets are.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from dataclasses import dataclass
from typing import Protocol

from brokers.dsbs_broker.config import GossipLimits
from brokers.dsbs_broker.packets.wire import (
    TXN_PART_OVERHEAD,
    Status,
    TxnAck,
    TxnEntry,
    TxnPart,
    TxnPull,
    TxnPulled,
    WireError,
    decode_txn_entry,
    encode_message,
    encode_txn_entry,
    encode_txn_part,
)
from brokers.dsbs_broker.tables.members import MemberTable
from brokers.dsbs_broker.tables.transactions import TxnTable, writer_of
from brokers.dsbs_broker.tables.validation import MAX_TRANSACTIONAL_ID_BYTES, txn_problem

Addr = tuple[str, int]

# Batches being reassembled at once; the oldest goes first (its sender sends it again).
_MAX_ASSEMBLIES = 256
# A piece of a legitimate sender carries at least this many bytes (a 512-byte packet minus
# headers and an HMAC), so a batch claiming more pieces than its size allows is refused before
# anything is allocated for it.
_MIN_PIECE = 256
# Pulls answered at once at most (a flood of pulls must not grow a table without bound).
_MAX_PULLS_IN = 4096
# encode_txn_entry's bytes around a record: the id's length, the version, the record's length.
_ENTRY_OVERHEAD = 2 + 8 + 4


class TxnHost(Protocol):
    """What transaction replication needs from the gossip node (``SwimNode``)."""

    node_id: int
    members: MemberTable
    transactions: TxnTable
    limits: GossipLimits
    counters: defaultdict[str, int]

    def packet_room(self, message_len: int) -> int: ...

    def send_packet(self, addr: Addr, message: bytes, extra: list[bytes] | None = None, *,
                    piggyback: bool = True, pad: bool = False) -> bool: ...


class WriteOutcome(enum.Enum):
    HELD = "held"  # the required peers hold it: acknowledge the write
    TIMED_OUT = "timed_out"  # not held in time (it may still spread)
    NO_PEERS = "no_peers"  # fewer live peers than the write needs
    SUPERSEDED = "superseded"  # a peer holds a newer record of another writer


@dataclass
class _Write:
    transactional_id: str
    version: int
    required: int
    deadline: float


@dataclass
class _Assembly:
    pieces: list[bytes | None]
    missing: int
    size: int
    touched: float  # when its last new piece came


@dataclass
class _Batch:
    peer: int
    transactional_id: str
    version: int
    sent: float


@dataclass
class _Pull:
    rid: int
    waiting: set[int]  # peers yet to answer
    sent: float
    live_version: int  # the member table's live set it was asked for


@dataclass
class _Held:
    boot: int  # the peer's run (packet header) the acknowledgements came from
    versions: dict[str, int]


class TxnReplication:
    def __init__(self, host: TxnHost, *, interval_s: float, write_acks: int = 1,
                 write_timeout_s: float = 5.0) -> None:
        self.host = host
        # Unacknowledged records are sent again after two of these; pulls asked again after one.
        self.interval_s = interval_s
        self.write_acks = write_acks
        self.write_timeout_s = write_timeout_s
        self._batch = 0
        # Ids whose newest record is still to be sent, per peer.
        self.dirty: dict[int, set[str]] = {}
        # Records sent and not yet acknowledged, by batch, and the batch of each (peer, id).
        self.inflight: dict[int, _Batch] = {}
        self._batch_of: dict[tuple[int, str], int] = {}
        # Per peer, the newest version of each id it acknowledged in its current run.
        self._held: dict[int, _Held] = {}
        self._writes: dict[int, _Write] = {}
        self.completed: dict[int, WriteOutcome] = {}
        # Ids whose last write here was not held in time: id -> that write's version.
        self._unheld: dict[str, int] = {}
        self._assemblies: dict[tuple[int, int, int], _Assembly] = {}
        self._pull: _Pull | None = None
        self._pull_rid = 0
        self._pulled_version = -1  # the live set the last finished pull was for
        # A pull finished since the coordinator last looked (it wakes the requests waiting).
        self.loaded = False
        # Pulls we answer: (puller, its request id) -> the records it must acknowledge first.
        self._pulls_in: dict[tuple[int, int], list[tuple[str, int]]] = {}
        self._next_check = 0.0

    # --- writes -------------------------------------------------------------------------------
    def required(self) -> int:
        """Peers that must hold a write before it is acknowledged (see the module docstring)."""
        known = sum(1 for m in self.host.members.members.values() if m.status != Status.LEFT)
        return max(0, min(self.write_acks, known - 1))

    def write(self, rid: int, entry: TxnEntry, now: float) -> None:
        """Send a record just written to the local table to every live peer; ``completed[rid]``
        says when ``required()`` of them hold it, or why not."""
        host = self.host
        host.counters["txn_writes"] += 1
        peers = [m.node_id for m in host.members.live_peers()]
        tid = entry.transactional_id
        for p in peers:
            self.dirty.setdefault(p, set()).add(tid)
        need = self.required()
        w = self._writes[rid] = _Write(tid, entry.version, need, now + self.write_timeout_s)
        if need == 0:
            self._complete(rid, w, WriteOutcome.HELD)  # alone, or lazy (write_acks=0)
        elif len(peers) < need:
            host.counters["txn_writes_without_peers"] += 1
            self._complete(rid, w, WriteOutcome.NO_PEERS)
        for p in peers:
            self._send(p, now)

    def _holders(self, tid: str, version: int) -> tuple[int, bool]:
        """(live peers holding our write ``version`` of ``tid`` or a later one of ours, whether
        one holds a newer record of another writer)."""
        members = self.host.members
        me = self.host.node_id
        holders = 0
        superseded = False
        for peer, held in self._held.items():
            m = members.get(peer)
            if m is None or not m.live:
                continue
            v = held.versions.get(tid, -1)
            if v == version or (v > version and writer_of(v) == me):
                holders += 1
            elif v > version:
                superseded = True
        return holders, superseded

    def _settle_writes(self) -> None:
        for rid, w in list(self._writes.items()):
            holders, superseded = self._holders(w.transactional_id, w.version)
            if superseded:
                self.host.counters["txn_writes_superseded"] += 1
                self._complete(rid, w, WriteOutcome.SUPERSEDED)
            elif holders >= w.required:
                self._complete(rid, w, WriteOutcome.HELD)

    def _complete(self, rid: int, w: _Write, outcome: WriteOutcome) -> None:
        del self._writes[rid]
        self.completed[rid] = outcome
        if outcome in (WriteOutcome.TIMED_OUT, WriteOutcome.NO_PEERS):
            self._unheld[w.transactional_id] = w.version

    def serves(self, transactional_id: str) -> bool:
        """May the id's record be served here? Not while it is a write of ours that failed to
        reach a peer and no peer holds yet (see the module docstring)."""
        version = self._unheld.get(transactional_id)
        if version is None:
            return True
        if (self.host.transactions.version(transactional_id) != version
                or self._holders(transactional_id, version)[0] >= self.required()):
            del self._unheld[transactional_id]  # replaced, or held by now
            return True
        return False

    # --- sending ------------------------------------------------------------------------------
    def _held_by(self, peer: int, boot: int | None = None) -> dict[str, int]:
        """What ``peer`` acknowledged in its run ``boot`` (None: the last run heard from); a
        new run starts empty: a restarted broker holds only what its file kept."""
        held = self._held.get(peer)
        if held is None or (boot is not None and held.boot != boot):
            held = self._held[peer] = _Held(boot if boot is not None else -1, {})
        return held.versions

    def _send(self, peer: int, now: float) -> None:
        host = self.host
        m = host.members.get(peer)
        tids = self.dirty.pop(peer, set())
        if m is None or not m.live or not tids:
            return  # a dead member pulls what it lacks when it returns
        held = self._held_by(peer)
        table = host.transactions
        for tid in sorted(tids):
            e = table.get(tid)
            if e is None or held.get(tid, -1) >= e.version:
                continue
            sending = self.inflight.get(self._batch_of.get((peer, tid), 0))
            if sending is not None and sending.version == e.version:
                continue  # already on its way; the retry timer sends it again if need be
            self._batch = (self._batch + 1) & 0xFFFFFFFF or 1
            self._forget((peer, tid))
            self.inflight[self._batch] = _Batch(peer, tid, e.version, now)
            self._batch_of[(peer, tid)] = self._batch
            self._send_entry(self._batch, m.gossip_addr, e)

    def _forget(self, key: tuple[int, str]) -> None:
        batch = self._batch_of.pop(key, None)
        if batch is not None:
            self.inflight.pop(batch, None)

    def _send_entry(self, batch: int, addr: Addr, e: TxnEntry) -> None:
        host = self.host
        data = encode_txn_entry(e)
        room = host.packet_room(TXN_PART_OVERHEAD)
        parts = -(-len(data) // room) if room > 0 else 0
        if not 0 < parts <= 0xFFFF:
            host.counters["txn_records_unsendable"] += 1  # never, within the limits
            return
        for i in range(parts):
            msg = encode_txn_part(batch, i, parts, data[i * room:(i + 1) * room])
            host.send_packet(addr, msg, piggyback=False)
        host.counters["txn_records_out"] += 1
        host.counters["txn_parts_out"] += parts

    # --- receiving ----------------------------------------------------------------------------
    def _from_member(self, sender: int, addr: Addr) -> bool:
        m = self.host.members.get(sender)
        if m is None or not m.live or m.gossip_addr != addr:
            self.host.counters["dropped_txn_from_non_member"] += 1
            return False
        return True

    def on_part(self, msg: TxnPart, sender: int, boot: int, addr: Addr, now: float) -> None:
        """A piece of a record; once the batch is whole: checked, merged, acknowledged."""
        host = self.host
        if not self._from_member(sender, addr):
            return
        max_bytes = host.limits.max_transaction_bytes + MAX_TRANSACTIONAL_ID_BYTES \
            + _ENTRY_OVERHEAD
        key = (sender, boot, msg.batch)
        a = self._assemblies.get(key)
        if a is None:
            if msg.parts > max_bytes // _MIN_PIECE + 1:
                host.counters["dropped_invalid_txn_size"] += 1
                return
            if len(self._assemblies) >= _MAX_ASSEMBLIES:
                del self._assemblies[next(iter(self._assemblies))]
                host.counters["dropped_txn_assemblies_full"] += 1
            a = self._assemblies[key] = _Assembly([None] * msg.parts, msg.parts, 0, now)
        elif len(a.pieces) != msg.parts:
            del self._assemblies[key]
            host.counters["dropped_invalid_txn_pieces"] += 1
            return
        if a.pieces[msg.part] is None:
            a.size += len(msg.data)
            if a.size > max_bytes:
                del self._assemblies[key]
                host.counters["dropped_invalid_txn_size"] += 1
                return
            a.pieces[msg.part] = msg.data
            a.missing -= 1
            a.touched = now
        if a.missing:
            return
        del self._assemblies[key]
        try:
            e = decode_txn_entry(b"".join(p for p in a.pieces if p is not None))
        except WireError as exc:
            host.counters[f"dropped_txn_{exc.reason}"] += 1
            return
        problem = txn_problem(e, host.limits)
        if problem is not None:
            host.counters[f"dropped_invalid_{problem}"] += 1  # unacknowledged: a sender bug
            return
        table = host.transactions
        tid = e.transactional_id
        if not table.has_room(tid):
            host.counters["dropped_transactions_full"] += 1
            return
        if table.merge(e):
            host.counters["txn_records_in"] += 1
        held = table.version(tid)
        host.send_packet(addr, encode_message(TxnAck(msg.batch, held)), piggyback=False)
        if held > e.version:
            # The sender's record lost to ours (another writer's, or newer): it gets ours, so
            # the two meet on both sides whoever wrote last.
            self.dirty.setdefault(sender, set()).add(tid)

    def on_ack(self, msg: TxnAck, sender: int, boot: int) -> None:
        got = self.inflight.get(msg.batch)
        if got is None or got.peer != sender or msg.version < got.version:
            return  # not ours, or not an answer a member that merged the record could give
        tid = got.transactional_id
        self._forget((sender, tid))
        held = self._held_by(sender, boot)
        if held.get(tid, -1) < msg.version:
            held[tid] = msg.version
        if self._writes:
            self._settle_writes()
        if self._pulls_in:
            self._answer_pulls(sender)

    # --- pulls --------------------------------------------------------------------------------
    def is_pulled(self) -> bool:
        return self._pulled_version == self.host.members.live_version

    def ensure_pulled(self, now: float) -> bool:
        """Whether transactions may be served; if not, a pull is under way (``loaded`` says
        when one finished)."""
        host = self.host
        live_version = host.members.live_version
        if self._pulled_version == live_version:
            return True
        p = self._pull
        if p is not None and p.live_version == live_version:
            return False
        peers = {m.node_id for m in host.members.live_peers()}
        self._pull_rid = (self._pull_rid + 1) & 0xFFFFFFFF or 1
        p = self._pull = _Pull(self._pull_rid, peers, now, live_version)
        if not peers:
            self._finish(p)
            return True
        host.counters["txn_pulls"] += 1
        self._send_pull(p, now)
        return False

    def _send_pull(self, p: _Pull, now: float) -> None:
        p.sent = now
        msg = encode_message(TxnPull(p.rid))
        for n in p.waiting:
            m = self.host.members.get(n)
            if m is not None:
                self.host.send_packet(m.gossip_addr, msg, piggyback=False)

    def _finish(self, p: _Pull) -> None:
        self._pull = None
        self._pulled_version = p.live_version
        self.loaded = True

    def on_pull(self, msg: TxnPull, sender: int, boot: int, addr: Addr) -> None:
        """A member pulls: send it every record it has not acknowledged in this run of its
        process, answer TXN_PULLED once it has (at once if nothing is missing)."""
        if not self._from_member(sender, addr):
            return
        held = self._held_by(sender, boot)
        items = [(tid, e.version) for tid, e in self.host.transactions.entries.items()
                 if held.get(tid, -1) < e.version]
        if items:
            self.dirty.setdefault(sender, set()).update(tid for tid, _ in items)
        if len(self._pulls_in) >= _MAX_PULLS_IN:
            del self._pulls_in[next(iter(self._pulls_in))]  # the oldest: it will ask again
        self._pulls_in[(sender, msg.rid)] = items
        self._answer_pulls(sender)

    def _answer_pulls(self, peer: int) -> None:
        held = self._held_by(peer)
        for (p, rid), items in list(self._pulls_in.items()):
            if p != peer or any(held.get(tid, -1) < v for tid, v in items):
                continue
            del self._pulls_in[(p, rid)]
            m = self.host.members.get(peer)
            if m is not None and m.live:
                self.host.send_packet(m.gossip_addr, encode_message(TxnPulled(rid)),
                                      piggyback=False)

    def on_pulled(self, msg: TxnPulled, sender: int) -> None:
        p = self._pull
        if p is not None and p.rid == msg.rid:
            p.waiting.discard(sender)
            if not p.waiting:
                self._finish(p)

    # --- the timer ----------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        """Write deadlines, the retry timer, pulls, and what is waiting to be sent."""
        if self._writes:
            for rid, w in list(self._writes.items()):
                if now >= w.deadline:
                    self.host.counters["txn_writes_timed_out"] += 1
                    self._complete(rid, w, WriteOutcome.TIMED_OUT)
        p = self._pull
        if p is not None and p.live_version != self.host.members.live_version:
            # The live set moved during the pull: ask the new view's peers instead.
            self._pull = None
            self.ensure_pulled(now)
        if now >= self._next_check:
            self._next_check = now + self.interval_s
            self._retry(now)
        if self.dirty:
            for peer in list(self.dirty):
                self._send(peer, now)

    def _retry(self, now: float) -> None:
        host = self.host
        members = host.members
        for batch, b in list(self.inflight.items()):
            if now - b.sent < 2 * self.interval_s:
                continue
            m = members.get(b.peer)
            e = host.transactions.get(b.transactional_id)
            if m is None or not m.live:
                self._forget((b.peer, b.transactional_id))  # it pulls when it returns
            elif e is None or e.version != b.version:
                self._forget((b.peer, b.transactional_id))  # replaced: a new batch carries it
                self.dirty.setdefault(b.peer, set()).add(b.transactional_id)
            else:
                b.sent = now
                self._send_entry(batch, m.gossip_addr, e)
        for batch_key, a in list(self._assemblies.items()):
            if now - a.touched >= 4 * self.interval_s:
                del self._assemblies[batch_key]  # its sender stopped: dead, or it moved on
        for pull_key in list(self._pulls_in):
            m = members.get(pull_key[0])
            if m is None or not m.live:
                del self._pulls_in[pull_key]
        p = self._pull
        if p is not None:
            for n in list(p.waiting):
                m = members.get(n)
                if m is None or not m.live:
                    p.waiting.discard(n)  # it can neither answer nor hold anything newer
            if not p.waiting:
                self._finish(p)
            elif now - p.sent >= self.interval_s:
                self._send_pull(p, now)

    def next_deadline(self) -> float:
        d = float("inf")
        if self.inflight or self._assemblies or self._pull is not None or self._pulls_in:
            d = self._next_check
        if self._writes:
            d = min(d, min(w.deadline for w in self._writes.values()))
        return d
