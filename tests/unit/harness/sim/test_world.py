"""The simulated world (harness/sim): virtual time, pauses, kills, cuts, datagrams. No I/O.

These pin the meaning of each fault the replication simulation relies on: a paused process
runs nothing and gets everything at resume, a cut holds a stream's bytes until it heals (stale
requests arrive late, in order), a killed process's peers see their connections end, and the
same seed gives the same run.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from harness.sim.net import NetConfig, SimNetwork
from harness.sim.world import SimStalled, World, virtual_time


def make_world(seed: int = 1, **net: Any) -> World:
    world = World(lambda w: SimNetwork(w, random.Random(seed), NetConfig(**net)), seed=seed)
    world.net.add_host("a", "10.0.0.1")
    world.net.add_host("b", "10.0.0.2")
    world.spawn("a")
    world.spawn("b")
    return world


async def echo_server(got: list[bytes]) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(100):
            got.append(data)
            writer.write(data.upper())
        writer.close()

    await asyncio.start_server(handle, "10.0.0.2", 9)


def test_time_is_virtual_and_jumps_over_idle_waits():
    world = make_world()
    with virtual_time(world):
        import time

        async def nap() -> float:
            start = time.monotonic()
            await asyncio.sleep(3600)
            return time.monotonic() - start

        assert world.run("a", nap(), timeout_s=4000) == pytest.approx(3600)
        assert world.now == pytest.approx(3600)
    world.close()


def test_a_stream_carries_bytes_in_order_and_a_cut_holds_them_until_it_heals():
    world = make_world()
    got: list[bytes] = []
    world.run("b", echo_server(got))

    async def client() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("10.0.0.2", 9)

    reader, writer = world.run("a", client())
    world.net.cut("a", "b")
    for k in range(3):
        writer.write(b"req%d" % k)
    world.advance(10.0)
    assert got == []  # held: the stale requests have not arrived
    world.net.uncut("a", "b")
    world.advance(0.1)
    assert b"".join(got) == b"req0req1req2"

    async def answer() -> bytes:
        return await reader.readexactly(12)

    assert world.run("a", answer()) == b"REQ0REQ1REQ2"
    world.close()


def test_a_paused_process_runs_nothing_and_catches_up_on_resume():
    world = make_world()
    fired: list[float] = []

    async def ticker() -> None:
        for _ in range(3):
            await asyncio.sleep(1.0)
            fired.append(world.now)

    world.start("b", ticker())
    world.advance(0.5)  # the first sleep is under way
    world.pause("b")
    world.advance(9.5)
    assert fired == []
    world.resume("b")
    world.advance(5.0)
    # The overdue timer fires at the resume, not at 1.0; the next sleeps start from there.
    assert fired == [pytest.approx(10.0), pytest.approx(11.0), pytest.approx(12.0)]
    world.close()


def test_a_killed_process_ends_its_connections_and_refuses_new_ones():
    world = make_world()
    world.run("b", echo_server([]))

    async def client() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("10.0.0.2", 9)

    reader, _ = world.run("a", client())
    world.kill("b")

    async def read() -> bytes:
        return await reader.read(10)

    with pytest.raises(ConnectionResetError):
        world.run("a", read())
    with pytest.raises(ConnectionRefusedError):
        world.run("a", client())
    world.close()


def test_a_connect_across_a_cut_waits_for_the_heal():
    world = make_world()
    world.run("b", echo_server([]))
    world.net.cut("b", "a")  # one way is enough: the handshake needs both

    async def client() -> None:
        await asyncio.open_connection("10.0.0.2", 9)

    task = world.start("a", client())
    world.advance(30.0)
    assert not task.done()
    world.net.uncut("b", "a")
    world.advance(0.1)
    assert task.done() and task.exception() is None
    world.close()


class Sink(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.got: list[bytes] = []

    def datagram_received(self, data: bytes, addr: object) -> None:
        self.got.append(data)


def datagrams(world: World, count: int) -> list[bytes]:
    sink = Sink()

    async def bind_b() -> None:
        await asyncio.get_running_loop().create_datagram_endpoint(
            lambda: sink, local_addr=("10.0.0.2", 7))

    async def send_a() -> None:
        transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
            asyncio.DatagramProtocol, local_addr=("10.0.0.1", 7))
        for k in range(count):
            transport.sendto(b"%d" % k, ("10.0.0.2", 7))

    world.run("b", bind_b())
    world.run("a", send_a())
    world.advance(2.0)
    return sink.got


def test_datagrams_are_lost_duplicated_delayed_and_dropped_over_a_cut_as_configured():
    assert datagrams(make_world(loss=1.0), 50) == []
    assert len(datagrams(make_world(duplicate=1.0), 50)) == 100
    late = datagrams(make_world(delayed=0.5, delay_max_s=1.0), 200)
    assert sorted(late, key=int) != late  # held back ones arrive after later ones
    world = make_world()
    world.net.cut("a", "b")
    assert datagrams(world, 10) == []


def test_the_same_seed_gives_the_same_run():
    def run(seed: int) -> list[bytes]:
        return datagrams(make_world(seed, delayed=0.5), 100)

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_run_until_reports_a_condition_that_never_holds():
    world = make_world()
    with pytest.raises(SimStalled, match="never did not hold within 5 s"):
        world.run_until(lambda: False, 5.0, "never")
    world.close()
