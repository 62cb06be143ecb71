"""The nemesis aimed at transactions: seeded faults at transaction coordinators and partition
leaders while a transactional producer and a consume-transform-produce worker run, then the
checks of ``txn_checker.py``.

The cluster is the queue workload's (``run.py``: three brokers in network namespaces, failure
detection shortened). Two topics of ``PARTITIONS`` partitions, replication factor 3,
min.insync.replicas 2: a source and a sink. The clients are librdkafka's (confluent-kafka):

* a transactional producer that writes ``RECORDS`` records to every source partition per
  transaction and commits, or aborts one transaction in ``ABORT_EVERY``; each transaction is
  recorded with how it ended as the producer saw it (committed, aborted, unknown). An
  abortable error aborts; a fatal one, or an end it could not learn, replaces the producer
  with a new incarnation of the same transactional id (which fences the old one and ends its
  transaction), as an application does;
* a worker that reads the source at read_committed in a consumer group and writes a copy of
  each record to the same sink partition, its consumed offsets committed in the same
  transaction (``send_offsets_to_transaction``); after an abort or an unknown end it rewinds to
  the group's committed offsets, as confluent-kafka's exactly-once example does.

The schedule (``schedule.generate`` with ``aims=(LEADER, COORDINATOR)``) aims a third of its
faults at partition 0's leader or at a transaction coordinator (of the producer's or the
worker's transactional id, in turn), found with FindCoordinator when the step runs. Transactions
end every few tens of milliseconds, so each pause, kill or one-way cut of a coordinator lands
between AddPartitionsToTxn and EndTxn, or between PREPARE and the markers, of some transaction.

Then everything heals; the producer stops, the worker is given ``CATCH_UP_S`` to copy every
committed record, and both topics are read back at read_committed from their start. A
partition whose last stable offset stays below its high watermark for ``TXN_TIMEOUT_MS`` plus
``SETTLE_S`` after that is a transaction nobody ended (``hung``).
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brokers.core.errors import UnstableOffsetCommit, UserError
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from brokers.core.protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
)
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec
from harness.nemesis import txn_checker
from harness.nemesis.run import (
    BROKERS,
    OPTIONS,
    RECOVERY_S,
    Nemesis,
    drive,
    group_offsets,
    in_sync,
    partitions_of,
    wait_for,
)
from harness.nemesis.schedule import COORDINATOR, LEADER, Step, generate
from harness.nemesis.txn_checker import COPY_PREFIX, Txn, TxnHistory

PARTITIONS = 3
RECORDS = 2  # per partition per transaction
ABORT_EVERY = 4  # every fourth transaction is aborted on purpose
# Short, so a transaction nobody ends is aborted by its coordinator within the run; the
# producer's message timeout cannot exceed it (librdkafka's rule).
TXN_TIMEOUT_MS = 10_000
END_S = 30.0  # how long one commit or abort is retried before its end counts as unknown
CATCH_UP_S = 90.0  # after the producer stopped: the worker has copied everything by then
STALL_S = 60.0  # a worker in one transaction this long is stuck in librdkafka: replaced
SETTLE_S = 60.0  # beyond the transaction timeout: every last stable offset at its end by then
_CLIENT = {"log_level": 2, "socket.timeout.ms": 10_000, "retry.backoff.ms": 20}


@dataclass
class TxnOutcome:
    arch: str
    seed: int
    schedule: list[str]
    committed: int  # transactions whose commit the producer saw acknowledged
    aborted: int
    unknown: int
    copied: int  # source records the worker's acknowledged transactions copied
    recovered: bool
    found: dict[str, list[str]]
    seconds: float

    def counts(self) -> dict[str, int]:
        return {k: len(self.found[k]) for k in txn_checker.KINDS}

    def failed(self) -> bool:
        """A violation of what the architecture claims (``txn_checker.claims``)."""
        return any(self.found[k] for k in txn_checker.claims(self.arch))

    def as_json(self) -> dict[str, Any]:
        return {"arch": self.arch, "seed": self.seed, "workload": "transactions",
                "schedule": self.schedule, "committed": self.committed,
                "aborted": self.aborted, "unknown": self.unknown, "copied": self.copied,
                "recovered": self.recovered, "violations": self.counts(),
                "claimed": list(txn_checker.claims(self.arch)),
                "examples": {k: v[:5] for k, v in self.found.items() if v},
                "seconds": round(self.seconds, 1)}


class _Clients:
    """The transactional producer and the copying worker, each in its own thread."""

    def __init__(self, cluster: ProcessCluster, source: str, sink: str,
                 history: TxnHistory) -> None:
        import confluent_kafka as ck

        self.ck = ck
        self.cluster = cluster
        self.source, self.sink = source, sink
        self.h = history
        self.producer_tid = f"tp-{source}"
        self.worker_tid = f"ctp-{source}"
        self.group = f"ctp-{source}"
        self.lock = threading.Lock()
        self.stop_producing = threading.Event()
        self.stop_copying = threading.Event()
        self.threads = [threading.Thread(target=self._produce, name="txn-producer", daemon=True),
                        threading.Thread(target=self._copy, args=(0,), name="txn-worker-0",
                                         daemon=True),
                        threading.Thread(target=self._watch, name="txn-watchdog", daemon=True)]
        self.errors: list[str] = []  # the clients' errors, for the log
        self.worker_at = "starting"  # what the worker was doing last (for the log)
        self.worker_since = time.monotonic()  # when it began doing that
        self.worker = 0  # the current worker's generation; older ones stop at their next step
        self.replaced: list[str] = []  # why each worker was replaced (for the log)
        self.maybe_copied: set[str] = set()  # in copies whose end is unknown
        self.idle_since: float | None = None  # since the worker's polls have come back empty

    def _err(self, what: str) -> None:
        self.errors.append(f"{threading.current_thread().name}: {what}")

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def _at(self, what: str) -> None:
        self.worker_at, self.worker_since = what, time.monotonic()

    def _watch(self) -> None:
        """librdkafka's transactional calls can block past their timeouts (its issues #3779,
        #4420): a worker stuck in one for ``STALL_S`` is replaced by a new generation, a new
        incarnation of the same transactional id (which fences the stuck one) and a new group
        member (the stuck one leaves at its max.poll.interval.ms), as an application's
        supervisor would restart it."""
        while not self.stop_copying.wait(5.0):
            stuck = time.monotonic() - self.worker_since
            if self.worker_at == "in a transaction" and stuck > STALL_S:
                self.replaced.append(f"worker {self.worker} stuck {stuck:.0f} s at "
                                     f"{self.worker_stack()}")
                self.worker += 1
                self._at("starting")
                t = threading.Thread(target=self._copy, args=(self.worker,), daemon=True,
                                     name=f"txn-worker-{self.worker}")
                self.threads.append(t)
                t.start()

    def finish(self) -> None:
        self.stop_producing.set()
        self.stop_copying.set()
        for t in self.threads[:3]:
            t.join(END_S * 3)
        for t in self.threads[3:]:
            t.join(5.0)  # a replaced worker may still be stuck in librdkafka: left behind

    def worker_stack(self) -> str:
        """Where the current worker's thread is now (the call it waits in, when it stalls)."""
        current = [t for t in self.threads if t.name == f"txn-worker-{self.worker}"]
        frame = sys._current_frames().get(current[0].ident or -1) if current else None
        if frame is None:
            return "not running"
        return " <- ".join(f"{f.name}:{f.lineno} {f.line}" for f in
                           reversed(traceback.extract_stack(frame)[-4:]))

    def caught_up(self) -> bool:
        """Every committed record copied, or in a copy whose end the worker never learned, and
        the worker has found nothing more to copy for 3 s (after an unknown end it rewinds to
        the group's offsets and copies again what that transaction did not commit)."""
        idle = self.idle_since
        if idle is None or time.monotonic() - idle < 3.0:
            return False
        with self.lock:
            return all(v in self.h.copied or v in self.maybe_copied for t in self.h.txns
                       if t.outcome == "committed" for vs in t.records.values() for v in vs)

    def tally(self) -> dict[str, int]:
        with self.lock:
            out = dict.fromkeys(txn_checker.OUTCOMES, 0)
            for t in self.h.txns:
                out[t.outcome] += 1
            return out

    # --- the transactional calls --------------------------------------------------------
    def _producer(self, tid: str, stop: threading.Event) -> Any:
        """A new incarnation of ``tid``, its InitProducerId done (retried while the cluster
        cannot answer); None when ``stop`` is set first."""
        ck = self.ck
        while not stop.is_set():
            producer = ck.Producer({
                "bootstrap.servers": self.cluster.bootstrap, "transactional.id": tid,
                "transaction.timeout.ms": TXN_TIMEOUT_MS, "message.timeout.ms": TXN_TIMEOUT_MS,
                "linger.ms": 5, **_CLIENT})
            try:
                producer.init_transactions(END_S)
                return producer
            except ck.KafkaException as exc:
                self._err(f"{tid}: init_transactions: {exc.args[0]}")
                stop.wait(0.5)
        return None

    def _end(self, producer: Any, commit: bool) -> str:
        """Commit (or abort) the open transaction as librdkafka asks an application to: call
        again on a retriable error, abort on an abortable one. The outcome as known: committed,
        aborted, or unknown (a fatal error, or no answer within ``END_S``)."""
        ck = self.ck
        deadline = time.monotonic() + END_S
        # Once a commit was asked again, its EndTxn may have been stored already: an abort
        # after that proves nothing about how the transaction ended.
        in_doubt = False
        while time.monotonic() < deadline:
            try:
                if commit:
                    producer.commit_transaction(10)
                    return "committed"
                producer.abort_transaction(10)
                return "unknown" if in_doubt else "aborted"
            except ck.KafkaException as exc:
                err = exc.args[0]
                if err.fatal():
                    self._err(f"end: {err}")
                    return "unknown"
                if err.txn_requires_abort():
                    self._err(f"end, aborting: {err}")
                    commit = False  # the commit failed: abort
                    continue
                self._err(f"end, asking again: {err}")
                in_doubt = in_doubt or commit
                time.sleep(0.2)  # retriable, or a coordinator moving: ask again
        return "unknown"

    # --- threads ---------------------------------------------------------------------------
    def _produce(self) -> None:
        ck = self.ck
        producer = self._producer(self.producer_tid, self.stop_producing)
        for n in itertools.count(1):
            if producer is None or self.stop_producing.is_set():
                break
            t = Txn(f"t{n}", {p: [f"t{n}-p{p}-{i}" for i in range(RECORDS)]
                              for p in range(PARTITIONS)})
            with self.lock:
                self.h.txns.append(t)
            try:
                producer.begin_transaction()
                for p, values in t.records.items():
                    for v in values:
                        producer.produce(self.source, v.encode(), partition=p)
                outcome = self._end(producer, n % ABORT_EVERY != 0)
            except (ck.KafkaException, BufferError) as exc:
                self._err(f"t{n}: {exc}")
                outcome = self._end(producer, False)
            with self.lock:
                t.outcome = outcome
            if outcome == "unknown":
                # A new incarnation fences this one and ends its transaction either way.
                producer = self._producer(self.producer_tid, self.stop_producing)

    def _consumer(self) -> Any:
        return self.ck.Consumer({
            "bootstrap.servers": self.cluster.bootstrap, "group.id": self.group,
            "isolation.level": "read_committed", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": 10_000,
            # A stuck worker's member leaves the group soon (the watchdog replaces it).
            "max.poll.interval.ms": 20_000,
            "heartbeat.interval.ms": 1000, **_CLIENT})

    def _rewind(self, consumer: Any) -> bool:
        """Back to the group's committed offsets (the start where none): what the last
        committed transaction consumed. False when they could not be read."""
        ck = self.ck
        deadline = time.monotonic() + END_S
        while time.monotonic() < deadline and not self.stop_copying.is_set():
            try:
                committed = consumer.committed(consumer.assignment(), 10)
                if any(tp.error is not None for tp in committed):
                    raise ck.KafkaException(next(tp.error for tp in committed if tp.error))
                for tp in committed:
                    # No committed offset (-1001): the start, as auto.offset.reset says.
                    consumer.seek(ck.TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))
            except ck.KafkaException as exc:
                self._err(f"rewind: {exc}")
                time.sleep(0.5)
                continue
            return True
        return False

    def _copy(self, generation: int) -> None:
        consumer = self._consumer()
        self._at("init_transactions")
        producer = self._producer(self.worker_tid, self.stop_copying)
        consumer.subscribe([self.source])
        try:
            while (producer is not None and not self.stop_copying.is_set()
                   and generation == self.worker):
                try:
                    producer, consumer = self._copy_once(producer, consumer)
                except Exception as exc:  # the worker goes on, as an application would
                    # An error outside a transaction's calls (a seek during a rebalance, say):
                    # a new member, which starts from the group's committed offsets.
                    self._err(f"worker: {exc!r}")
                    with contextlib.suppress(Exception):
                        consumer.close()
                    consumer = self._consumer()
                    consumer.subscribe([self.source])
        finally:
            with contextlib.suppress(Exception):
                consumer.close()

    def _copy_once(self, producer: Any, consumer: Any) -> tuple[Any, Any]:
        """One poll, and its transaction when it got records; the producer and consumer to
        go on with."""
        ck = self.ck
        self._at(f"consuming (assigned {len(consumer.assignment())})")
        batch = [m for m in consumer.consume(100, 0.5) if m.error() is None]
        if not batch:
            if self.idle_since is None:
                self.idle_since = time.monotonic()
            return producer, consumer
        self.idle_since = None
        self._at("in a transaction")
        values = [m.value().decode() for m in batch]
        # The offsets this batch consumed, from the batch itself: the consumer's position can
        # be another one's after a rebalance.
        ends: dict[int, int] = {}
        for m in batch:
            ends[m.partition()] = max(ends.get(m.partition(), 0), m.offset() + 1)
        try:
            producer.begin_transaction()
            for m, v in zip(batch, values, strict=True):
                producer.produce(self.sink, (COPY_PREFIX + v).encode(), partition=m.partition())
            producer.send_offsets_to_transaction(
                [ck.TopicPartition(self.source, p, o) for p, o in sorted(ends.items())],
                consumer.consumer_group_metadata(), 10)
            outcome = self._end(producer, True)
        except (ck.KafkaException, BufferError) as exc:
            self._err(f"copy: {exc}")
            outcome = self._end(producer, False)
        if outcome == "committed":
            with self.lock:
                self.h.copied.update(values)
            return producer, consumer
        if outcome == "unknown":
            with self.lock:
                self.maybe_copied.update(values)
            self._at("init_transactions")
            producer = self._producer(self.worker_tid, self.stop_copying)
        self._at("rewinding")
        if not self._rewind(consumer):
            # The group's offsets unreadable: a new member starts from them.
            with contextlib.suppress(Exception):
                consumer.close()
            consumer = self._consumer()
            consumer.subscribe([self.source])
        return producer, consumer

    # --- for the nemesis ---------------------------------------------------------------------
    def coordinators(self) -> Callable[[], int | None]:
        """Finds the transaction coordinator of the producer's and the worker's id in turn."""
        turn = itertools.cycle([self.producer_tid, self.worker_tid])

        def find() -> int | None:
            return coordinator_of(self.cluster, next(turn))
        return find


def coordinator_of(cluster: ProcessCluster, tid: str) -> int | None:
    """The broker FindCoordinator (key type transaction) names for ``tid``, as the first
    running broker that answers says; None when none does."""
    for b in cluster.brokers:
        if b.state != "running":
            continue
        try:
            with KafkaProbe(b.host, b.port, timeout_s=1.0) as probe:
                found = probe.request(ApiKey.FIND_COORDINATOR, 2,
                                      FindCoordinatorRequest(key=tid, key_type=1))
        except (OSError, ConnectionError, ValueError):
            continue
        if isinstance(found, FindCoordinatorResponse) and found.error_code == 0 and (
                found.node_id >= 0):
            return int(found.node_id)
    return None


def _ends(cluster: ProcessCluster, topic: str) -> dict[int, tuple[int, int]] | None:
    """Per partition: (last stable offset, high watermark) as its leader answers; None when
    some partition has no leader that answers."""
    leaders: dict[int, int] = {}
    for b in cluster.brokers:
        for x in partitions_of(b, topic, 2.0) or ():
            if x.leader_id >= 0:
                leaders.setdefault(x.partition_index, x.leader_id)
    if len(leaders) < PARTITIONS:
        return None
    out: dict[int, tuple[int, int]] = {}
    for p, leader in leaders.items():
        b = cluster.broker(leader)
        got = []
        try:
            for isolation in (1, 0):
                with KafkaProbe(b.host, b.port, timeout_s=2.0) as probe:
                    res = probe.request(ApiKey.LIST_OFFSETS, 5, ListOffsetsRequest(
                        replica_id=-1, isolation_level=isolation, topics=[ListOffsetsTopic(
                            name=topic, partitions=[ListOffsetsPartition(
                                partition_index=p, timestamp=-1)])]))
                assert isinstance(res, ListOffsetsResponse)
                part = res.topics[0].partitions[0]
                if part.error_code:
                    return None
                got.append(part.offset)
        except (OSError, ConnectionError, ValueError):
            return None
        out[p] = (got[0], got[1])
    return out


def _settled(cluster: ProcessCluster, topics: list[str], timeout_s: float) -> list[str]:
    """Waits until every partition's last stable offset is its high watermark; the partitions
    where it is not by ``timeout_s`` ("<topic> p<n>: stable <lso>, end <hw>")."""
    deadline = time.monotonic() + timeout_s
    while True:
        ends = {t: _ends(cluster, t) for t in topics}
        open_ = [f"{t} p{p}: stable {lso}, end {hw}" for t, e in ends.items()
                 for p, (lso, hw) in sorted((e or {}).items()) if lso < hw]
        if not open_ and all(e is not None for e in ends.values()):
            return []
        if time.monotonic() > deadline:
            # A topic whose leaders did not answer is a recovery failure, not a hung
            # transaction: the read-back that follows says so.
            return open_
        time.sleep(1.0)


def _pending_offsets(cluster: ProcessCluster, group: str, topic: str,
                     timeout_s: float) -> list[str]:
    """Waits until the group's coordinator answers every partition of ``topic`` without
    UNSTABLE_OFFSET_COMMIT when asked for stable offsets (OffsetFetch v7, require_stable);
    the partitions still pending by ``timeout_s`` ("<group> p<n>: ...")."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            answered = group_offsets(cluster, group, topic, require_stable=True)
        except (OSError, ConnectionError, ValueError):
            answered = None
        if answered is None:
            pending = ["no coordinator answered"]
        else:
            node, got = answered
            pending = [f"{group} p{x.partition_index}: offset pending in a transaction "
                       f"(coordinator {node})" for t in got.topics
                       for x in t.partitions if x.error_code == UnstableOffsetCommit.code]
            if got.error_code == UnstableOffsetCommit.code:
                pending.append(f"{group}: offsets pending in a transaction")
        if not pending or time.monotonic() > deadline:
            return pending
        time.sleep(1.0)


def _read_committed(ck: Any, bootstrap: str, topic: str,
                    ends: dict[int, int]) -> dict[int, list[tuple[int, str]]]:
    """``topic`` at read_committed from its start, with a fresh consumer, until its position
    in every partition reaches ``ends`` (control batches included) or it reads nothing for
    5 s past the last record below them."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"readback-{topic}",
                            "isolation.level": "read_committed", "enable.auto.commit": False,
                            "auto.offset.reset": "earliest", "log_level": 2})
    got: dict[int, list[tuple[int, str]]] = {p: [] for p in range(PARTITIONS)}
    try:
        consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 120
        idle_since: float | None = None  # since every partition is fetching and none read
        while time.monotonic() < deadline:
            msgs = [m for m in consumer.consume(1000, 0.5) if m.error() is None]
            for m in msgs:
                got[m.partition()].append((m.offset(), m.value().decode()))
            at = {tp.partition: tp.offset for tp in consumer.position(
                [ck.TopicPartition(topic, p) for p in range(PARTITIONS)])}
            if all(at.get(p, -1) >= ends[p] for p in range(PARTITIONS)):
                break
            # A partition's position stays below its end when its tail is markers or aborted
            # records: done once every partition has been fetched from (a record read, or
            # its end is 0) and nothing came for 10 s.
            fetching = all(got[p] or ends[p] == 0 for p in range(PARTITIONS))
            if msgs or not fetching:
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > 10.0:
                break
        else:
            raise UserError(f"reading {topic} back at read_committed took over 120 s")
        return got
    finally:
        consumer.close()


def run(arch: str, seed: int, duration_s: float, workdir: Path,
        log: Any = print, steps: list[Step] | None = None) -> TxnOutcome:
    """One seed of the transactions workload against one architecture (or the given
    ``steps``); ``log`` gets a line per step."""
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic

    if steps is None:
        steps = generate(seed, BROKERS, duration_s, aims=(LEADER, COORDINATOR))
    started = time.monotonic()
    spec = ClusterSpec(arch, brokers=BROKERS, data_dir=workdir, network="netns",
                       options={k: v for k, v in OPTIONS.items() if k == arch})
    history = TxnHistory()
    with ProcessCluster(spec) as cluster:
        tag = uuid.uuid4().hex[:8]
        source, sink = f"txn-in-{tag}", f"txn-out-{tag}"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2})
        made = admin.create_topics([NewTopic(t, num_partitions=PARTITIONS, replication_factor=3,
                                             config={"min.insync.replicas": "2"})
                                    for t in (source, sink)], request_timeout=30)
        for f in made.values():
            f.result(30)
        both = lambda: in_sync(cluster, source) and in_sync(cluster, sink)  # noqa: E731
        if not wait_for(both, 60):
            raise UserError(f"{arch}: {source}/{sink} never had leaders and full ISRs")
        clients = _Clients(cluster, source, sink, history)
        clients.start()
        t0 = time.monotonic()
        nemesis = Nemesis(cluster, source, coordinator=clients.coordinators())
        say = lambda line: log(f"  {arch} seed {seed}: {line}")  # noqa: E731
        try:
            applied = drive(nemesis, steps, t0, say)
            recovered = wait_for(both, RECOVERY_S)
            clients.stop_producing.set()
            clients.threads[0].join(END_S * 3)
            caught_up = wait_for(clients.caught_up, CATCH_UP_S)
            for why in clients.replaced:
                say(f"replaced: {why}")
            if not caught_up:
                say(f"the worker's stack: {clients.worker_stack()}")
            say(f"{'in sync' if recovered else 'NOT in sync'}; the worker "
                f"{'caught up' if caught_up else 'lags, ' + clients.worker_at + ','} after "
                f"{time.monotonic() - t0:.1f} s; "
                f"{clients.tally()}, {len(history.copied)} records copied")
        finally:
            clients.finish()
        history.hung = _settled(cluster, [source, sink], TXN_TIMEOUT_MS / 1000 + SETTLE_S)
        history.offsets_pending = _pending_offsets(cluster, clients.group, source, 15.0)
        for topic, into in ((source, history.source), (sink, history.sink)):
            ends = _ends(cluster, topic)
            if ends is None:
                raise UserError(f"{arch}: {topic} has no leader after the run")
            into.update(_read_committed(ck, cluster.bootstrap, topic,
                                        {p: hw for p, (_, hw) in ends.items()}))
    if clients.errors:
        # Each kind once (a paused coordinator repeats the same error many times).
        kinds = list(dict.fromkeys(e[:160] for e in clients.errors))
        say(f"{len(clients.errors)} client errors, {len(kinds)} kinds: {'; '.join(kinds[:6])}"
            f"{' ...' if len(kinds) > 6 else ''}")
    found = txn_checker.check(history)
    tally = clients.tally()
    return TxnOutcome(arch, seed, applied, tally["committed"], tally["aborted"],
                      tally["unknown"], len(history.copied), recovered, found,
                      time.monotonic() - started)
