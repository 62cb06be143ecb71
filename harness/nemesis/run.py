"""One nemesis run: a cluster in network namespaces, the clients, the schedule, the history.

The cluster: three brokers of one architecture, each in its own namespace (so one can be cut
off, or cut one way), failure detection shortened as the contract tests shorten it. The topic:
``PARTITIONS`` partitions, replication factor 3, min.insync.replicas 2. The clients, in the
root namespace, are librdkafka's (confluent-kafka): one idempotent acks=all producer writing
``p<partition>-<sequence>`` to every partition; a consumer group of ``MEMBERS`` members that
commit synchronously after every batch they are handed; a monitor reading the group's
committed offsets back; a watcher asking every broker's Metadata for leaders and epochs. The
schedule (``schedule.py``) runs meanwhile. Then everything heals; the run waits until every
partition is led and fully in sync again (or ``RECOVERY_S`` passed), lets the group catch up,
and reads every partition back from the start with a fresh consumer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brokers.core.errors import UserError
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from brokers.core.protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.running import BrokerProcess, ProcessCluster
from harness.cluster.spec import ClusterSpec
from harness.nemesis import checker
from harness.nemesis.checker import Commit, CommittedRead, Delivery, History, LeaderSeen
from harness.nemesis.schedule import COORDINATOR, LEADER, OPS, Step, generate

PARTITIONS = 3
DEBUG = os.environ.get("TWINBENCH_NEMESIS_DEBUG", "")  # e.g. cgrp,consumer
MEMBERS = 2
BROKERS = 3
RECOVERY_S = 90.0  # after the last heal: every partition led and in sync again by then
CATCH_UP_S = 90.0  # then: the group has been handed every acknowledged record by then
# Failure detection as the contract tests shorten it (a round of faults takes seconds).
OPTIONS: dict[str, dict[str, Any]] = {"dsbs": {"gossip_preset": "local"},
                                      "zk": {"session_timeout_ms": 6000}}


@dataclass
class Outcome:
    arch: str
    seed: int
    schedule: list[str]
    acked: int
    delivered: int
    commits: int
    recovered: bool
    found: dict[str, list[str]]
    seconds: float

    def counts(self) -> dict[str, int]:
        return checker.counts(self.found)

    def failed(self) -> bool:
        """A violation of what the architecture claims (``checker.claims``)."""
        return any(self.found[k] for k in checker.claims(self.arch))

    def as_json(self) -> dict[str, Any]:
        return {"arch": self.arch, "seed": self.seed, "schedule": self.schedule,
                "acknowledged": self.acked, "delivered": self.delivered,
                "commits": self.commits, "recovered": self.recovered,
                "violations": self.counts(), "claimed": list(checker.claims(self.arch)),
                "examples": checker.examples(self.found),
                "seconds": round(self.seconds, 1)}


class _Clients:
    """The producer, the group, the monitor and the watcher, each in its own thread."""

    def __init__(self, cluster: ProcessCluster, topic: str, history: History) -> None:
        import confluent_kafka as ck

        self.ck = ck
        self.cluster = cluster
        self.topic = topic
        self.group = f"nemesis-{topic}"
        self.h = history
        self.lock = threading.Lock()
        self.stop_producing = threading.Event()
        self.stop_all = threading.Event()
        self.threads = [threading.Thread(target=f, name=f"nemesis-{f.__name__}", daemon=True)
                        for f in (self._produce, self._monitor, self._watch)]
        self.threads += [threading.Thread(target=self._consume, args=(i,), daemon=True,
                                          name=f"nemesis-member-{i}") for i in range(MEMBERS)]
        self.unsent = 0
        self.t0 = time.monotonic()  # times in the history count from the load's start

    def now(self) -> float:
        return time.monotonic() - self.t0

    def start(self) -> None:
        self.t0 = time.monotonic()
        for t in self.threads:
            t.start()

    def delivered(self) -> int:
        with self.lock:
            return len(self.h.deliveries)

    def acked(self) -> int:
        with self.lock:
            return sum(len(v) for v in self.h.acked.values())

    def caught_up(self) -> bool:
        with self.lock:
            got = {(d.partition, d.value) for d in self.h.deliveries}
            return all((p, v) in got for p, recs in self.h.acked.items() for v, _ in recs)

    def stop_producer(self) -> None:
        """Stop producing and wait for the last acknowledgements (or their timeout)."""
        self.stop_producing.set()
        self.threads[0].join(90)

    def finish(self) -> None:
        self.stop_all.set()
        for t in self.threads:
            t.join(60)

    # --- threads ---------------------------------------------------------------------------
    def _producer(self) -> Any:
        return self.ck.Producer({
            "bootstrap.servers": self.cluster.bootstrap, "acks": "all",
            "enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 60_000,
            "topic.metadata.refresh.interval.ms": 1000, "log_level": 2})

    def _produce(self) -> None:
        acked = self.h.acked

        def done(err: Any, msg: Any) -> None:
            if err is None:
                with self.lock:
                    acked.setdefault(msg.partition(), []).append(
                        (msg.value().decode(), msg.offset()))

        producer = self._producer()
        seq = 0
        while not self.stop_producing.is_set():
            for p in range(PARTITIONS):
                try:
                    producer.produce(self.topic, f"p{p}-{seq:07d}".encode(), partition=p,
                                     on_delivery=done)
                except BufferError:
                    producer.poll(0.05)
                except self.ck.KafkaException:
                    # A fatal idempotence error (the producer is unusable): a new one, as an
                    # application would; its records are new sequences, so nothing repeats.
                    self.unsent += producer.flush(10)
                    producer = self._producer()
            seq += 1
            producer.poll(0.005)
        self.unsent += producer.flush(60)

    def _consume(self, member: int) -> None:
        ck = self.ck
        consumer = ck.Consumer({
            "bootstrap.servers": self.cluster.bootstrap, "group.id": self.group,
            "client.id": f"member-{member}", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 10_000,
            # A request to a paused broker stays unanswered: give up on it (and the
            # connection) after 10 s instead of librdkafka's 60.
            "socket.timeout.ms": 10_000,
            "heartbeat.interval.ms": 1000, "log_level": 2,
            # librdkafka's own debug contexts on stderr, to see why a group stalls.
            **({"debug": DEBUG, "log_level": 7} if DEBUG else {})})
        consumer.subscribe([self.topic])
        try:
            while not self.stop_all.is_set():
                polled = self.now()
                msgs = consumer.consume(500, 0.5)
                got = [Delivery(polled, m.partition(), m.offset(), m.value().decode(), member)
                       for m in msgs if m.error() is None]
                if got:
                    with self.lock:
                        self.h.deliveries.extend(got)
                    try:
                        tps = consumer.commit(asynchronous=False)
                    except ck.KafkaException:
                        continue  # not acknowledged: it counts for nothing
                    done = self.now()
                    with self.lock:
                        self.h.commits.extend(Commit(done, tp.partition, tp.offset, member)
                                              for tp in tps or ()
                                              if tp.error is None and tp.offset >= 0)
        finally:
            with contextlib.suppress(Exception):
                consumer.close()

    def _monitor(self) -> None:
        """The group's committed offsets, read back from its coordinator every 0.5 s with the
        harness's own probe (FindCoordinator, then OffsetFetch): librdkafka's admin client
        can abort the whole process on an assertion when brokers die under it."""
        while not self.stop_all.wait(0.5):
            asked = self.now()
            try:
                broker, offsets = self._committed()
            except (OSError, ConnectionError, ValueError):
                continue  # unanswered reads prove nothing
            with self.lock:
                self.h.committed_reads.extend(CommittedRead(asked, p, o, broker)
                                              for p, o in offsets.items())

    def _committed(self) -> tuple[int, dict[int, int]]:
        """The group's coordinator, and partition -> committed offset (-1: none) as it
        answers; {} when it answers with an error."""
        answered = group_offsets(self.cluster, self.group, self.topic)
        if answered is None:
            return -1, {}
        node, got = answered
        if got.error_code:
            return node, {}
        return node, {x.partition_index: x.committed_offset for t in got.topics
                      for x in t.partitions if x.error_code == 0}

    def _watch(self) -> None:
        while not self.stop_all.wait(0.3):
            for b in list(self.cluster.brokers):
                parts = partitions_of(b, self.topic, 1.0) if b.state == "running" else None
                if parts is None:
                    continue
                at = self.now()
                seen = [LeaderSeen(at, b.node_id, x.partition_index, x.leader_epoch,
                                   x.leader_id) for x in parts if x.error_code == 0]
                with self.lock:
                    self.h.leaders.extend(seen)


def group_offsets(cluster: ProcessCluster, group: str, topic: str, *,
                  require_stable: bool = False) -> tuple[int, OffsetFetchResponse] | None:
    """``group``'s offsets of ``topic``'s partitions as its coordinator answers OffsetFetch
    (v7 asking for stable offsets only, else v5), with the coordinator's id; found with
    FindCoordinator from the first running broker that names one; None when none does."""
    for b in list(cluster.brokers):
        if b.state != "running":
            continue
        try:
            with KafkaProbe(b.host, b.port, timeout_s=2.0) as probe:
                found = probe.request(ApiKey.FIND_COORDINATOR, 1,
                                      FindCoordinatorRequest(key=group))
        except (OSError, ConnectionError):
            continue  # this broker does not answer (cut off, say): ask the next
        assert isinstance(found, FindCoordinatorResponse)
        if found.error_code:
            continue
        with KafkaProbe(found.host, found.port, timeout_s=2.0) as probe:
            got = probe.request(ApiKey.OFFSET_FETCH, 7 if require_stable else 5,
                                OffsetFetchRequest(group_id=group, require_stable=require_stable,
                                                   topics=[OffsetFetchRequestTopic(
                                                       name=topic, partition_indexes=list(
                                                           range(PARTITIONS)))]))
        assert isinstance(got, OffsetFetchResponse)
        return found.node_id, got
    return None


def partitions_of(b: BrokerProcess, topic: str, timeout_s: float) -> list[Any] | None:
    """``topic``'s partitions as broker ``b``'s Metadata shows them; None when it does not
    answer (down, paused, cut off)."""
    try:
        with KafkaProbe(b.host, b.port, timeout_s=timeout_s) as probe:
            md = probe.metadata([topic])
    except (OSError, ConnectionError, ValueError):
        return None
    return [x for t in md.topics if t.name == topic for x in t.partitions]


class Nemesis:
    """Applies steps to the cluster as it actually is: a step aimed at the leader (or at the
    transaction coordinator, which ``coordinator`` finds) is resolved when it runs, and a step
    that cannot apply (a paused broker paused again, an aimed step while nobody is known) is
    skipped; ``repair`` undoes whatever is in force."""

    def __init__(self, cluster: ProcessCluster, topic: str,
                 coordinator: Callable[[], int | None] | None = None) -> None:
        self.cluster = cluster
        self.topic = topic
        self.coordinator = coordinator
        self.cuts: set[tuple[int, int]] = set()
        self.undos: list[Step] = []  # the ends of aimed faults, applied when due

    def _leader(self) -> int | None:
        """Partition 0's leader as the first running broker that answers shows it."""
        for b in self.cluster.brokers:
            parts = partitions_of(b, self.topic, 1.0) if b.state == "running" else None
            for x in parts or ():
                if x.partition_index == 0 and x.leader_id >= 0:
                    return int(x.leader_id)
        return None

    def apply(self, step: Step) -> str:
        """Apply ``step``; what was done, for the log ("skipped: why" when nothing was). A
        fault aimed at the leader or a coordinator is undone ``lasts_s`` later."""
        target = step.target
        if target in (LEADER, COORDINATOR):
            if target == LEADER:
                found = self._leader()
            else:
                found = self.coordinator() if self.coordinator is not None else None
            if found is None:
                return f"skipped: no {'leader' if target == LEADER else 'coordinator'} known"
            if step.other == found:
                return "skipped: the aimed broker is the other end of the cut"
            target = found
            done = self.apply(dataclasses.replace(step, target=target))
            if not done.startswith("skipped"):
                # Its end, due ``lasts_s`` later; a step that did nothing has none (it would
                # undo another step's fault early).
                undo = {"kill": "restart", "pause": "resume", "isolate": "heal",
                        "cut": "uncut"}[step.op]
                self.undos.append(Step(round(step.at_s + step.lasts_s, 1), undo, target,
                                       step.other))
            return done
        b = self.cluster.broker(target)
        state = b.state
        c = self.cluster
        op = step.op
        if op == "kill" and state != "exited":
            c.kill_broker(target)
        elif op == "restart" and state == "exited" and not b.isolated:
            # Not waited for: a Raft twin broker serves only once a quorum registers it, which
            # the faults in force may deny; repair() waits for it with the network whole.
            c.restart_broker(target, timeout_s=60, wait=False)
        elif op == "pause" and state in ("running", "isolated"):
            c.pause_broker(target)
        elif op == "resume" and b.paused and state != "exited":
            c.resume_broker(target)
        elif op == "isolate" and not b.isolated and state != "exited":
            c.isolate_broker(target)
        elif op == "heal" and b.isolated:
            c.heal_broker(target)
        elif op == "cut" and (target, step.other) not in self.cuts and state != "exited":
            c.cut_link(target, step.other)
            self.cuts.add((target, step.other))
        elif op == "uncut" and (target, step.other) in self.cuts:
            c.uncut_link(target, step.other)
            self.cuts.discard((target, step.other))
        elif op not in OPS:
            raise UserError(f"unknown nemesis operation {op!r}")
        else:
            return f"skipped: broker {target} is {state}"
        return f"{op} {target}" + (f"->{step.other}" if step.other >= 0 else "")

    def repair(self) -> list[str]:
        """Every broker running and every link up again."""
        done = []
        for b in self.cluster.brokers:
            if b.paused and b.state != "exited":
                self.cluster.resume_broker(b.node_id)
                done.append(f"resume {b.node_id}")
            if b.isolated:
                self.cluster.heal_broker(b.node_id)
                done.append(f"heal {b.node_id}")
        for src, dst in sorted(self.cuts):
            self.cluster.uncut_link(src, dst)
            done.append(f"uncut {src}->{dst}")
        self.cuts.clear()
        for b in self.cluster.brokers:
            if b.state == "exited":
                # All first, then each awaited: one broker alone may not make a quorum.
                self.cluster.restart_broker(b.node_id, timeout_s=60, wait=False)
                done.append(f"restart {b.node_id}")
        for b in self.cluster.brokers:
            self.cluster.await_started(b.node_id, timeout_s=60)
        return done


def drive(nemesis: Nemesis, steps: list[Step], t0: float, log: Any) -> list[str]:
    """Apply ``steps`` at their times after ``t0`` (the ends of aimed faults in between, when
    due), then repair everything; the steps as applied (aims resolved, skips named), a line
    each also given to ``log``."""
    applied: list[str] = []
    for step in steps:
        while True:  # the ends of aimed faults falling before this step, in order
            undo = next(iter(sorted(nemesis.undos, key=lambda u: u.at_s)), None)
            if undo is None or undo.at_s > step.at_s:
                break
            nemesis.undos.remove(undo)
            _sleep_until(t0 + undo.at_s)
            done = nemesis.apply(undo)
            applied.append(f"{undo.at_s:.1f}s {done}")
            log(f"{undo}: {done}")
        _sleep_until(t0 + step.at_s)
        done = nemesis.apply(step)
        applied.append(f"{step.at_s:.1f}s {done}")
        log(f"{step}: {done}")
    fixed = nemesis.repair()
    if fixed:
        applied.append(f"{time.monotonic() - t0:.1f}s repair: {', '.join(fixed)}")
        log(f"repair: {', '.join(fixed)}")
    return applied


def _sleep_until(t: float) -> None:
    delay = t - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def in_sync(cluster: ProcessCluster, topic: str) -> bool:
    everyone = sorted(b.node_id for b in cluster.brokers)
    for b in cluster.brokers:
        parts = partitions_of(b, topic, 2.0)
        if parts is None or len(parts) != PARTITIONS or any(
                x.leader_id < 0 or sorted(x.isr_nodes) != everyone for x in parts):
            return False
    return True


def wait_for(cond: Any, timeout_s: float, every_s: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(every_s)
    return bool(cond())


def _read_back(ck: Any, bootstrap: str, topic: str) -> dict[int, list[tuple[int, str]]]:
    """Every partition from its start to its high watermark, with a fresh consumer."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"readback-{topic}",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            "log_level": 2})
    try:
        ends = {p: consumer.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=30)[1]
                for p in range(PARTITIONS)}
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got: dict[int, list[tuple[int, str]]] = {p: [] for p in range(PARTITIONS)}
        nxt = dict.fromkeys(range(PARTITIONS), 0)
        deadline = time.monotonic() + 120
        while any(nxt[p] < ends[p] for p in range(PARTITIONS)):
            if time.monotonic() > deadline:
                raise UserError(f"reading {topic} back took over 120 s (at {nxt}, ends {ends})")
            for m in consumer.consume(1000, 0.5):
                if m.error() is None:
                    got[m.partition()].append((m.offset(), m.value().decode()))
                    nxt[m.partition()] = m.offset() + 1
        return got
    finally:
        consumer.close()


def run(arch: str, seed: int, duration_s: float, workdir: Path,
        log: Any = print, steps: list[Step] | None = None) -> Outcome:
    """One seed against one architecture (or the given ``steps``); ``log`` gets a line per
    step."""
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic

    if steps is None:
        steps = generate(seed, BROKERS, duration_s)
    started = time.monotonic()
    spec = ClusterSpec(arch, brokers=BROKERS, data_dir=workdir, network="netns",
                       options={k: v for k, v in OPTIONS.items() if k == arch})
    history = History(PARTITIONS)
    with ProcessCluster(spec) as cluster:
        topic = f"nemesis-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2})
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=3,
                                      config={"min.insync.replicas": "2"})],
                            request_timeout=30)[topic].result(30)
        if not wait_for(lambda: in_sync(cluster, topic), 60):
            raise UserError(f"{arch}: {topic} never had a leader and a full ISR")
        clients = _Clients(cluster, topic, history)
        clients.start()
        t0 = clients.t0
        nemesis = Nemesis(cluster, topic)
        try:
            applied = drive(nemesis, steps, t0, lambda line: log(f"  {arch} seed {seed}: {line}"))
            recovered = wait_for(lambda: in_sync(cluster, topic), RECOVERY_S)
            log(f"  {arch} seed {seed}: {'in sync' if recovered else 'NOT in sync'} after "
                f"{time.monotonic() - t0:.1f} s; {clients.acked()} acknowledged, "
                f"{clients.delivered()} handed to the group")
            clients.stop_producer()
            caught_up = wait_for(lambda: clients.caught_up(), CATCH_UP_S)
            log(f"  {arch} seed {seed}: the group {'caught up' if caught_up else 'lags'} "
                f"after {time.monotonic() - t0:.1f} s; {clients.acked()} acknowledged, "
                f"{clients.delivered()} handed to the group")
        finally:
            clients.finish()
        history.final = _read_back(ck, cluster.bootstrap, topic)
    found = checker.check(history)
    return Outcome(arch, seed, applied, clients.acked(), clients.delivered(),
                   len(history.commits), recovered, found, time.monotonic() - started)
