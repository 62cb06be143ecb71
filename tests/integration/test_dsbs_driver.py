"""The gossip UDP adapter and the coordinator's start/stop on real loopback sockets.

No exception ends a gossip loop, shutdown never hangs, the receive queue is capped, and host
names are resolved once at start (or refused there in one line). Every wait has a bound. The
loop is uvloop's, as in a broker process.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import uvloop

from brokers.core.coordinator import BrokerInfo
from brokers.core.errors import UserError
from brokers.dsbs_broker.config import DsbsConfig, GossipConfig, GossipLimits
from brokers.dsbs_broker.coordinator import DsbsCoordinator
from brokers.dsbs_broker.gossip.swim import SwimNode
from brokers.dsbs_broker.gossip.udp import GossipDriver, bind
from harness.cluster.machines import free_ports

pytestmark = pytest.mark.integration

KEY = b"test cluster key of 32 bytes ok!"


async def _until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


async def _driver(cfg: GossipConfig = GossipConfig.LOCAL, *, max_queued: int = 1024
                  ) -> GossipDriver:
    sock = await bind("127.0.0.1", 0, max_queued=max_queued)
    loop = asyncio.get_running_loop()
    node = SwimNode(cfg, node_id=1, gossip_addr=("127.0.0.1", sock.sockname[1]),
                    kafka_addr=("127.0.0.1", 9092), incarnation=1, now=loop.time(), key=KEY)
    d = GossipDriver(node, sock)
    d.start()
    return d


def _run(coro, timeout: float = 60.0) -> None:
    """On uvloop, as the broker process runs (its sendto refuses host names, asyncio's does a
    blocking lookup), under a deadline."""
    async def bounded() -> None:
        async with asyncio.timeout(timeout):
            await coro

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(bounded())


def test_close_returns_when_a_packet_has_just_woken_the_timer():
    """The hang of test_offsets_survive_their_coordinator_via_the_successor, made certain:
    the receive loop wakes the timer, and close() cancels it one loop iteration later."""
    async def scenario() -> None:
        for _ in range(5):
            d = await _driver(GossipConfig(tick_s=1.0))  # the timer is asleep, not ticking
            await asyncio.sleep(0.05)
            d._wake_timer() if hasattr(d, "_wake_timer") else d._wake.set()
            await asyncio.sleep(0)  # the wait completes; its waiter is released next iteration
            closing = asyncio.ensure_future(d.close(leave=False))
            done, _ = await asyncio.wait({closing}, timeout=5)
            if not done:
                for t in d._tasks:
                    t.cancel()
                raise AssertionError("GossipDriver.close() hung: the timer task outlived it")
            assert all(t.done() for t in d._tasks)

    _run(scenario())


def test_errors_in_receive_tick_and_send_are_counted_and_the_loops_go_on():
    async def scenario() -> None:
        d = await _driver()
        node = d.node
        real_receive, real_tick = node.receive, node.tick
        failures = {"receive": 3, "tick": 3}

        def receive(data, addr, now):
            if failures["receive"]:
                failures["receive"] -= 1
                raise RuntimeError("injected receive failure")
            real_receive(data, addr, now)

        def tick(now):
            if failures["tick"]:
                failures["tick"] -= 1
                raise RuntimeError("injected tick failure")
            real_tick(now)

        node.receive, node.tick = receive, tick
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            for _ in range(10):
                s.sendto(b"junk", ("127.0.0.1", node.addr[1]))
            # A host name in the outbox: uvloop's sendto raises ValueError on it.
            node.outbox.append((("localhost", 9), b"x"))
            await _until(lambda: node.counters["receive_errors"] == 3
                         and node.counters["tick_errors"] == 3, 5, "failures counted")
            await _until(lambda: node.counters["dropped_truncated"] == 7, 5, "later packets")
            ticks = node.counters["packets_out"]
            node.outbox.append((("localhost", 9), b"x"))
            d.flush()
            assert node.counters["send_errors"] >= 1
            node.seeds = (("127.0.0.1", 9),)  # the timer must still be running: it sends
            await _until(lambda: node.counters["packets_out"] > ticks, 5, "timer still ticking")
            assert not any(t.done() for t in d._tasks)
        finally:
            s.close()
            await d.close(leave=False)

    _run(scenario())


def test_receive_queue_is_capped_while_the_loop_is_busy():
    async def scenario() -> None:
        d = await _driver(max_queued=50)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        try:
            for _ in range(500):
                s.sendto(b"\xd5\xb5flood", ("127.0.0.1", d.node.addr[1]))
            # Give the loop one iteration to read the socket while the driver's task cannot run.
            proto = d._sock._proto  # the protocol callback, as the loop would call it
            for _ in range(101):
                proto.datagram_received(b"x", ("127.0.0.1", 1))
            assert d._sock.queued <= 50 and d._sock.dropped > 0
            await _until(lambda: d.node.counters["dropped_queue_full"] > 0, 5, "drops counted")
        finally:
            s.close()
            await d.close(leave=False)

    _run(scenario())


def _free_port() -> int:
    return free_ports(1)[0]


def test_host_names_are_resolved_once_at_start(tmp_path: Path):
    async def scenario() -> None:
        p0, p1 = _free_port(), _free_port()
        seeds = (f"localhost:{p0}", f"localhost:{p1}")
        coords = []
        try:
            for i, port in enumerate((p0, p1)):
                cfg = DsbsConfig(gossip_host="localhost", gossip_port=port, seeds=seeds,
                                 gossip=GossipConfig.LOCAL, join_timeout_s=1.0, gossip_key=KEY)
                c = DsbsCoordinator(i, tmp_path / f"b{i}", cfg)
                await c.start(BrokerInfo(i, "127.0.0.1", 20000 + i))
                coords.append(c)
            assert coords[0].gossip_address == ("127.0.0.1", p0)  # a literal, told to peers
            await _until(lambda: all(len(c.cluster().brokers) == 2 for c in coords), 5,
                         "membership through named seeds")
            assert not any(c.node.counters["send_errors"] for c in coords)
        finally:
            for c in coords:
                await c.close()

    _run(scenario())


@pytest.mark.parametrize(("cfg", "message"), [
    (DsbsConfig(seeds=("no-such-host.invalid:7946",), gossip_key=KEY),
     "gossip seed no-such-host.invalid:7946 does not resolve"),
    (DsbsConfig(gossip_host="no-such-host.invalid", gossip_key=KEY),
     "gossip address no-such-host.invalid:0 does not resolve"),
    (DsbsConfig(gossip_host="0.0.0.0", gossip_key=KEY), "peers cannot send to"),
    (DsbsConfig(), "--gossip-key-file"),
])
def test_bad_gossip_setups_fail_at_start_in_one_line(tmp_path: Path, cfg, message):
    async def scenario() -> None:
        c = DsbsCoordinator(0, tmp_path, cfg)
        with pytest.raises(UserError, match=message) as e:
            await c.start(BrokerInfo(0, "127.0.0.1", 9092))
        assert "\n" not in str(e.value)

    _run(scenario())


def test_an_exhausted_incarnation_still_starts(tmp_path: Path):
    from brokers.dsbs_broker.tables.state import NodeState, StateFile
    from brokers.dsbs_broker.tables.validation import MAX_INCARNATION

    async def scenario() -> None:
        StateFile(tmp_path / "dsbs").store(NodeState(0, MAX_INCARNATION))
        c = DsbsCoordinator(0, tmp_path, DsbsConfig(gossip_key=KEY))
        await c.start(BrokerInfo(0, "127.0.0.1", 9092))
        try:
            assert c.node.incarnation == MAX_INCARNATION
        finally:
            await c.close()
        StateFile(tmp_path / "dsbs").store(NodeState(0, MAX_INCARNATION + 5))
        with pytest.raises(UserError, match=r"outside 0\.\.4294967295"):
            await DsbsCoordinator(0, tmp_path, DsbsConfig(gossip_key=KEY)).start(
                BrokerInfo(0, "127.0.0.1", 9092))

    _run(scenario())


def test_topic_creation_obeys_the_gossip_limits(tmp_path: Path):
    from brokers.core.errors import InvalidPartitions

    async def scenario() -> None:
        cfg = DsbsConfig(gossip_key=KEY, limits=GossipLimits(max_topic_partitions=100,
                                                             max_topics=2))
        c = DsbsCoordinator(0, tmp_path, cfg)
        await c.start(BrokerInfo(0, "127.0.0.1", 9092))
        try:
            with pytest.raises(InvalidPartitions, match="at most 100 per topic"):
                await c.create_topic("big", 101, 1)
            await c.create_topic("a", 100, 1)
            await c.create_topic("b", 1, 1)
            with pytest.raises(InvalidPartitions, match="max_topics"):
                await c.create_topic("c", 1, 1)
        finally:
            await c.close()

    _run(scenario())


def _broker_cli(tmp_path: Path, *extra: str, timeout_s: float = 30.0):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "brokers.dsbs_broker", "--listen", "127.0.0.1:0",
         "--data-dir", str(tmp_path / "data"), *extra],
        capture_output=True, text=True, timeout=timeout_s, check=False,
        cwd=Path(__file__).resolve().parents[2])


@pytest.mark.parametrize(("extra", "message"), [
    ((), "one of the arguments --gossip-key-file --gossip-insecure is required"),
    (("--gossip-key-file", "{loose}"), "is open to other users (mode 0644); chmod 600 it"),
    (("--gossip-key-file", "{missing}"), "No such file or directory"),
    (("--gossip-insecure", "--seeds", "no-such-host.invalid:7946"), "does not resolve"),
    (("--gossip-insecure", "--gossip", "0.0.0.0:0"), "peers cannot send to"),
])
def test_cli_refuses_bad_gossip_setups_in_one_line(tmp_path: Path, extra, message):
    loose = tmp_path / "loose.key"
    loose.write_text("x" * 64)
    loose.chmod(0o644)
    args = [a.format(loose=loose, missing=tmp_path / "missing.key") for a in extra]
    res = _broker_cli(tmp_path, *args)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m brokers.dsbs_broker: error: ")
    assert message in lines[0]
