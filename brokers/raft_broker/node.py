"""``RaftDriver``: a ``RaftNode`` run on asyncio, its storage and its transport.

The sans-IO core (raft/core.py) decides; this drives it: a tick every ``tick_s``, every
message the transport delivers stepped in, and after anything that may have changed the node,
one pass of its Ready in the order the core requires (persist the snapshot, the entries and the
vote, durably; then send; then apply; then ``advance``). The state machine above it (the
metadata image, for the coordinator) is three callables: ``apply`` a committed entry's data,
``snapshot`` the state, ``restore`` it from a snapshot.

A proposal is awaited to its fate: ``propose`` returns what ``apply`` returned for it once the
entry commits and is applied here, or raises ``ProposalLost`` when another entry took its index
(the leader lost its term before it committed), ``NotLeader`` (with the leader it knows) when
this node does not lead. ``read`` is a linearizable read barrier (ReadIndex): it returns once
this node's state has applied everything committed when the read was asked.

The transport carries two channels, told apart by a message's first byte: Raft's own messages
(``RAFT``) and the layer above's (``CONTROL``: the coordinator's requests to the leader and
their answers), so a broker reaches the controller on the connections the quorum already
keeps, authenticated the same way.

Fail-stop: an exception while driving the node (a write or fsync refused by the disk, a bug)
leaves it in a state nothing can vouch for, so the node stops taking part (no more ticks,
messages or answers; its connections closed) and ``on_failure`` tells the layer above, which
halts the broker (the core's data-directory failure path). Its peers see a crashed node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from brokers.raft_broker.raft.config import RaftConfig
from brokers.raft_broker.raft.core import NotLeader, RaftNode, Ready
from brokers.raft_broker.raft.messages import RaftDecodeError, decode, encode
from brokers.raft_broker.storage import RaftStorage
from brokers.raft_broker.transport import Transport

__all__ = ["NodeFailed", "NotLeader", "ProposalLost", "RaftDriver", "ReadFailed"]

log = logging.getLogger("twinbench.raft")


# A transport message's first byte: whose it is.
RAFT = b"\x00"
CONTROL = b"\x01"


class ProposalLost(Exception):
    """The proposal's index was taken by another entry: it will never commit."""


class ReadFailed(Exception):
    """The read could not be confirmed here (the node stopped leading): ask the leader."""


class NodeFailed(ProposalLost, ReadFailed):
    """The node stopped after a failure (``RaftDriver.failure``): nothing more is decided."""


class RaftDriver:
    def __init__(self, node_id: int, voters: Sequence[int], learners: Sequence[int], *,
                 directory: Path, listen: tuple[str, int],
                 peers: Mapping[int, tuple[str, int]], key: bytes | None,
                 apply: Callable[[int, bytes], Any], snapshot: Callable[[], bytes],
                 restore: Callable[[bytes], None], config: RaftConfig | None = None,
                 tick_s: float = 0.05, rng: random.Random | None = None,
                 on_control: Callable[[int, bytes], None] | None = None,
                 on_failure: Callable[[str, BaseException], object] | None = None,
                 cluster_id: str = "twinbench") -> None:
        self.storage = RaftStorage(directory, cluster_id)
        self.node = RaftNode(node_id, voters, learners=learners, config=config, rng=rng,
                             hard_state=self.storage.hard_state,
                             entries=self.storage.entries, snapshot=self.storage.snapshot)
        self.transport = Transport(node_id, listen, peers, key, self._receive,
                                   cluster_id=cluster_id)
        self.tick_s = tick_s
        self._apply = apply
        self._on_control = on_control
        self._snapshot = snapshot
        self._restore = restore
        # index -> (term, future) of this node's proposals awaiting their entry's fate.
        self._proposals: dict[int, tuple[int, asyncio.Future[Any]]] = {}
        self._reads: dict[int, asyncio.Future[int]] = {}
        self._read_ids = 0
        self._ticker: asyncio.Task[None] | None = None
        self._scheduled = False
        self._seen: tuple[int, int | None] = (-1, None)
        self.undecodable = 0
        self._on_failure = on_failure
        # Why the node stopped (fail-stop), None while it runs.
        self.failure: str | None = None
        if self.storage.snapshot is not None:
            restore(self.storage.snapshot.data)

    @property
    def port(self) -> int:
        return self.transport.port

    @property
    def leader(self) -> int | None:
        """The leader this node knows of (itself when it leads), None while it knows none."""
        return self.node.leader_id

    def send_control(self, dst: int, payload: bytes) -> None:
        """A message of the layer above to node ``dst``: may be lost, never blocks."""
        self.transport.send(dst, CONTROL + payload)

    async def start(self) -> None:
        await self.transport.start()
        self._ticker = asyncio.get_running_loop().create_task(
            self._tick(), name=f"raft-ticks-{self.node.id}")

    async def close(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
        await self.transport.close()
        self.storage.close()
        for _, fut in self._proposals.values():
            if not fut.done():
                fut.set_exception(ProposalLost("the node stopped"))
        for fut in self._reads.values():
            if not fut.done():
                fut.set_exception(ReadFailed("the node stopped"))

    # --- the caller's API -------------------------------------------------------------------
    async def propose(self, data: bytes) -> Any:
        """``apply``'s result for ``data`` once committed and applied here."""
        self._check()
        index = self.node.propose(data)  # NotLeader propagates
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        earlier = self._proposals.get(index)
        if earlier is not None and not earlier[1].done():
            # Proposed at this index in an earlier term and overwritten since, before its
            # fate was applied here: it never commits.
            earlier[1].set_exception(ProposalLost(f"entry {index} was overwritten"))
        self._proposals[index] = (self.node.term, fut)
        self._schedule()
        return await fut

    async def read(self) -> int:
        """Wait until this node (the leader) has applied every entry committed now; the index."""
        self._check()
        self._read_ids += 1
        rid = self._read_ids
        self.node.read_index(rid)  # NotLeader propagates
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._reads[rid] = fut
        self._schedule()
        return await fut

    # --- driving the node -------------------------------------------------------------------
    def _check(self) -> None:
        if self.failure is not None:
            raise NodeFailed(f"the Raft node stopped: {self.failure}")

    def _fail(self, what: str, exc: BaseException) -> None:
        """Stop taking part (fail-stop) and say why, once."""
        if self.failure is not None:
            return
        self.failure = f"{what}: {exc!r}"
        log.critical("node %d stops: %s", self.node.id, self.failure, exc_info=exc)
        if self._ticker is not None and self._ticker is not asyncio.current_task():
            self._ticker.cancel()
        asyncio.get_running_loop().create_task(self.transport.close())
        failed = NodeFailed(self.failure)
        for _, fut in self._proposals.values():
            if not fut.done():
                fut.set_exception(failed)
        for fut in self._reads.values():
            if not fut.done():
                fut.set_exception(failed)
        self._proposals.clear()
        self._reads.clear()
        if self._on_failure is not None:
            self._on_failure(f"the Raft node of {self.storage.dir}", exc)

    async def _tick(self) -> None:
        while self.failure is None:
            await asyncio.sleep(self.tick_s)  # the logical clock's period
            try:
                self.node.tick()
            except Exception as exc:
                self._fail("a tick", exc)
                return
            self._process()

    def _receive(self, src: int, data: bytes) -> None:
        if self.failure is not None:
            return
        channel, data = data[:1], data[1:]
        if channel == CONTROL and self._on_control is not None:
            self._on_control(src, data)
            return
        if channel != RAFT:
            self.undecodable += 1
            return
        try:
            msg = decode(data)
        except RaftDecodeError:
            self.undecodable += 1
            return
        if msg.src != src:
            self.undecodable += 1  # a message speaking for another node than its connection
            return
        try:
            self.node.step(msg)
        except Exception as exc:
            self._fail(f"a message from node {src}", exc)
            return
        self._schedule()

    def _schedule(self) -> None:
        """Handle the node's Ready soon, once for everything this loop iteration changed."""
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._process)

    def _process(self) -> None:
        self._scheduled = False
        if self.failure is not None:
            return
        try:
            while self.node.has_ready():
                self._handle(self.node.ready())
        except Exception as exc:
            # OSError: the disk refused a write or an fsync. Anything else: a bug. Either
            # way what is on disk and what was sent may disagree: stop here.
            self._fail("handling a Ready", exc)
            return
        seen = (self.node.term, self.node.leader_id)
        if seen != self._seen:
            # Rare (elections), and what a reader of a broker's log after a fault needs first.
            self._seen = seen
            log.info("node %d: term %d, leader %s, %s", self.node.id, seen[0], seen[1],
                     self.node.role)

    def _handle(self, ready: Ready) -> None:
        # 0. A snapshot from the leader is restored before it is kept: one no state machine
        # can read (a bug; the sender is authenticated) stops this node (``_fail``) with its
        # directory still holding the state it had, never one it cannot start from.
        if ready.snapshot is not None:
            self._restore(ready.snapshot.data)
        # 1. Durable first: a vote or an acknowledged entry must survive a crash.
        if ready.snapshot is not None:
            self.storage.save_snapshot(ready.snapshot, replaces_log=True)
        self.storage.append(ready.entries)
        if ready.hard_state is not None:
            self.storage.save_hard_state(ready.hard_state)
        # 2. Then send.
        for m in ready.messages:
            self.transport.send(m.dst, RAFT + encode(m))
        # 3. Apply (a snapshot was restored above).
        if ready.snapshot is not None:
            for index in [i for i in self._proposals if i <= ready.snapshot.index]:
                _, fut = self._proposals.pop(index)
                if not fut.done():  # its fate is inside a snapshot: unknown here
                    fut.set_exception(ProposalLost("overtaken by a snapshot"))
        for entry in ready.committed:
            # Empty entries too (a new leader's): a read barrier may wait for one.
            result = self._apply(entry.index, entry.data)
            waiting = self._proposals.pop(entry.index, None)
            if waiting is not None and not waiting[1].done():
                term, fut = waiting
                if term == entry.term:
                    fut.set_result(result)
                else:
                    fut.set_exception(ProposalLost(f"entry {entry.index} is of term "
                                                   f"{entry.term}, not {term}"))
        for rs in ready.reads:
            read = self._reads.pop(rs.read_id, None)
            if read is not None and not read.done():
                read.set_result(rs.index)
        for rid in ready.failed_reads:
            read = self._reads.pop(rid, None)
            if read is not None and not read.done():
                read.set_exception(ReadFailed("this node stopped leading"))
        self.node.advance(ready)
        # 4. Compaction: the state machine's snapshot in place of the applied entries.
        if self.node.should_compact:
            index = self.node.applied
            self.node.compact(index, self._snapshot())
            snap = self.node.snapshot
            assert snap is not None
            self.storage.save_snapshot(snap, replaces_log=False)
