"""Transaction records across coordinator changes, in the seeded simulation (no I/O).

The store's part of issue 34: a write is acknowledged only once a peer holds it; the next
coordinator of an id, after the first one dies, finds the last record acknowledged, even when
only a broker other than itself received it (it pulls before serving); a broker that was down
pulls what it missed; records larger than a datagram travel in pieces, under loss; two
coordinators of one id (a partition) converge on one record once healed, and a write answered
with another coordinator's newer record fails. Each schedule names its seed.
"""

from __future__ import annotations

import pytest

from brokers.core.transactions.coordinator import placement_key
from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.gossip.simnet import SimNet
from brokers.dsbs_broker.gossip.swim import SwimNode
from brokers.dsbs_broker.gossip.txn_replication import WriteOutcome
from brokers.dsbs_broker.packets.wire import (
    Status,
    TxnEntry,
    TxnPart,
    encode_txn_entry,
)
from brokers.dsbs_broker.tables.transactions import NO_VERSION, next_version, writer_of
from tests.unit.brokers.dsbs_broker.gossip.test_hostile_input import ATTACKER, forge

TID = "payments"
SEEDS = (31, 32, 33)


class Store:
    """Writes as DsbsCoordinator makes them: pulled first, the conditional write into the
    local table, then the wait for a peer."""

    def __init__(self, net: SimNet) -> None:
        self.net = net
        self.rid = 0

    def pulled(self, node: SwimNode) -> bool:
        repl = node.txn_replication
        return repl.ensure_pulled(self.net.now) or self.net.run_until(
            repl.is_pulled, timeout_s=5) is not None

    def start(self, node: SwimNode, record: bytes, tid: str = TID) -> tuple[int, TxnEntry]:
        assert self.pulled(node), f"never pulled (seed {self.net._seed})"
        e = node.transactions.candidate(tid, record, node.transactions.version(tid))
        assert e is not None
        node.transactions.put(e)
        self.rid += 1
        node.txn_replication.write(self.rid, e, self.net.now)
        return self.rid, e

    def run(self, node: SwimNode, record: bytes, tid: str = TID,
            timeout_s: float = 10) -> WriteOutcome:
        rid, _ = self.start(node, record, tid)
        done = node.txn_replication.completed
        took = self.net.run_until(lambda: rid in done, timeout_s=timeout_s)
        assert took is not None, f"write never settled (seed {self.net._seed})"
        return done.pop(rid)


def _cluster(seed: int, *, acks: int = 1, n: int = 3, loss: float = 0.0) -> SimNet:
    print(f"seed {seed} acks {acks} n {n} loss {loss}")
    net = SimNet(GossipConfig.LOCAL, seed=seed, offset_commit_acks=acks, loss=loss)
    net.add_converged(n)
    return net


def _order(net: SimNet, among: SwimNode | None = None, tid: str = TID) -> list[int]:
    view = among or net.live_nodes()[0]
    return list(view.live_order(placement_key(tid)))


def _record(node: SwimNode, tid: str = TID) -> bytes | None:
    e = node.transactions.get(tid)
    return None if e is None else e.record


def _declared_dead(net: SimNet, dead: int) -> None:
    took = net.run_until(lambda: all(
        x.members.get(dead).status == Status.DEAD for x in net.live_nodes()), timeout_s=10)
    assert took is not None, f"death of {dead} not detected (seed {net._seed})"


def _views(net: SimNet, *sides: tuple[int, ...]) -> None:
    """Step until every member of each side sees exactly its side alive."""
    took = net.run_until(lambda: all(
        net.nodes[n].members.live_ids() == sorted(side) for side in sides for n in side),
        timeout_s=15)
    assert took is not None, f"views {sides} never reached (seed {net._seed})"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_write_is_held_by_a_peer_before_it_is_acknowledged_and_reaches_everyone(seed):
    net = _cluster(seed)
    store = Store(net)
    coord = net.nodes[_order(net)[0]]
    rid, e = store.start(coord, b"Ongoing")
    assert rid not in coord.txn_replication.completed  # a datagram there and one back first
    assert net.run_until(lambda: rid in coord.txn_replication.completed, timeout_s=5)
    assert coord.txn_replication.completed.pop(rid) is WriteOutcome.HELD
    assert any(n.transactions.get(TID) == e for n in net.nodes.values() if n is not coord)
    assert net.run_until(lambda: all(n.transactions.get(TID) == e for n in net.nodes.values()),
                         timeout_s=2)
    assert coord.counters["txn_writes"] == 1 and coord.counters["txn_records_out"] == 2


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("acks", [1, 0])
def test_the_next_coordinator_finds_the_last_acknowledged_record(seed, acks):
    """The issue's schedule: PREPARE_COMMIT stored, the coordinator dies at once. The id's next
    coordinator must see PREPARE_COMMIT (and finish the commit), not ONGOING (and abort it
    after some partitions got commit markers). With acks=1 the write returns once a peer holds
    it; here only the broker that will *not* coordinate next got it (the successor's link
    from the coordinator is cut), so the successor has it only through its pull. With acks=0
    (lazy) the coordinator dies before anything left it, and the successor sees ONGOING."""
    net = _cluster(seed, acks=acks)
    store = Store(net)
    coord_id, succ_id, third_id = _order(net)
    coord, succ = net.nodes[coord_id], net.nodes[succ_id]
    assert store.run(coord, b"Ongoing") is WriteOutcome.HELD
    assert net.run_until(lambda: _record(succ) == b"Ongoing", timeout_s=2)
    net.cut(coord_id, succ_id)
    if acks:
        assert store.run(coord, b"PrepareCommit") is WriteOutcome.HELD
        assert _record(succ) == b"Ongoing" and _record(net.nodes[third_id]) == b"PrepareCommit"
    else:
        rid, _ = store.start(coord, b"PrepareCommit")
        assert coord.txn_replication.completed.pop(rid) is WriteOutcome.HELD  # at once
    net.kill(coord_id)  # before anything else leaves it
    net.heal()
    _declared_dead(net, coord_id)
    assert _order(net, succ)[0] == succ_id
    assert store.pulled(succ), f"no pull (seed {seed})"
    if acks:
        assert _record(succ) == b"PrepareCommit", f"seed {seed}: acknowledged PrepareCommit, " \
                                                  f"successor holds {_record(succ)!r}"
    else:
        assert _record(succ) == b"Ongoing"  # the hole the acknowledgement closes


@pytest.mark.parametrize("seed", SEEDS)
def test_a_broker_that_was_down_pulls_what_it_missed_before_it_serves(seed):
    net = _cluster(seed)
    store = Store(net)
    coord_id, _, other_id = _order(net)
    coord = net.nodes[coord_id]
    assert store.run(coord, b"v1") is WriteOutcome.HELD
    assert net.run_until(lambda: _record(net.nodes[other_id]) == b"v1", timeout_s=2)
    net.kill(other_id)
    _declared_dead(net, other_id)
    for i in range(2, 5):
        assert store.run(coord, f"v{i}".encode()) is WriteOutcome.HELD
    back = net.restart(other_id, seeds=tuple(net.nodes))
    assert _record(back) == b"v1"  # what its file kept
    _views(net, tuple(net.nodes))
    assert store.pulled(back), f"no pull (seed {seed})"
    assert back.transactions.get(TID) == coord.transactions.get(TID)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_record_larger_than_a_datagram_travels_in_pieces_under_loss(seed):
    net = _cluster(seed, loss=0.15)
    store = Store(net)
    coord = net.nodes[_order(net)[0]]
    record = bytes(range(256)) * 80  # 20 KiB: some 16 pieces per peer
    assert store.run(coord, record, timeout_s=20) is WriteOutcome.HELD
    assert net.run_until(lambda: all(_record(n) == record for n in net.nodes.values()),
                         timeout_s=20), f"seed {seed}: a peer never reassembled the record"
    assert coord.counters["txn_parts_out"] >= 2 * 15


@pytest.mark.parametrize("seed", SEEDS)
def test_two_coordinators_in_a_partition_converge_on_one_record_once_healed(seed):
    """No consensus: each side of a partition has a coordinator of the id in its own view,
    and each writes. Once healed and pulled, every broker holds the same record, the one
    with more writes behind it (then the higher writer id), whichever side wrote last. (The
    coordinator's majority rule refuses both sides of this 2/2 split; the schedule stands for
    views that differ while each sees a majority, possible from five brokers on.)"""
    net = _cluster(seed, n=4)
    for n in net.nodes.values():
        n.seeds = tuple(SimNet.addr(i) for i in range(4) if i != n.node_id)  # to find again
    store = Store(net)
    assert store.run(net.nodes[_order(net)[0]], b"Ongoing") is WriteOutcome.HELD
    net.run_for(0.5)
    net.partition({0, 1}, {2, 3})
    _views(net, (0, 1), (2, 3))
    coords = [net.nodes[_order(net, net.nodes[side[0]])[0]] for side in ((0, 1), (2, 3))]
    assert coords[0].node_id in (0, 1) and coords[1].node_id in (2, 3)
    writes = {coords[0].node_id: 1, coords[1].node_id: 2}
    for c in coords:
        for i in range(writes[c.node_id]):
            assert store.run(c, f"{c.node_id}-{i}".encode()) is WriteOutcome.HELD
    winner = max((c.transactions.get(TID) for c in coords), key=lambda e: e.version)
    assert writer_of(winner.version) == coords[1].node_id  # two writes beat one
    net.heal()
    _views(net, (0, 1, 2, 3))
    for n in net.nodes.values():
        assert store.pulled(n), f"no pull (seed {seed})"
    assert all(n.transactions.get(TID) == winner for n in net.nodes.values()), f"seed {seed}"


def test_a_write_answered_with_another_coordinators_newer_record_is_superseded():
    net = _cluster(34)
    store = Store(net)
    a, b, c = (net.nodes[i] for i in (0, 1, 2))
    assert all(store.pulled(n) for n in (a, b, c))  # before the cuts: pulls need answers
    assert store.run(a, b"v1") is WriteOutcome.HELD
    assert net.run_until(lambda: _record(b) == _record(c) == b"v1", timeout_s=2)
    net.cut(1, 0)  # b's record reaches c, never a
    assert store.run(b, b"v2 by 1") is WriteOutcome.HELD
    net.cut(0, 1)  # a's record reaches c only, which holds b's, newer at equal count
    rid, mine = store.start(a, b"v2 by 0")
    assert mine.version == next_version(next_version(NO_VERSION, 0), 0)
    assert net.run_until(lambda: rid in a.txn_replication.completed, timeout_s=5)
    assert a.txn_replication.completed.pop(rid) is WriteOutcome.SUPERSEDED
    # c sent its record back: a now holds b's, so its next conditional write starts from it.
    assert net.run_until(lambda: _record(a) == b"v2 by 1", timeout_s=2)
    assert a.counters["txn_writes_superseded"] == 1


def test_a_broker_that_sees_no_peer_cannot_write_and_one_alone_writes_alone():
    net = _cluster(35)
    store = Store(net)
    lone = net.nodes[0]
    assert store.pulled(lone)
    net.partition({0}, {1, 2})
    assert store.run(lone, b"x") is WriteOutcome.TIMED_OUT  # before the deaths are declared
    _views(net, (0,), (1, 2))
    assert store.run(lone, b"y") is WriteOutcome.NO_PEERS
    assert lone.counters["txn_writes_timed_out"] == lone.counters["txn_writes_without_peers"] == 1
    single = SimNet(GossipConfig.LOCAL, seed=36)
    single.add(0)
    assert Store(single).run(single.nodes[0], b"z") is WriteOutcome.HELD


@pytest.mark.parametrize("seed", SEEDS)
def test_a_write_no_peer_held_in_time_is_not_served_until_one_does(seed):
    """A PREPARE_COMMIT whose write failed (no peer answered in time) is still in the
    coordinator's table and still being sent. The core reads the record again after the
    failure; were it served, the core would resume the commit and write markers that the id's
    next coordinator, which never got the record, would contradict by aborting. So the store
    answers COORDINATOR_LOAD_IN_PROGRESS for the id until a peer holds it."""
    net = _cluster(seed)
    for n in net.nodes.values():
        n.seeds = tuple(SimNet.addr(i) for i in range(3) if i != n.node_id)  # to find again
    store = Store(net)
    coord = net.nodes[0]
    assert store.run(coord, b"Ongoing") is WriteOutcome.HELD
    assert coord.txn_replication.serves(TID)
    net.partition({0}, {1, 2})
    assert store.run(coord, b"PrepareCommit") is WriteOutcome.TIMED_OUT
    assert _record(coord) == b"PrepareCommit" and not coord.txn_replication.serves(TID)
    assert coord.txn_replication.serves("another id")
    net.heal()
    _views(net, (0, 1, 2))
    for n in net.nodes.values():  # as each broker's transaction coordinator does after a change
        assert store.pulled(n), f"no pull (seed {seed})"
    assert net.run_until(lambda: coord.txn_replication.serves(TID), timeout_s=5), f"seed {seed}"
    assert any(_record(net.nodes[i]) == b"PrepareCommit" for i in (1, 2))


# --- hostile pieces --------------------------------------------------------------------------

def _piece_from(net: SimNet, node: SwimNode, sender: int, msg: TxnPart) -> None:
    node.receive(forge(msg, sender=sender, boot=1), SimNet.addr(sender), net.now)


def test_pieces_from_outside_the_membership_are_dropped():
    net = _cluster(37)
    node = net.nodes[0]
    data = encode_txn_entry(TxnEntry("forged", 1 << 32, b"x"))
    node.receive(forge(TxnPart(1, 0, 1, data), sender=4242), ATTACKER, net.now)
    node.receive(forge(TxnPart(1, 0, 1, data), sender=1), ATTACKER, net.now)  # wrong address
    assert node.counters["dropped_txn_from_non_member"] == 2 and "forged" not in node.transactions


def test_invalid_or_oversized_records_are_dropped_unacknowledged():
    net = _cluster(38)
    node = net.nodes[0]
    node.take_outbox()
    bad = encode_txn_entry(TxnEntry("t", 7, b"x"))  # a version no broker writes
    _piece_from(net, node, 1, TxnPart(1, 0, 1, bad))
    assert node.counters["dropped_invalid_txn_version"] == 1 and "t" not in node.transactions
    _piece_from(net, node, 1, TxnPart(2, 0, 1, b"\x00\x05abc"))  # a torn entry
    assert node.counters["dropped_txn_truncated"] == 1
    _piece_from(net, node, 1, TxnPart(3, 0, 60_000, b"x"))  # more pieces than any record has
    assert node.counters["dropped_invalid_txn_size"] == 1
    assert not node.take_outbox()  # nothing acknowledged
    good = encode_txn_entry(TxnEntry("t", next_version(NO_VERSION, 1), b"ok"))
    _piece_from(net, node, 1, TxnPart(4, 1, 2, good[5:]))
    _piece_from(net, node, 1, TxnPart(4, 0, 2, good[:5]))  # out of order: joined by index
    assert _record(node, "t") == b"ok" and len(node.take_outbox()) == 1  # the ack


def test_half_received_records_are_bounded_and_abandoned():
    net = _cluster(39)
    node = net.nodes[0]
    for batch in range(300):
        _piece_from(net, node, 1, TxnPart(batch, 0, 2, b"x" * 10))
    assert node.counters["dropped_txn_assemblies_full"] == 300 - 256
    net.run_for(4 * 0.5 + 0.1)
    assert not node.txn_replication._assemblies
