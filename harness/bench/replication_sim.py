"""`make sim-replication`: how often does DSBS replication lose or duplicate acknowledged records?

docs/replication.md names the failure sequences DSBS leadership cannot exclude without a
consensus round; this counts how often they happen, over many seeded scenarios on the simulated
network. Everything is the product's own code but the sockets and the disks:

* the gossip side is ``SwimNode`` (SWIM, anti-entropy, ``leadership.py``) on ``SimNet``, LOCAL
  timers, one replicated partition (a topic of replication factor 3 on 3 brokers);
* each broker's replica of it uses the core's sans-IO pieces as ``ReplicaManager`` and the
  fetcher do (``LeaderPartition``: high watermark, ISR proposals, min.insync.replicas;
  ``LeaderEpochCache`` and ``truncation.next_cut``: a follower cuts its log to its leader's
  before fetching): a follower reachable from its leader copies its log each step and reports
  its log end as Kafka's fetch offset does; a log is a list of (batch id, leader epoch);
* one idempotent producer, one batch in flight (acks=-1 or 1), sends to the leader named by a
  random live broker's view, retries a failed batch with the same id (a new leader that already
  holds it answers with its offset, as the core's producer state does), and counts a batch
  acknowledged when the leader answered it without error (acks=-1: once the high watermark
  passed it, within the request timeout, while it still led);
* faults, by mix: the leader killed (and restarted later), random brokers killed and restarted,
  random network partitions (0.1-4 s: shorter and longer than failure detection), datagram
  loss; then everything heals, and once every broker agrees and every log is caught up, the
  final leader's log below its high watermark is checked against what was acknowledged.

A scenario *loses* when an acknowledged batch is missing from that log, *duplicates* when a
batch is in it twice, and reorders when acknowledged batches appear out of order. Per mix and
setting (acks, min.insync.replicas) it prints scenarios, scenarios with each, batches
acknowledged and lost, and the median failover (from a leader's kill to the next acknowledged
batch). ``--seeds N`` per cell (default 100); nothing is written.

Timescale: LOCAL gossip detects a death in about a second, so replica.lag.time.max.ms is 1.5 s
here (Kafka's 30 s default against LAN detection of ~6 s, scaled alike).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from brokers.core.errors import KafkaError, OffsetOutOfRange
from brokers.core.replication.epochs import LeaderEpochCache
from brokers.core.replication.leader import LeaderPartition
from brokers.core.replication.truncation import first_question, next_cut, no_epochs_cut
from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.gossip.simnet import SimNet
from brokers.dsbs_broker.gossip.swim import SwimNode
from brokers.dsbs_broker.packets.wire import TopicRecord
from brokers.dsbs_broker.tables.leaders import NO_LEADER

TOPIC = "t"
MIXES = ("kill-leader", "kills", "partitions", "mixed")
JOIN_TIMEOUT_S = 3.0  # DsbsConfig.join_timeout_s: a restarted broker serves after it anyway


@dataclass(frozen=True)
class Settings:
    mix: str = "kill-leader"
    acks: int = -1
    min_insync_replicas: int = 2
    brokers: int = 3
    replication_factor: int = 3
    lag_ms: int = 1500  # replica.lag.time.max.ms at LOCAL timescale
    produce_every_s: float = 0.05
    request_timeout_s: float = 2.0
    fault_phase_s: float = 10.0
    settle_timeout_s: float = 60.0


@dataclass
class Result:
    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: bool = False
    converged: bool = True
    failovers: list[float] = field(default_factory=list)
    elections: int = 0


@dataclass
class Replica:
    """One broker's replica of the partition (what ReplicaManager and the fetcher hold)."""

    node_id: int
    log: list[tuple[int, int]] = field(default_factory=list)  # (batch id, leader epoch)
    cache: LeaderEpochCache = field(default_factory=LeaderEpochCache)
    leader: LeaderPartition | None = None
    following: tuple[int, int] | None = None  # (leader, epoch)
    truncated: bool = False
    hw: int = 0  # the high watermark as a follower last learnt it
    isr_rid: int | None = None  # an ISR change asked of the gossip node
    started: float = 0.0

    def restart(self, now: float) -> None:
        """After a kill: the log is on disk, the rest is rebuilt (the epoch cache from the
        batches, as the broker does from batch headers)."""
        self.cache = LeaderEpochCache()
        for offset, (_, epoch) in enumerate(self.log):
            self.cache.assign(epoch, offset)
        self.leader, self.following, self.truncated = None, None, False
        self.hw, self.isr_rid, self.started = 0, None, now

    def cut(self, end: int) -> None:
        if end < len(self.log):
            del self.log[end:]
            self.cache.truncate_from_end(end)
            self.hw = min(self.hw, end)


class Scenario:
    def __init__(self, settings: Settings, seed: int) -> None:
        self.s = settings
        self.rng = random.Random(seed)
        self.net = SimNet(GossipConfig.LOCAL, seed=seed)
        n = settings.brokers
        self.ids = tuple(range(n))
        for i in self.ids:
            self.net.add(i, seeds=self.ids)
        self.net.run_until(lambda: all(len(x.members.live_ids()) == n
                                       for x in self.net.live_nodes()), timeout_s=10)
        self.replicas_of = tuple(self.ids[:settings.replication_factor])
        rec = TopicRecord(TOPIC, 1, 0, 1, settings.replication_factor, self.replicas_of, (),
                          True, 1 + seed)
        for node in self.net.nodes.values():
            node.add_topic(rec, self.net.now)
        self.reps = {i: Replica(i) for i in self.ids}
        self.result = Result()
        # The producer: the batch in flight (id, the leadership that appended it, deadline,
        # end offset), the next batch id, the leader it believes in, acknowledged ids.
        self.next_batch = 0
        self.in_flight: tuple[int, LeaderPartition, float, int] | None = None
        self.next_send = self.net.now
        self.believed = NO_LEADER
        self.acked: list[int] = []
        self.killed_leader_at: float | None = None

    # --- the views ---------------------------------------------------------------------------
    def node(self, i: int) -> SwimNode:
        return self.net.nodes[i]

    def up(self, i: int) -> bool:
        return i not in self.net.down

    def serving(self, i: int) -> bool:
        return self.node(i).anti_entropy.synced or (
            self.net.now - self.reps[i].started >= JOIN_TIMEOUT_S)

    def view(self, i: int) -> tuple[int, int, tuple[int, ...]]:
        """(leader, epoch, isr) as broker i's coordinator shows them (``_partition``)."""
        node = self.node(i)
        held = node.topics.partition(TOPIC, 0)
        assert held is not None
        leader = held.leader
        if (leader == NO_LEADER or not self.serving(i) or not node.leadership.live(leader)
                or (TOPIC, 0) in node.leadership.resuming):
            leader = NO_LEADER
        return leader, held.leader_epoch, node.leadership.view_isr(held)

    # --- one step ----------------------------------------------------------------------------
    def step(self, producing: bool) -> None:
        self.net.step()
        now_ms = int(self.net.now * 1000)
        for i in self.ids:
            if self.up(i):
                self.apply_view(i, now_ms)
        for i in self.ids:
            if self.up(i):
                self.fetch(i, now_ms)
        for i in self.ids:
            if self.up(i):
                self.isr_duties(i, now_ms)
        self.produce(producing)

    def apply_view(self, i: int, now_ms: int) -> None:
        rep = self.reps[i]
        leader, epoch, isr = self.view(i)
        if leader == i:
            cur = rep.leader
            if cur is not None and cur.leader_epoch == epoch:
                if cur.isr != frozenset(isr) | {i}:
                    cur.isr_committed(isr)
                return
            rep.leader = LeaderPartition(i, epoch, self.replicas_of, isr,
                                         log_end_offset=len(rep.log), high_watermark=rep.hw,
                                         now_ms=now_ms)
            rep.cache.assign(epoch, len(rep.log))
            rep.following, rep.isr_rid = None, None
            return
        rep.leader = None
        if rep.following != (leader, epoch):
            rep.following, rep.truncated = (leader, epoch), False

    def fetch(self, i: int, now_ms: int) -> None:
        """A follower's round with its leader: truncation first, then one fetch."""
        rep = self.reps[i]
        if rep.following is None or rep.following[0] == NO_LEADER:
            return
        lid, epoch = rep.following
        src = self.reps[lid]
        lp = src.leader
        if not self.net.connected(i, lid) or lp is None or lp.leader_epoch != epoch:
            return  # refused (not the leader, another epoch) or unreachable: retry later
        if not rep.truncated:
            for _ in range(64):
                asked = first_question(rep.cache)
                if asked < 0:
                    rep.cut(no_epochs_cut(len(rep.log), rep.hw).end_offset)
                    break
                e, end = src.cache.end_offset_for(asked, len(src.log))
                cut = next_cut(rep.cache, len(rep.log), asked, e, end, rep.hw)
                rep.cut(cut.end_offset)
                if cut.done:
                    break
            rep.truncated = True
        offset = len(rep.log)
        try:
            moved = lp.on_follower_fetch(i, offset, now_ms)
        except OffsetOutOfRange:
            rep.truncated = False  # past the leader's log end: cut again first, as the fetcher
            return
        except KafkaError:
            return
        del moved
        for o in range(offset, len(src.log)):
            batch, e = src.log[o]
            rep.log.append((batch, e))
            rep.cache.assign(e, o)
        rep.hw = min(lp.high_watermark, len(rep.log))
        if not lp.change_in_flight and lp.caught_up():
            self.propose(lid, now_ms)

    def isr_duties(self, i: int, now_ms: int) -> None:
        rep = self.reps[i]
        lp = rep.leader
        if lp is None:
            return
        node = self.node(i)
        if rep.isr_rid is not None:
            outcome = node.leadership.completed.pop(rep.isr_rid, None)
            if outcome is not None:
                rep.isr_rid = None
                if outcome.code == 0 and outcome.record is not None:
                    lp.isr_committed(outcome.record.isr)
                else:
                    lp.isr_refused()
        if now_ms % max(self.s.lag_ms // 2, 10) < 10:
            self.propose(i, now_ms)

    def propose(self, i: int, now_ms: int) -> None:
        rep = self.reps[i]
        lp = rep.leader
        if lp is None or rep.isr_rid is not None:
            return
        isr = lp.propose(now_ms, self.s.lag_ms)
        if isr is None:
            return
        try:
            rep.isr_rid = self.node(i).leadership.change_isr(TOPIC, 0, lp.leader_epoch,
                                                             sorted(isr), self.net.now)
        except KafkaError:
            lp.isr_refused()

    # --- the producer ------------------------------------------------------------------------
    def refresh(self) -> None:
        live = [i for i in self.ids if self.up(i)]
        if live:
            self.believed = self.view(self.rng.choice(live))[0]

    def produce(self, producing: bool) -> None:
        now = self.net.now
        s = self.s
        if self.in_flight is not None:
            batch, lp, deadline, end = self.in_flight
            broker = lp.leader_id
            leads = self.up(broker) and self.reps[broker].leader is lp
            if leads and lp.high_watermark >= end:
                self.acknowledged(batch)
            elif not leads or now >= deadline:
                self.in_flight = None  # NOT_LEADER, timeout: retried with the same id
                self.refresh()
            return
        if not producing or now < self.next_send:
            return
        batch = self.next_batch
        if self.believed == NO_LEADER or not self.up(self.believed):
            self.refresh()
            self.next_send = now + s.produce_every_s
            return
        broker = self.believed
        rep = self.reps[broker]
        leading = rep.leader
        if leading is None or self.view(broker)[0] != broker:
            self.refresh()
            self.next_send = now + s.produce_every_s
            return
        lp = leading
        if s.acks == -1 and len(lp.isr) < s.min_insync_replicas:
            self.next_send = now + s.produce_every_s  # NOT_ENOUGH_REPLICAS: retry
            return
        held = next((o for o, (b, _) in enumerate(rep.log) if b == batch), None)
        if held is None:
            rep.log.append((batch, lp.leader_epoch))
            rep.cache.assign(lp.leader_epoch, len(rep.log) - 1)
            held = len(rep.log) - 1
            lp.on_append(len(rep.log))
        if s.acks == 1:
            self.acknowledged(batch)
            return
        self.in_flight = (batch, lp, now + s.request_timeout_s, held + 1)

    def acknowledged(self, batch: int) -> None:
        self.acked.append(batch)
        self.in_flight = None
        self.next_batch += 1
        self.next_send = self.net.now + self.s.produce_every_s
        if self.killed_leader_at is not None:
            self.result.failovers.append(self.net.now - self.killed_leader_at)
            self.killed_leader_at = None

    # --- faults ------------------------------------------------------------------------------
    def leader_now(self) -> int:
        votes = [self.view(i)[0] for i in self.ids if self.up(i)]
        return max(set(votes), key=votes.count) if votes else NO_LEADER

    def kill(self, i: int) -> None:
        if not self.up(i):
            return
        if i == self.leader_now() and self.killed_leader_at is None:
            self.killed_leader_at = self.net.now
        self.net.kill(i)

    def restart(self, i: int) -> None:
        if self.up(i):
            return
        self.net.restart(i, seeds=self.ids)
        self.reps[i].restart(self.net.now)

    def plan(self) -> list[tuple[float, str, object]]:
        """The scenario's faults: (time, action, argument), times within the fault phase."""
        rng, s = self.rng, self.s
        end = s.fault_phase_s
        events: list[tuple[float, str, object]] = []
        kills = s.mix in ("kills", "mixed")
        parts = s.mix in ("partitions", "mixed")
        if s.mix == "kill-leader":
            at = rng.uniform(1.0, 3.0)
            events += [(at, "kill-leader", None), (at + rng.uniform(1.0, 5.0), "restart-all",
                                                    None)]
        if kills:
            for _ in range(rng.randint(1, 3)):
                at = rng.uniform(0.5, end - 1)
                victim = rng.choice(self.ids)
                events += [(at, "kill", victim),
                           (min(at + rng.uniform(0.5, 5.0), end), "restart", victim)]
        if parts:
            for _ in range(rng.randint(1, 2)):
                at = rng.uniform(0.5, end - 1)
                ids = list(self.ids)
                rng.shuffle(ids)
                cut = rng.randint(1, len(ids) - 1)
                events += [(at, "partition", (set(ids[:cut]), set(ids[cut:]))),
                           (min(at + rng.uniform(0.1, 4.0), end), "heal", None)]
        return sorted(events, key=lambda e: e[0])

    def run(self) -> Result:
        s = self.s
        if s.mix == "mixed":
            self.net.loss = self.rng.uniform(0.0, 0.1)
        start = self.net.now
        events = self.plan()
        while self.net.now - start < s.fault_phase_s + 2.0:
            t = self.net.now - start
            while events and events[0][0] <= t:
                _, action, arg = events.pop(0)
                if action == "kill-leader":
                    leader = self.leader_now()
                    if leader != NO_LEADER:
                        self.kill(leader)
                elif action == "kill":
                    self.kill(arg)  # type: ignore[arg-type]
                elif action == "restart":
                    self.restart(arg)  # type: ignore[arg-type]
                elif action == "restart-all":
                    for i in self.ids:
                        self.restart(i)
                elif action == "partition":
                    self.net.partition(*arg)  # type: ignore[misc]
                elif action == "heal":
                    self.net.heal()
            self.step(producing=True)
        self.net.heal()
        self.net.loss = 0.0
        for i in self.ids:
            self.restart(i)
        deadline = self.net.now + s.settle_timeout_s
        while not self.settled():
            if self.net.now >= deadline:
                self.result.converged = False
                break
            self.step(producing=self.in_flight is not None)
        return self.check()

    def settled(self) -> bool:
        if self.in_flight is not None:
            return False
        views = {self.view(i) for i in self.ids}
        if len(views) != 1:
            return False
        leader, _, isr = views.pop()
        if leader == NO_LEADER or set(isr) != set(self.replicas_of):
            return False
        lp = self.reps[leader].leader
        logs = {tuple(self.reps[i].log) for i in self.replicas_of}
        return (lp is not None and len(logs) == 1
                and lp.high_watermark == len(self.reps[leader].log))

    def check(self) -> Result:
        r = self.result
        r.acked = len(self.acked)
        r.elections = sum(self.node(i).counters["leader_elections"] for i in self.ids)
        leader = self.leader_now()
        if leader == NO_LEADER or self.reps[leader].leader is None:
            r.converged = False
            return r
        lp = self.reps[leader].leader
        assert lp is not None
        final = [b for b, _ in self.reps[leader].log[:lp.high_watermark]]
        present = set(final)
        r.lost = sum(1 for b in self.acked if b not in present)
        r.duplicated = len(final) - len(present)
        order = {b: k for k, b in enumerate(final)}
        kept = [order[b] for b in self.acked if b in order]
        r.reordered = kept != sorted(kept)
        return r


def run_scenario(settings: Settings, seed: int) -> Result:
    return Scenario(settings, seed).run()


@dataclass
class Cell:
    settings: Settings
    results: list[Result]

    def row(self) -> list[str]:
        rs = self.results
        fo = [f for r in rs for f in r.failovers]
        s = self.settings
        return [s.mix, str(s.acks), str(s.min_insync_replicas), str(len(rs)),
                str(sum(r.lost > 0 for r in rs)), str(sum(r.duplicated > 0 for r in rs)),
                str(sum(r.reordered for r in rs)), str(sum(not r.converged for r in rs)),
                str(sum(r.acked for r in rs)), str(sum(r.lost for r in rs)),
                f"{statistics.median(fo):.2f}" if fo else "-"]


HEADER = ["mix", "acks", "min_isr", "scenarios", "losing", "duplicating", "reordering",
          "unsettled", "acked", "lost", "failover_s_p50"]


def measure(mixes: Sequence[str], acks: Sequence[int], min_isrs: Sequence[int],
            seeds: int, first_seed: int = 0) -> list[Cell]:
    cells = []
    for mix in mixes:
        for a in acks:
            for m in min_isrs:
                settings = Settings(mix=mix, acks=a, min_insync_replicas=m)
                cells.append(Cell(settings, [run_scenario(settings, first_seed + k)
                                             for k in range(seeds)]))
    return cells


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.bench.replication_sim", description=(
        "Seeded simulated scenarios of DSBS replication under faults: how often acknowledged "
        "records are lost, duplicated or reordered (docs/replication.md)."))
    p.add_argument("--seeds", type=int, default=100, help="scenarios per cell (default 100)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--mix", choices=MIXES, action="append",
                   help="fault mixes (default: all)")
    p.add_argument("--acks", type=int, choices=(-1, 1), action="append")
    p.add_argument("--min-isr", type=int, choices=(1, 2, 3), action="append")
    args = p.parse_args(argv)
    if args.seeds < 1:
        p.error("--seeds must be at least 1")
    cells = measure(args.mix or MIXES, args.acks or (-1, 1), args.min_isr or (1, 2),
                    args.seeds, args.first_seed)
    rows = [HEADER, *(c.row() for c in cells)]
    widths = [max(len(r[k]) for r in rows) for k in range(len(HEADER))]
    for r in rows:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
