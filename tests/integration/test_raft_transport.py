"""The Raft twin's quorum transport on loopback: messages between nodes over real TCP, a node
without the cluster key refused, a node of another cluster id refused, a peer restarted reached
again, sends never blocking."""

from __future__ import annotations

import asyncio

import pytest

from brokers.raft_broker.transport import NONCE_BYTES, QUEUE_FRAMES, Transport, cluster_mark

pytestmark = pytest.mark.integration

KEY = b"raft transport test cluster key!"


class Inbox:
    def __init__(self) -> None:
        self.got: list[tuple[int, bytes]] = []
        self.event = asyncio.Event()

    def __call__(self, src: int, message: bytes) -> None:
        self.got.append((src, message))
        self.event.set()

    async def until(self, n: int, timeout_s: float = 10.0) -> None:
        async with asyncio.timeout(timeout_s):
            while len(self.got) < n:
                self.event.clear()
                await self.event.wait()


async def _nodes(keys: list[bytes | None]) -> tuple[list[Transport], list[Inbox]]:
    inboxes = [Inbox() for _ in keys]
    nodes = [Transport(i, ("127.0.0.1", 0), {}, k, inboxes[i]) for i, k in enumerate(keys)]
    for t in nodes:
        await t.start()
    for t in nodes:
        for u in nodes:
            if u is not t:
                t.set_peer(u.node_id, ("127.0.0.1", u.port))
    return nodes, inboxes


async def _close(nodes: list[Transport]) -> None:
    for t in nodes:
        await t.close()


def test_messages_go_between_every_pair_in_order() -> None:
    async def main() -> None:
        nodes, inboxes = await _nodes([KEY, KEY, KEY])
        try:
            for i in range(50):
                nodes[0].send(1, f"a{i}".encode())
                nodes[2].send(1, f"c{i}".encode())
            nodes[1].send(0, b"back")
            await inboxes[1].until(100)
            await inboxes[0].until(1)
            assert [m for s, m in inboxes[1].got if s == 0] == [f"a{i}".encode()
                                                                 for i in range(50)]
            assert [m for s, m in inboxes[1].got if s == 2] == [f"c{i}".encode()
                                                                 for i in range(50)]
            assert inboxes[0].got == [(1, b"back")]
        finally:
            await _close(nodes)
    asyncio.run(main())


def test_a_node_with_another_key_is_refused_and_a_restarted_peer_reached_again() -> None:
    async def main() -> None:
        nodes, inboxes = await _nodes([KEY, b"another key of thirty-two bytes!"])
        try:
            nodes[1].send(0, b"forged")
            async with asyncio.timeout(10):
                while nodes[0].counters.refused == 0:
                    await asyncio.sleep(0.01)  # polling a counter, not waiting out a time
            assert inboxes[0].got == []
            # Node 1 restarts with the cluster's key on a new port: node 0 reaches it.
            await nodes[1].close()
            inbox = Inbox()
            nodes[1] = Transport(1, ("127.0.0.1", 0), {0: ("127.0.0.1", nodes[0].port)}, KEY,
                                 inbox)
            await nodes[1].start()
            nodes[0].set_peer(1, ("127.0.0.1", nodes[1].port))
            nodes[0].send(1, b"hello again")
            nodes[1].send(0, b"and back")
            await inbox.until(1)
            await inboxes[0].until(1)
            assert inbox.got == [(0, b"hello again")] and inboxes[0].got == [(1, b"and back")]
        finally:
            await _close(nodes)
    asyncio.run(main())


def test_sends_to_an_unreachable_peer_never_block_and_are_counted() -> None:
    async def main() -> None:
        lone = Transport(0, ("127.0.0.1", 0), {1: ("127.0.0.1", 9)}, KEY, Inbox())
        await lone.start()
        try:
            for _ in range(QUEUE_FRAMES + 10):
                lone.send(1, b"x")
            lone.send(5, b"to nobody")
            assert lone.counters.dropped == 11
        finally:
            await lone.close()
    asyncio.run(main())


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_connection_reset_while_idle_is_made_again(loop: str) -> None:
    """Node 0's connection to node 1 is reset while it has nothing to send (a peer killed);
    node 1 then listens again on the same port: node 0's next sends find the dead connection,
    connect again and arrive, on both event loops. This checks reconnection only: the uvloop
    path it was written for (a write to a connection uvloop has already closed raises
    RuntimeError, which once ended the peer's task) is guarded in transport.py but not
    reproduced here; the nemesis's seed 761953997 is what exercises it."""
    async def main() -> None:
        reset = asyncio.Event()

        async def resetting(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(bytes(NONCE_BYTES) + cluster_mark("twinbench"))
            await reader.read(1)  # node 0 is connected and has sent
            writer.transport.abort()  # RST
            reset.set()

        fake = await asyncio.start_server(resetting, "127.0.0.1", 0)
        port = fake.sockets[0].getsockname()[1]
        inbox = Inbox()
        node0 = Transport(0, ("127.0.0.1", 0), {1: ("127.0.0.1", port)}, KEY, Inbox())
        await node0.start()
        node1: Transport | None = None
        try:
            node0.send(1, b"to the fake")
            async with asyncio.timeout(10):
                await reset.wait()
            fake.close()
            await fake.wait_closed()
            await asyncio.sleep(0.2)  # the reset arrives while node 0 sends nothing
            node1 = Transport(1, ("127.0.0.1", port), {}, KEY, inbox)
            await node1.start()
            async with asyncio.timeout(10):
                while not inbox.got:  # the transport may lose messages, never the peer
                    node0.send(1, b"again")
                    await asyncio.sleep(0.05)
            assert inbox.got[0] == (0, b"again")
        finally:
            await node0.close()
            if node1 is not None:
                await node1.close()

    if loop == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


def test_a_node_of_another_cluster_id_is_refused_whatever_its_key() -> None:
    async def main() -> None:
        inboxes = [Inbox(), Inbox()]
        ours = Transport(0, ("127.0.0.1", 0), {}, KEY, inboxes[0], cluster_id="ours")
        theirs = Transport(1, ("127.0.0.1", 0), {}, KEY, inboxes[1], cluster_id="theirs")
        for t in (ours, theirs):
            await t.start()
        ours.set_peer(1, ("127.0.0.1", theirs.port))
        theirs.set_peer(0, ("127.0.0.1", ours.port))
        try:
            async with asyncio.timeout(10):
                while ours.last_refusal is None or theirs.last_refusal is None:
                    ours.send(1, b"hello")
                    theirs.send(0, b"hello")
                    await asyncio.sleep(0.05)  # polling for both ends' refusals
            assert inboxes[0].got == [] and inboxes[1].got == []
            assert "another cluster than 'ours'" in (ours.last_refusal or "")
            assert "another cluster than 'theirs'" in (theirs.last_refusal or "")
            assert ours.counters.refused >= 1 and theirs.counters.refused >= 1
        finally:
            for t in (ours, theirs):
                await t.close()
    asyncio.run(main())
