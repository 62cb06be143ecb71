"""The listener's per-connection budget and connection limits, with an in-memory transport.

The hostile suite (tests/hostile) attacks real broker processes; these pin the policy itself:
what is dispatched, when reading stops and resumes, and that answers keep request order.
"""

from __future__ import annotations

import asyncio
import struct

from brokers.core.config import ListenerConfig
from brokers.core.server import KafkaServer, ServerConnection

MiB = 1024 * 1024


class Transport:
    def __init__(self, ip: str = "127.0.0.9") -> None:
        self.ip = ip
        self.written: list[bytes] = []
        self.reading = True
        self.closed = False

    def get_extra_info(self, name: str):
        return (self.ip, 4242) if name == "peername" else None

    def writelines(self, buffers) -> None:
        self.written.append(b"".join(bytes(b) for b in buffers))

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        self.closed = True


class Dispatcher:
    """Frame payload b"wait" -> an answer the test releases; anything else -> 1 MiB at once."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        self.pending: list[asyncio.Future] = []

    def dispatch(self, frame: memoryview, peer: str):
        body = bytes(frame)
        self.seen.append(body)
        if body == b"wait":
            fut = asyncio.get_running_loop().create_future()
            self.pending.append(fut)
            return fut
        return [body[:1] * MiB]


def frames(*bodies: bytes) -> bytes:
    return b"".join(struct.pack(">i", len(b)) + b for b in bodies)


def connection(limit: int = 4 * MiB, **kw) -> tuple[KafkaServer, ServerConnection, Transport,
                                                       Dispatcher]:
    d = Dispatcher()
    server = KafkaServer(d, 1 << 20, ListenerConfig(queued_max_request_bytes=limit, **kw))
    conn = ServerConnection(server)
    t = Transport()
    conn.connection_made(t)
    return server, conn, t, d


def test_answers_stacked_behind_a_slow_one_stop_dispatching_and_reading():
    async def scenario():
        server, conn, t, d = connection()
        others = [bytes([65 + i % 26]) for i in range(100)]
        conn.data_received(frames(b"wait", *others))
        # The slow answer holds the head; 1 MiB answers pile up behind it until the budget
        # (4 MiB) is spent, then nothing more is dispatched and the socket is not read.
        assert len(d.seen) == 1 + 4
        assert not t.reading and t.written == []
        assert (server.in_flight(), server.queued()) == (5, 96)  # what the metrics report
        conn.data_received(frames(b"late"))  # a read already under way is queued, not run
        assert len(d.seen) == 5 and server.queued() == 97
        d.pending[0].set_result([b"slow"])
        await asyncio.sleep(0)
        assert t.reading and len(d.seen) == 102  # drained: everything ran, reading resumed
        assert (server.in_flight(), server.queued()) == (0, 0)
        assert [w[:1] for w in t.written] == [b"s", *(o for o in others), b"l"]

    asyncio.run(scenario())


def test_a_client_not_reading_its_answers_stops_dispatch_until_writing_resumes():
    async def scenario():
        _, conn, t, d = connection()
        conn.pause_writing()  # the socket's write buffer is full
        conn.data_received(frames(b"a", b"b"))
        assert d.seen == [] and not t.reading
        conn.resume_writing()
        assert d.seen == [b"a", b"b"] and t.reading

    asyncio.run(scenario())


def test_connection_limits_total_and_per_address():
    server = KafkaServer(Dispatcher(), 1 << 20,
                         ListenerConfig(max_connections=3, max_connections_per_ip=2))

    def open_from(ip: str) -> tuple[ServerConnection, Transport]:
        c, t = ServerConnection(server), Transport(ip)
        c.connection_made(t)
        return c, t

    a1, a2, a3 = open_from("10.0.0.1"), open_from("10.0.0.1"), open_from("10.0.0.1")
    assert not a1[1].closed and not a2[1].closed and a3[1].closed  # per address
    a3[0].connection_lost(None)
    b1, b2 = open_from("10.0.0.2"), open_from("10.0.0.3")
    assert not b1[1].closed and b2[1].closed  # in total
    b2[0].connection_lost(None)
    a1[0].connection_lost(None)
    assert not open_from("10.0.0.3")[1].closed  # room again
    assert len(server.connections) == 3 and server.refused_total == 2


def test_bytes_of_an_unfinished_frame_are_not_activity():
    async def scenario():
        _, conn, _, _ = connection()
        conn.last_active -= 100
        conn.data_received(struct.pack(">i", 1000) + b"x")  # a frame begun, not finished
        assert conn.idle_for(conn.last_active + 100) >= 100
        conn.data_received(b"y" * 999)  # finished: a request, so activity
        assert conn.idle_for(conn.last_active) == 0

    asyncio.run(scenario())


# --- the broker-wide request pool -----------------------------------------------------------

CHUNK = 256 * 1024  # what one read hands data_received at most (asyncio's and uvloop's size)


class Holding:
    """Bodies starting with b"W" wait for the test to answer them; others are answered at once
    with a few bytes."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        self.pending: list[asyncio.Future] = []

    def dispatch(self, frame: memoryview, peer: str):
        self.seen.append(bytes(frame[:8]))
        if frame[:1] == b"W":
            fut = asyncio.get_running_loop().create_future()
            self.pending.append(fut)
            return fut
        return [b"ok"]


def pool_server(limit: int = 4 * MiB) -> tuple[KafkaServer, Holding]:
    d = Holding()
    return KafkaServer(d, 64 * MiB, ListenerConfig(request_memory_bytes=limit)), d


def open_conn(server: KafkaServer, ip: str) -> tuple[ServerConnection, Transport]:
    c, t = ServerConnection(server), Transport(ip)
    c.connection_made(t)
    return c, t


def consistent(server: KafkaServer) -> None:
    """The pool holds exactly what the open connections report holding."""
    assert server.memory.used == sum(c.footprint() for c in server.connections
                                     if not c._closing)


def test_stalling_connections_are_bounded_broker_wide_and_small_clients_are_still_served():
    """Twelve clients each start a 32 MiB frame and send as much of it as the broker reads,
    then stall; each alone is within every per-connection limit. The pool (4 MiB) holds: large
    holders stop being read at the limit, and a client sending small requests meanwhile is
    read and answered throughout."""
    async def scenario():
        server, d = pool_server()
        pool = server.memory
        stalls = [open_conn(server, f"10.0.0.{i}") for i in range(12)]
        for c, _ in stalls:
            c.data_received(struct.pack(">i", 32 * MiB))
        small, st = open_conn(server, "10.0.1.1")
        high = 0
        for _ in range(40):  # rounds: each reading connection gets one more read
            for c, t in stalls:
                if t.reading and not t.closed:
                    c.data_received(b"x" * CHUNK)
                    high = max(high, pool.used)
                    consistent(server)
            small.data_received(frames(b"produce-small"))
            assert st.reading and not st.closed
        assert high <= pool.ceiling + CHUNK, (high, pool.ceiling)
        assert pool.full and d.seen.count(b"produce-") == 40 and len(st.written) == 40
        assert all(not t.reading for _, t in stalls)  # muted: nothing more arrives from them
        for c, _ in stalls:
            c.connection_lost(None)
        small.connection_lost(None)
        assert pool.used == 0 and not pool.full

    asyncio.run(scenario())


def test_reading_resumes_once_answers_drain_the_pool_below_seven_eighths():
    async def scenario():
        server, d = pool_server()
        pool = server.memory
        a, ta = open_conn(server, "10.0.0.1")
        big = b"W" + b"y" * (3 * MiB)
        a.data_received(frames(big, big))  # two 3 MiB requests awaiting their answers
        assert pool.used >= pool.limit and pool.full and not ta.reading
        b, tb = open_conn(server, "10.0.0.2")
        b.data_received(frames(b"W" + b"z" * (512 * 1024)))  # over the floor: not read on
        assert not tb.reading
        for fut in d.pending[:2]:
            fut.set_result([b"done"])
        await asyncio.sleep(0)
        consistent(server)
        assert pool.used < pool.resume_at and not pool.full
        assert ta.reading and tb.reading

    asyncio.run(scenario())


def test_a_closed_connection_gives_its_bytes_back_at_once():
    server, _ = pool_server()
    c, _ = open_conn(server, "10.0.0.1")
    c.data_received(struct.pack(">i", 8 * MiB) + b"x" * MiB)
    assert server.memory.used == MiB + 4
    c.abort("test")
    assert server.memory.used == 0
    c.connection_lost(None)
    assert server.memory.used == 0


def test_past_nine_eighths_the_largest_unfinished_frames_are_closed():
    """Once the pool is full, every new connection may still be read once (it holds less than
    the floor); forty of them each starting a large frame would pass any bound, so past 9/8 of
    the limit the largest holders of unfinished bytes are closed, and the pool stays under the
    ceiling plus one read."""
    async def scenario():
        server, _ = pool_server()
        pool = server.memory
        conns = []
        for i in range(40):
            c, t = open_conn(server, f"10.0.{i // 200}.{i % 200}")
            c.data_received(struct.pack(">i", 32 * MiB) + b"x" * (CHUNK - 4))
            conns.append((c, t))
            assert pool.used <= pool.ceiling + CHUNK
            consistent(server)
        closed = [t for _, t in conns if t.closed]
        assert closed and pool.closed_total == len(closed)
        assert pool.used <= pool.ceiling

    asyncio.run(scenario())
