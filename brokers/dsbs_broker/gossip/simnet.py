"""An in-memory network with a simulated clock for the gossip state machine (tests, figures).

Time advances in fixed steps; a datagram sent during one step is delivered during the next
(one step of latency), or lost with probability ``loss``. Nodes that are "killed" neither send
nor receive, as after a SIGKILL. ``partition`` splits the nodes into sides that cannot reach
each other (every datagram across is dropped) until ``heal``. Everything is seeded, so a run is
reproducible. Members share ``SIM_KEY`` (authenticated gossip, as brokers run by default) unless
``key=None`` asks for insecure gossip.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.gossip.swim import Addr, SwimNode

SIM_KEY = b"simnet cluster key, not a secret"  # 32 bytes


@dataclass
class SimStats:
    packets: int = 0
    bytes: int = 0
    lost: int = 0
    cut: int = 0  # dropped by a partition
    max_packet: int = 0
    per_node: dict[int, int] = field(default_factory=dict)


class SimNet:
    def __init__(
        self,
        config: GossipConfig,
        *,
        loss: float = 0.0,
        seed: int = 0,
        step_s: float | None = None,
        offset_replicas: int = 2,
        offset_commit_acks: int = 1,
        key: bytes | None = SIM_KEY,
    ) -> None:
        self.cfg = config
        self.key = key
        self.loss = loss
        self.rng = random.Random(seed)
        self._seed = seed
        # A step well below the ack timeout, so timers fire close to when they are due.
        self.step_s = step_s if step_s is not None else min(config.tick_s,
                                                            config.ack_timeout_s / 4)
        self.now = 0.0
        self.nodes: dict[int, SwimNode] = {}
        self.by_addr: dict[Addr, SwimNode] = {}
        self.down: set[int] = set()
        self._incarnations: dict[int, int] = {}
        self._inflight: list[tuple[Addr, Addr, bytes]] = []
        self._side: dict[int, int] = {}  # node id -> side while partitioned; empty when whole
        self._cuts: set[tuple[int, int]] = set()  # (from, to): one-sided cuts
        self.stats = SimStats()
        self.offset_replicas = offset_replicas
        self.offset_commit_acks = offset_commit_acks

    @staticmethod
    def addr(node_id: int) -> Addr:
        return (f"10.0.{node_id // 250}.{node_id % 250 + 1}", 7946)

    def add(self, node_id: int, seeds: tuple[int, ...] = ()) -> SwimNode:
        """Start (or restart) a member; a restart gets the next incarnation, as if persisted."""
        inc = self._incarnations.get(node_id, 0) + 1
        self._incarnations[node_id] = inc
        node = SwimNode(
            self.cfg, node_id=node_id, gossip_addr=self.addr(node_id),
            kafka_addr=(self.addr(node_id)[0], 9092), incarnation=inc, now=self.now,
            seeds=tuple(self.addr(s) for s in seeds),
            rng=random.Random(self._seed * 1_000_003 + node_id * 7919 + inc),
            offset_replicas=self.offset_replicas, offset_commit_acks=self.offset_commit_acks,
            key=self.key,
        )
        self.nodes[node_id] = node
        self.by_addr[node.addr] = node
        self.down.discard(node_id)
        return node

    def add_converged(self, n: int) -> None:
        """Start members 0..n-1 that already know each other (as after a long quiet run),
        so large-cluster tests measure dissemination rather than an n-way bootstrap."""
        nodes = [self.add(i) for i in range(n)]
        states = [(nd.members.members[nd.node_id].state, nd.members.members[nd.node_id].encoded)
                  for nd in nodes]
        for nd in nodes:
            for u, enc in states:
                if u.node_id != nd.node_id:
                    nd.members.set(u, self.now, enc)

    def kill(self, node_id: int) -> None:
        self.down.add(node_id)

    def pause(self, node_id: int) -> None:
        """Stop a member as SIGSTOP does: it neither sends nor receives (what was sent to it
        meanwhile is lost, as a full socket buffer would lose it) until ``resume``."""
        self.down.add(node_id)

    def resume(self, node_id: int) -> None:
        """Continue a paused member with the state it had: its next tick sees the time jump."""
        self.down.discard(node_id)

    def restart(self, node_id: int, seeds: tuple[int, ...] = ()) -> SwimNode:
        """Start a killed member again with the topic and partition records, the election
        promises, the committed offsets and the transaction records it held, as the broker's
        files give them back (``add`` alone starts with empty tables)."""
        old = self.nodes[node_id]
        node = self.add(node_id, seeds)
        node.offsets.load(old.offsets.entries.values())
        node.transactions.load(old.transactions.entries.values())
        for rec in old.topics.records.values():
            node.topics.apply(rec)
        for held in old.topics.partitions.values():
            for part, _ in held.values():
                node.topics.apply_partition(part)
        node.topics.unpersisted = []
        node.topics.unpersisted_partitions = []
        node.leadership.load_promises(old.leadership.persisted)
        node.leadership.resume()
        return node

    def partition(self, *sides: set[int] | frozenset[int] | tuple[int, ...]) -> None:
        """Cut the network between ``sides`` (node ids; nodes named nowhere form one more
        side together). Datagrams already in flight across the cut are lost too."""
        self._side = {n: i for i, side in enumerate(sides) for n in side}
        self._inflight = [f for f in self._inflight if self._reachable(f[0], f[1])]

    def cut(self, src: int, dst: int) -> None:
        """Drop every datagram from ``src`` to ``dst`` (one way only) until ``heal``."""
        self._cuts.add((src, dst))

    def heal(self) -> None:
        self._side = {}
        self._cuts = set()

    def connected(self, a: int, b: int) -> bool:
        """Can members ``a`` and ``b`` reach each other (both up, on one side)?"""
        return (a not in self.down and b not in self.down
                and self._side.get(a, -1) == self._side.get(b, -1))

    def _reachable(self, src: Addr, dst: Addr) -> bool:
        if not self._side and not self._cuts:
            return True
        a, b = self.by_addr.get(src), self.by_addr.get(dst)
        if a is None or b is None:
            return True
        if (a.node_id, b.node_id) in self._cuts:
            return False
        return self._side.get(a.node_id, -1) == self._side.get(b.node_id, -1)

    def step(self) -> None:
        self.now += self.step_s
        inflight, self._inflight = self._inflight, []
        for src, dst, data in inflight:
            node = self.by_addr.get(dst)
            if node is None or node.node_id in self.down:
                continue
            node.receive(data, src, self.now)
            self._collect(node)
        for nid, node in self.nodes.items():
            if nid in self.down:
                continue
            node.tick(self.now)
            self._collect(node)

    def _collect(self, node: SwimNode) -> None:
        if not node.outbox:
            return
        st = self.stats
        for dst, data in node.take_outbox():
            st.packets += 1
            st.bytes += len(data)
            st.max_packet = max(st.max_packet, len(data))
            st.per_node[node.node_id] = st.per_node.get(node.node_id, 0) + 1
            if self.loss and self.rng.random() < self.loss:
                st.lost += 1
                continue
            if (self._side or self._cuts) and not self._reachable(node.addr, dst):
                st.cut += 1
                continue
            self._inflight.append((node.addr, dst, data))

    def run_until(self, done: Callable[[], bool], *, timeout_s: float,
                  check_every_s: float | None = None) -> float | None:
        """Step until ``done()``; returns the simulated seconds it took, None on timeout."""
        start = self.now
        every = max(1, round((check_every_s or self.step_s) / self.step_s))
        i = 0
        while self.now - start < timeout_s:
            self.step()
            i += 1
            if i % every == 0 and done():
                return self.now - start
        return None

    def run_for(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end:
            self.step()

    def live_nodes(self) -> list[SwimNode]:
        return [n for nid, n in self.nodes.items() if nid not in self.down]
