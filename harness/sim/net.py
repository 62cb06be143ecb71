"""``SimNetwork``: the simulated processes' network (listeners, streams, datagrams, faults).

Each process has one host address (``host_of``); listeners and datagram endpoints are keyed by
(host, port). What a process sends goes through ``deliver``, which schedules the arrival on the
receiving process's loop after a seeded latency, so a paused receiver gets it on resume.

Streams are TCP as the product sees it: in order, never duplicated, and never lost while both
ends live. Over a cut (``cut(a, b)``: nothing from a reaches b) their bytes are held and sent on
when the cut heals; a connect across a cut waits until it heals (or the caller gives up); a
connect to a host whose process is dead is refused after one round trip; a dead process's
connections end at their peers (reset), held like any byte while a cut is in the way.

Datagrams are UDP: each is dropped with probability ``loss``, sent twice with probability
``duplicate``, and delayed by its own draw (so they reorder); over a cut they are dropped.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.sim.world import SimLoop, World, later

Addr = tuple[str, int]


@dataclass(frozen=True)
class NetConfig:
    # One-way latency of a packet, drawn uniformly per packet (seconds).
    latency_s: tuple[float, float] = (0.0001, 0.0008)
    # Datagrams only: the share dropped, and the share delivered twice.
    loss: float = 0.0
    duplicate: float = 0.0
    # Datagrams only: the share held back by an extra delay (up to this many seconds), so
    # they arrive after later ones and stale.
    delayed: float = 0.0
    delay_max_s: float = 0.5


@dataclass
class NetStats:
    datagrams: int = 0
    datagrams_lost: int = 0  # by ``loss``
    datagrams_cut: int = 0  # by a cut or a dead receiver
    datagrams_duplicated: int = 0
    datagrams_delayed: int = 0
    stream_bytes: int = 0
    stream_bytes_held: int = 0  # held by a cut, sent on at the heal
    connects: int = 0
    connects_refused: int = 0


class _Listener:
    def __init__(self, net: SimNetwork, loop: SimLoop, factory: Callable[[], Any],
                 addr: Addr) -> None:
        self.net, self.loop, self.factory, self.addr = net, loop, factory, addr
        self.sockets = [_Sock(addr)]

    def close(self) -> None:
        if self.net.listeners.get(self.addr) is self:
            del self.net.listeners[self.addr]

    async def wait_closed(self) -> None:
        return None

    def is_serving(self) -> bool:
        return self.net.listeners.get(self.addr) is self


@dataclass(frozen=True)
class _Sock:
    addr: Addr

    def getsockname(self) -> Addr:
        return self.addr


class _End(asyncio.Transport):
    """One end of a stream: the transport its owner's protocol writes to."""

    def __init__(self, conn: _Conn, side: int) -> None:
        super().__init__()
        self._conn, self._side = conn, side
        self.protocol: Any = None
        self.closing = False  # closed by its owner
        self.gone = False  # the protocol was told the connection is lost
        self.reading = True
        self._backlog: list[bytes] = []  # arrived while reading is paused

    # what the owner calls
    def write(self, data: Any) -> None:
        if not self.closing and not self.gone:
            self._conn.send(self._side, bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(bytes(d) for d in list_of_data))

    def close(self) -> None:
        if self.closing or self.gone:
            return
        self.closing = True
        self._conn.send(self._side, None)  # the FIN, after everything written
        loop = self._conn.loops[self._side]
        loop.call_soon(self.lost, None)

    def abort(self) -> None:
        self.close()

    def is_closing(self) -> bool:
        return self.closing or self.gone

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "peername":
            return self._conn.addrs[1 - self._side]
        if name == "sockname":
            return self._conn.addrs[self._side]
        return default

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        if self.reading:
            return
        self.reading = True
        backlog, self._backlog = self._backlog, []
        for data in backlog:
            if self.gone:
                break
            self.protocol.data_received(data)

    def is_reading(self) -> bool:
        return self.reading

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        return None

    def can_write_eof(self) -> bool:
        return False

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.protocol = protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self.protocol

    # what the network calls
    def arrive(self, data: bytes | None, reset: bool) -> None:
        if self.gone:
            return
        if data is None:
            self.lost(ConnectionResetError("reset by peer") if reset else None)
        elif self.reading:
            self.protocol.data_received(data)
        else:
            self._backlog.append(data)

    def lost(self, exc: Exception | None) -> None:
        if self.gone:
            return
        self.gone = True
        self._conn.ended(self._side)
        self.protocol.connection_lost(exc)


class _Conn:
    """A stream between two processes: side 0 connected, side 1 accepted."""

    def __init__(self, net: SimNetwork, names: tuple[str, str], loops: tuple[SimLoop, SimLoop],
                 addrs: tuple[Addr, Addr]) -> None:
        self.net, self.names, self.loops, self.addrs = net, names, loops, addrs
        self.ends = (_End(self, 0), _End(self, 1))
        self._last = [0.0, 0.0]  # the latest arrival scheduled, per direction (keeps order)
        self._held: tuple[list[tuple[bytes | None, bool]], list[tuple[bytes | None, bool]]] = (
            [], [])

    def send(self, side: int, data: bytes | None, reset: bool = False) -> None:
        """``data`` from ``side``'s process to the other; None: the end of the stream."""
        if data is not None:
            self.net.stats.stream_bytes += len(data)
        held = self._held[side]
        if held or self.net.is_cut(self.names[side], self.names[1 - side]):
            held.append((data, reset))
            if data is not None:
                self.net.stats.stream_bytes_held += len(data)
            self.net.holding[self] = None
            return
        self._ship(side, data, reset)

    def _ship(self, side: int, data: bytes | None, reset: bool) -> None:
        at = max(self._last[side] + 1e-6, self.net.world.now + self.net.latency())
        self._last[side] = at
        later(self.loops[1 - side], at, self.ends[1 - side].arrive, data, reset)

    def release(self) -> bool:
        """Send on what a healed cut held; True when nothing stays held."""
        for side in (0, 1):
            held = self._held[side]
            if held and not self.net.is_cut(self.names[side], self.names[1 - side]):
                for data, reset in held:
                    self._ship(side, data, reset)
                held.clear()
        return not (self._held[0] or self._held[1])

    def died(self, name: str) -> None:
        """The process at one end was killed: its end is gone, the other end sees a reset."""
        for side in (0, 1):
            if self.names[side] == name:
                end = self.ends[side]
                end.gone = end.closing = True
                self._held[side].clear()
                self.send(side, None, reset=True)

    def ended(self, side: int) -> None:
        if self.ends[0].gone and self.ends[1].gone:
            self.net.conns.pop(self, None)


@dataclass
class _Datagrams(asyncio.DatagramTransport):
    net: SimNetwork
    loop: SimLoop
    addr: Addr
    protocol: Any = None
    closed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__()

    def sendto(self, data: Any, addr: Any = None) -> None:
        if not self.closed:
            self.net.datagram(self, bytes(data), (str(addr[0]), int(addr[1])))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.net.datagram_endpoints.get(self.addr) is self:
            del self.net.datagram_endpoints[self.addr]
        self.loop.call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.addr if name == "sockname" else default

    def arrive(self, data: bytes, source: Addr) -> None:
        if not self.closed:
            self.protocol.datagram_received(data, source)


class SimNetwork:
    def __init__(self, world: World, rng: random.Random, config: NetConfig | None = None) -> None:
        self.world = world
        self.rng = rng
        self.config = config or NetConfig()
        self.host_of: dict[str, str] = {}
        self.name_of: dict[str, str] = {}
        self.listeners: dict[Addr, _Listener] = {}
        self.datagram_endpoints: dict[Addr, _Datagrams] = {}
        # Dicts, not sets: iterated in the order made, never in the order of addresses.
        self.conns: dict[_Conn, None] = {}
        self.holding: dict[_Conn, None] = {}  # streams with bytes held by a cut
        self._cuts: set[tuple[str, str]] = set()
        self._waiting: list[asyncio.Future[None]] = []  # connects waiting for a heal
        self.stats = NetStats()

    def add_host(self, name: str, host: str) -> None:
        self.host_of[name] = host
        self.name_of[host] = name

    def latency(self) -> float:
        lo, hi = self.config.latency_s
        return self.rng.uniform(lo, hi)

    # --- faults --------------------------------------------------------------------------------
    def is_cut(self, a: str, b: str) -> bool:
        return (a, b) in self._cuts

    def cut(self, a: str, b: str) -> None:
        """Nothing ``a`` sends reaches ``b`` until ``uncut(a, b)``."""
        self._cuts.add((a, b))

    def uncut(self, a: str, b: str) -> None:
        self._cuts.discard((a, b))
        self._healed()

    def uncut_all(self) -> None:
        self._cuts.clear()
        self._healed()

    def _healed(self) -> None:
        for conn in list(self.holding):
            if conn.release():
                del self.holding[conn]
        waiting, self._waiting = self._waiting, []
        for fut in waiting:
            if not fut.done():
                fut.set_result(None)

    def died(self, name: str) -> None:
        for conn in list(self.conns):
            if name in conn.names:
                conn.died(name)
        for addr, listener in list(self.listeners.items()):
            if listener.loop.name == name:
                del self.listeners[addr]
        for addr, ep in list(self.datagram_endpoints.items()):
            if ep.loop.name == name:
                ep.closed = True
                del self.datagram_endpoints[addr]

    # --- what the loops call -------------------------------------------------------------------
    def listen(self, loop: SimLoop, factory: Callable[[], Any], host: str, port: int
               ) -> _Listener:
        addr = (host, port)
        if addr in self.listeners:
            raise OSError(98, f"address {host}:{port} already in use")
        listener = _Listener(self, loop, factory, addr)
        self.listeners[addr] = listener
        return listener

    async def connect(self, loop: SimLoop, factory: Callable[[], Any], host: str, port: int
                      ) -> tuple[asyncio.Transport, Any]:
        me = loop.name
        self.stats.connects += 1
        while True:
            them = self.name_of.get(host)
            if them is None:
                raise OSError(113, f"no route to host {host}")
            if not (self.is_cut(me, them) or self.is_cut(them, me)):
                break
            fut: asyncio.Future[None] = loop.create_future()
            self._waiting.append(fut)
            await fut  # the SYN or its answer is dropped; retransmitted once the cut heals
        await asyncio.sleep(2 * self.latency())  # the handshake's round trip
        listener = self.listeners.get((host, port))
        if listener is None or not listener.loop.alive:
            self.stats.connects_refused += 1
            raise ConnectionRefusedError(111, f"connection refused by {host}:{port}")
        port_here = 40_000 + self.stats.connects
        conn = _Conn(self, (me, them), (loop, listener.loop),
                     ((self.host_of[me], port_here), (host, port)))
        self.conns[conn] = None
        client = factory()
        conn.ends[0].protocol = client
        client.connection_made(conn.ends[0])

        def accept() -> None:
            if listener.loop.alive and self.listeners.get((host, port)) is listener:
                server = listener.factory()
                conn.ends[1].protocol = server
                server.connection_made(conn.ends[1])
            else:
                conn.ends[1].gone = True
                conn.send(1, None, reset=True)

        # The accept runs on the server's loop before any byte the client sends arrives.
        at = self.world.now
        conn._last[0] = at
        later(listener.loop, at, accept)
        return conn.ends[0], client

    def bind_datagram(self, loop: SimLoop, factory: Callable[[], Any], local_addr: Any
                      ) -> tuple[_Datagrams, Any]:
        addr = (str(local_addr[0]), int(local_addr[1]))
        if addr in self.datagram_endpoints:
            raise OSError(98, f"address {addr[0]}:{addr[1]} already in use")
        ep = _Datagrams(self, loop, addr)
        ep.protocol = factory()
        self.datagram_endpoints[addr] = ep
        ep.protocol.connection_made(ep)
        return ep, ep.protocol

    def datagram(self, source: _Datagrams, data: bytes, to: Addr) -> None:
        c, st = self.config, self.stats
        st.datagrams += 1
        target = self.datagram_endpoints.get(to)
        sender = source.loop.name
        if target is None or self.is_cut(sender, target.loop.name):
            st.datagrams_cut += 1
            return
        if c.loss and self.rng.random() < c.loss:
            st.datagrams_lost += 1
            return
        copies = 1
        if c.duplicate and self.rng.random() < c.duplicate:
            copies, st.datagrams_duplicated = 2, st.datagrams_duplicated + 1
        for _ in range(copies):
            delay = self.latency()
            if c.delayed and self.rng.random() < c.delayed:
                delay += self.rng.uniform(0, c.delay_max_s)
                st.datagrams_delayed += 1
            later(target.loop, self.world.now + delay, target.arrive, data, source.addr)
