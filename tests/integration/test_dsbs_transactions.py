"""The DSBS twin as a TransactionStore: three DsbsCoordinator instances in one process,
gossiping over loopback UDP (LOCAL preset), as in test_dsbs_coordinator.py.

A record written by the id's coordinator is read on every broker after gossip; a write on a
stale version, or by a broker that does not place the id, is refused with NOT_COORDINATOR; the
id's next coordinator, after the first one is killed right after a write, reads that write; a
restarted broker keeps its records and pulls the newer ones before it serves. The transaction
protocol itself, through real brokers and clients, is the contract suite's
(tests/contract/test_contract_transactions.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from brokers.core.errors import NotCoordinator
from brokers.core.transactions.coordinator import NO_VERSION, TransactionStore, placement_key
from brokers.dsbs_broker.coordinator import DsbsCoordinator
from brokers.dsbs_broker.packets.wire import Status
from tests.integration.test_dsbs_coordinator import InProcessCoordinators, _run, _until

pytestmark = pytest.mark.integration

TID = "orders-app-1"


async def _until_read(c: DsbsCoordinator, want: tuple[bytes | None, int], timeout: float,
                      what: str) -> None:
    start = time.monotonic()
    while (got := await c.read_transaction(TID)) != want:
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}: {got!r}")
        await asyncio.sleep(0.01)


def _placer(cl: InProcessCoordinators, among: DsbsCoordinator) -> DsbsCoordinator:
    return cl.coords[among.group_coordinator(placement_key(TID)).node_id]


async def _refused(call: Callable[[], Awaitable[int]]) -> str:
    with pytest.raises(NotCoordinator) as exc:
        await call()
    return str(exc.value)


def test_a_write_is_read_everywhere_and_stale_or_misplaced_writes_are_refused(tmp_path):
    async def scenario(cl: InProcessCoordinators) -> None:
        await cl.start_all()
        await _until(lambda: cl.converged({0, 1, 2}), 5, "membership")
        assert all(isinstance(c, TransactionStore) for c in cl.coords.values())
        coord = _placer(cl, cl.coords[0])
        assert all(_placer(cl, c) is coord for c in cl.live())
        others = [c for c in cl.live() if c is not coord]
        for c in cl.live():
            assert await c.read_transaction(TID) == (None, NO_VERSION)
            assert await c.list_transactions() == []

        why = await _refused(lambda: others[0].write_transaction(TID, b"r0", NO_VERSION))
        assert f"placed on broker {coord.node_id}" in why
        v1 = await coord.write_transaction(TID, b'{"state": "Ongoing"}', NO_VERSION)
        assert await coord.read_transaction(TID) == (b'{"state": "Ongoing"}', v1)
        # Acknowledged once a peer held it; every broker has it after gossip.
        assert any(c.node.transactions.version(TID) == v1 for c in others)
        for c in others:
            await _until_read(c, (b'{"state": "Ongoing"}', v1), 3, f"the record on {c.node_id}")
            assert await c.list_transactions() == [TID]

        # Conditional: NO_VERSION (absent) and any version but the stored one are refused.
        assert "not -1" in await _refused(
            lambda: coord.write_transaction(TID, b"stale", NO_VERSION))
        await _refused(lambda: coord.write_transaction(TID, b"stale", v1 + 1))
        v2 = await coord.write_transaction(TID, b'{"state": "PrepareCommit"}', v1)
        assert v2 > v1
        await _refused(lambda: coord.write_transaction(TID, b"stale", v1))
        # A broker that does not place the id is refused even with the current version.
        await _refused(lambda: others[1].write_transaction(TID, b"misplaced", v2))
        for c in others:
            await _until_read(c, (b'{"state": "PrepareCommit"}', v2), 3, "the second record")
        counters = coord.counters()
        assert counters.gossip_txn_writes == 2
        assert counters.gossip_txn_records_out >= 2 * len(others)
        assert sum(c.counters().gossip_txn_records_in for c in others) >= 2 * len(others)

    _run(tmp_path, scenario)


def test_the_next_coordinator_reads_the_write_its_killed_predecessor_acknowledged(tmp_path):
    async def scenario(cl: InProcessCoordinators) -> None:
        await cl.start_all()
        await _until(lambda: cl.converged({0, 1, 2}), 5, "membership")
        first = _placer(cl, cl.coords[0])
        record = b'{"state": "PrepareCommit", "partitions": ' + b"[0]" * 2000 + b"}"
        v1 = await first.write_transaction(TID, b'{"state": "Ongoing"}', NO_VERSION)
        v2 = await first.write_transaction(TID, record, v1)  # 6 KB: several datagrams
        await first.abort()  # at once, no goodbye: as a SIGKILL right after the ack
        dead = first.node_id
        await _until(lambda: all(c.node.members.get(dead).status == Status.DEAD
                                 for c in cl.live()), 5, "death detected")
        nxt = _placer(cl, cl.live()[0])
        assert nxt is not first
        # It pulls from the live peers before answering, whichever of them held the record.
        assert await nxt.read_transaction(TID) == (record, v2)
        v3 = await nxt.write_transaction(TID, b'{"state": "CompleteCommit"}', v2)

        # The old coordinator restarts with its file (PrepareCommit) and, once it is live
        # again, pulls the newer record before it serves: it places the id again.
        back = await cl.start(dead)
        await _until(lambda: cl.converged({0, 1, 2}), 5, "rejoin")
        assert back.node.transactions.version(TID) >= v2  # its file kept the records
        await _until_read(back, (b'{"state": "CompleteCommit"}', v3), 5, "the pull on return")
        assert _placer(cl, back) is back
        await _refused(lambda: nxt.write_transaction(TID, b"moved", v3))
        assert await back.write_transaction(TID, b'{"state": "Empty"}', v3) > v3

    _run(tmp_path, scenario)
