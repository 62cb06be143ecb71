"""One transactions session's clients: confluent-kafka (librdkafka) used as an application
uses it, in worker threads (its calls block).

Transactions are a client protocol as much as a broker one (InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn, the retries on CONCURRENT_TRANSACTIONS between two
transactions), so the sessions use the reference client rather than the measuring load client,
which speaks none of it. What a session does, by shape (schema.SHAPES):

* produce: a producer writes ``records`` values in units of ``batches_per_unit`` batches of
  ``batch`` records, batch after batch round-robin over the partitions. A unit is a
  transaction (begin, the batches, ``commit_transaction``) or, without transactions, the same
  batches from an idempotent producer ended by ``flush``.
* ctp (consume-transform-produce): an input topic is filled first (not timed); a
  ``read_committed`` consumer of it and a producer copy it to the output, ``batch`` records
  read and written at a time, each record to the partition it came from. A unit is a
  transaction whose offsets go with it (``send_offsets_to_transaction``) or, without
  transactions, the same batches from an idempotent producer, the consumer's offsets committed
  (synchronously) after every batch and the producer flushed at the unit's end. An abortable
  transaction error aborts and rewinds the consumer to its committed offsets, as an exactly-once
  application does (counted: ``aborts``).

In both, a second ``read_committed`` consumer reads the output from its start while the session
runs, and checks each record was read exactly once (the value carries its index). The timed
part is from the first record written (produce) or read (ctp) until the last unit ended; the
harness reads the coordination counters just before it and once everything is readable, so
the markers of the last transaction are counted.
"""

from __future__ import annotations

import math
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka as ck

# A record's value: its index (8 bytes, big-endian), then zeros up to the record size.
INDEX = struct.Struct(">Q")
# Longest a single blocking client call (a commit, a flush, a fill) may take before the
# session is given up: far above any commit here, below the sessions' own safety net.
CALL_TIMEOUT_S = 30.0
# Once the last unit ended, how long the output may take to become readable in full (the last
# transaction's markers): beyond it the session counts what was never read as missing.
DRAIN_S = 60.0
# How long each consumer poll waits at most; the loops check their deadlines in between.
POLL_S = 0.2
# commit_transaction answered with a retriable error is called again, this many times at most.
COMMIT_ATTEMPTS = 10


class SessionFailed(RuntimeError):
    """A session could not do what it was asked (a client error that is not retriable, a
    delivery failure, a deadline): one line for the run's error report."""


@dataclass(frozen=True)
class ClientConfig:
    # The cluster's bootstrap servers (host:port,...).
    bootstrap: str
    # The topic the records are written to, and read back from.
    output: str
    # ctp: the input topic, filled before the timed part; None: the producer writes its own
    # records (produce).
    source: str | None
    # The copier's consumer group (ctp: its committed offsets).
    group: str
    # The producer's transactional.id; None: without transactions (an idempotent producer).
    transactional_id: str | None
    # Partitions of every topic of the session.
    partitions: int
    # Bytes per record value (at least INDEX.size).
    msg_size: int
    # Records per batch: what the producer puts in one batch, the copier reads at a time.
    batch: int
    # Batches per unit: a transaction, or what the idempotent producer sends between flushes.
    batches_per_unit: int
    # Records the session moves, a whole number of units.
    records: int
    # The producers' linger.ms and retry.backoff.ms (schema.TransactionsPlan says why).
    linger_ms: int
    retry_backoff_ms: int
    # The consumers' fetch.wait.max.ms (the workload's fetch_max_wait_ms).
    fetch_max_wait_ms: int
    # The transactional producer's transaction.timeout.ms.
    transaction_timeout_ms: int
    # time.monotonic() by which the whole session (filling, copying, reading back) is done.
    deadline: float

    @property
    def unit_records(self) -> int:
        return self.batch * self.batches_per_unit

    @property
    def units(self) -> int:
        return self.records // self.unit_records


@dataclass
class Outcome:
    # Records produced (ctp: copied) in units that ended: committed, or flushed without
    # transactions.
    records: int = 0
    # Seconds from the first record written (ctp: read) to the end of the last unit.
    wall_s: float = 0.0
    # Units ended; transactions committed (0 without transactions).
    units: int = 0
    transactions: int = 0
    # ctp: transactions aborted and redone after an abortable error.
    aborts: int = 0
    # ctp: offset commits sent (send_offsets_to_transaction, or the consumer's commit).
    offset_commits: int = 0
    # Each unit's end: commit_transaction's wall time, or flush's without transactions (s).
    unit_end_s: list[float] = field(default_factory=list)
    # The output's reader: distinct records read, seconds from the timed part's start until it
    # had them all (None: it never did), records read again, records never read.
    read: int = 0
    read_s: float | None = None
    duplicates: int = 0
    missing: int = 0

    @property
    def exactly_once(self) -> bool:
        return self.duplicates == 0 and self.missing == 0


def value(index: int, msg_size: int) -> bytes:
    return INDEX.pack(index) + bytes(msg_size - INDEX.size)


def index_of(data: bytes | None) -> int | None:
    """The index a value carries; None for a value of no session's."""
    if data is None or len(data) < INDEX.size:
        return None
    found: int = INDEX.unpack_from(data)[0]
    return found


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in (0, 1]) of ``values``; None without any."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _remaining(deadline: float, what: str) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise SessionFailed(f"{what}: not done within the session's timeout_s")
    return left


def _call_timeout(deadline: float, what: str) -> float:
    return min(CALL_TIMEOUT_S, _remaining(deadline, what))


class Reader:
    """A read_committed consumer of the output from offset 0 on every partition, polling in a
    thread of its own: counts every record by the index its value carries."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.seen = bytearray(config.records)
        self.read = 0
        self.duplicates = 0
        # Records of no index of the session's: the producer's warm-up records.
        self.foreign = 0
        # perf_counter() when the last missing record arrived.
        self.done_at: float | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._all = threading.Event()
        self._consumer = ck.Consumer({
            "bootstrap.servers": config.bootstrap, "group.id": f"{config.output}-reader",
            "isolation.level": "read_committed", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": config.fetch_max_wait_ms})
        # Explicit offsets: no committed-offset lookup, so reading costs no coordination.
        self._consumer.assign([ck.TopicPartition(config.output, p, 0)
                               for p in range(config.partitions)])
        self._thread = threading.Thread(target=self._run, name="txn-reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                for m in self._consumer.consume(1000, POLL_S):
                    if m.error() is not None:
                        continue  # informational (librdkafka reports transient ones here)
                    i = index_of(m.value())
                    if i is None or i >= self.config.records:
                        self.foreign += 1
                        continue
                    if self.seen[i]:
                        self.duplicates += 1
                    else:
                        self.seen[i] = 1
                        self.read += 1
                if self.read >= self.config.records and self.done_at is None:
                    self.done_at = time.perf_counter()
                    self._all.set()
        except BaseException as exc:  # reported by the session, not lost in a thread
            self.error = exc
            self._all.set()

    def wait_all(self, timeout_s: float) -> None:
        self._all.wait(max(0.0, timeout_s))

    def wait_foreign(self, n: int, deadline: float) -> None:
        """Until ``n`` records of no index have been read (a probe with a deadline)."""
        while self.foreign < n and self.error is None:
            _remaining(deadline, "reading the warm-up records")
            time.sleep(0.005)  # polling interval of the probe, not a wait for an effect
        if self.error is not None:
            raise SessionFailed(f"reading the output: {self.error}")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(CALL_TIMEOUT_S)
        if not self._thread.is_alive():
            self._consumer.close()


class TxnSession:
    """prepare (not timed), run (timed), drain (until the output is readable), close; each
    blocking, called from a worker thread. ``stop`` makes every loop give up (Ctrl-C)."""

    def __init__(self, config: ClientConfig) -> None:
        if config.records % config.unit_records:
            raise ValueError("records must be a whole number of units")
        self.config = config
        self.stop = threading.Event()
        self.outcome = Outcome()
        self._t0: float | None = None
        self._producer: ck.Producer | None = None
        self._copier: ck.Consumer | None = None
        self._reader: Reader | None = None
        # Delivery failures the producer reported (delivery.report.only.error).
        self._failed: list[str] = []
        # Held while a part runs: close() must not pull the clients from under it (an
        # interrupted run closes the session while its worker thread is still in a call).
        self._busy = threading.Lock()

    # --- the parts ---------------------------------------------------------------------------

    def _on_delivery(self, err: ck.KafkaError | None, msg: ck.Message) -> None:
        if err is not None:
            self._failed.append(str(err))

    def _new_producer(self, transactional_id: str | None) -> ck.Producer:
        c = self.config
        conf: dict[str, Any] = {
            "bootstrap.servers": c.bootstrap, "enable.idempotence": True,
            "linger.ms": c.linger_ms, "retry.backoff.ms": c.retry_backoff_ms,
            "batch.num.messages": c.batch,
            # A unit's records wait in the producer until its end: room for two.
            "queue.buffering.max.messages": max(100_000, 2 * c.unit_records),
            "delivery.report.only.error": True, "on_delivery": self._on_delivery}
        if transactional_id is not None:
            conf |= {"transactional.id": transactional_id,
                     "transaction.timeout.ms": c.transaction_timeout_ms}
        return ck.Producer(conf)

    def _produce(self, producer: ck.Producer, partition: int, data: bytes) -> None:
        while True:
            try:
                producer.produce(self.config.output, data, partition=partition)
                return
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(POLL_S)
                self._check("producing")

    def _check(self, what: str) -> None:
        if self.stop.is_set():
            raise SessionFailed(f"{what}: stopped")
        _remaining(self.config.deadline, what)
        if self._failed:
            raise SessionFailed(f"{what}: {len(self._failed)} records not delivered "
                                f"({self._failed[0]})")

    def _flush(self, producer: ck.Producer, what: str) -> None:
        left = producer.flush(_call_timeout(self.config.deadline, what))
        if left:
            raise SessionFailed(f"{what}: {left} records still unacknowledged after "
                                f"{CALL_TIMEOUT_S:g} s")
        self._check(what)

    def _fill(self) -> None:
        """ctp: the input, batch after batch round-robin over the partitions (not timed)."""
        c = self.config
        assert c.source is not None
        filler = self._new_producer(None)
        try:
            for b in range(c.records // c.batch):
                for i in range(b * c.batch, (b + 1) * c.batch):
                    while True:
                        try:
                            filler.produce(c.source, value(i, c.msg_size),
                                           partition=b % c.partitions)
                            break
                        except BufferError:
                            filler.poll(POLL_S)
                            self._check("filling the input")
            self._flush(filler, "filling the input")
        finally:
            filler.close()

    def prepare(self) -> None:
        with self._busy:
            self._prepare()

    def run(self) -> Outcome:
        """The timed part; returns once the last unit ended."""
        with self._busy:
            return self._run()

    def drain(self) -> Outcome:
        """Wait until the reader has read every record (or DRAIN_S passed), and say what it
        found."""
        with self._busy:
            return self._drain()

    def close(self) -> None:
        """Stop every loop and close the clients, once the part in progress (if any) gave
        up; clients still in a call after CALL_TIMEOUT_S are left to the process's exit."""
        self.stop.set()
        if not self._busy.acquire(timeout=CALL_TIMEOUT_S + 1):
            return
        try:
            if self._reader is not None:
                self._reader.close()
            if self._copier is not None:
                self._copier.close()
            if self._producer is not None:
                # Nothing is left to deliver (every unit ended, or the session failed):
                # closing does not wait for it.
                self._producer.purge()
                self._producer.close()
        finally:
            self._busy.release()

    def _prepare(self) -> None:
        """Everything before the timed part: the input filled (ctp), the producer ready (its
        transactional id initialised), the copier assigned, the reader polling."""
        c = self.config
        if c.source is not None:
            self._fill()
        self._producer = self._new_producer(c.transactional_id)
        if c.transactional_id is not None:
            self._producer.init_transactions(_call_timeout(c.deadline, "init_transactions"))
        if c.source is not None:
            self._copier = ck.Consumer({
                "bootstrap.servers": c.bootstrap, "group.id": c.group,
                "isolation.level": "read_committed", "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "fetch.wait.max.ms": c.fetch_max_wait_ms})
            # The input is fresh: from offset 0, with no committed-offset lookup to time.
            self._copier.assign([ck.TopicPartition(c.source, p, 0)
                                 for p in range(c.partitions)])
        self._reader = Reader(c)
        self._warm(self._producer, c.transactional_id is not None)
        self._reader.wait_foreign(c.partitions, c.deadline)

    def _warm(self, producer: ck.Producer, transactional: bool) -> None:
        """One record to every partition of the output, in a transaction or flushed, before
        the timed part: the producer's id, its connections and its transaction's first
        AddPartitionsToTxn are then behind it on either side of the comparison. The records'
        indices are past the session's, so the reader does not count them."""
        c = self.config
        if transactional:
            producer.begin_transaction()
        for p in range(c.partitions):
            self._produce(producer, p, value(c.records + p, c.msg_size))
        if transactional:
            _commit(producer, c.deadline)
        else:
            self._flush(producer, "warming the producer up")

    def _run(self) -> Outcome:
        assert self._producer is not None
        self._t0 = time.perf_counter()
        if self.config.source is None:
            self._run_produce(self._producer)
        else:
            assert self._copier is not None
            self._run_copy(self._producer, self._copier)
        self.outcome.wall_s = time.perf_counter() - self._t0
        return self.outcome

    def _drain(self) -> Outcome:
        assert self._reader is not None and self._t0 is not None
        reader = self._reader
        reader.wait_all(min(DRAIN_S, self.config.deadline - time.monotonic()))
        if reader.error is not None:
            raise SessionFailed(f"reading the output: {reader.error}")
        o = self.outcome
        o.read, o.duplicates = reader.read, reader.duplicates
        o.missing = self.config.records - reader.read
        o.read_s = None if reader.done_at is None else reader.done_at - self._t0
        return o

    # --- the timed loops ---------------------------------------------------------------------

    def _end_unit(self, producer: ck.Producer, transactional: bool) -> None:
        t = time.perf_counter()
        if transactional:
            _commit(producer, self.config.deadline)
        else:
            self._flush(producer, "flushing a unit")
        self.outcome.unit_end_s.append(time.perf_counter() - t)
        self._check("ending a unit")

    def _run_produce(self, producer: ck.Producer) -> None:
        c, o = self.config, self.outcome
        transactional = c.transactional_id is not None
        batch_no = 0
        for _ in range(c.units):
            if transactional:
                producer.begin_transaction()
            for _ in range(c.batches_per_unit):
                partition = batch_no % c.partitions
                first = batch_no * c.batch
                for i in range(first, first + c.batch):
                    self._produce(producer, partition, value(i, c.msg_size))
                producer.poll(0)
                batch_no += 1
            self._check("producing")
            self._end_unit(producer, transactional)
            o.units += 1
            o.transactions += int(transactional)
            o.records += c.unit_records

    def _take(self, copier: ck.Consumer, n: int) -> list[ck.Message]:
        """The next ``n`` records of the input (fewer only at its end, which a whole number of
        units never reaches early)."""
        got: list[ck.Message] = []
        while len(got) < n:
            self._check("reading the input")
            for m in copier.consume(n - len(got), POLL_S):
                if m.error() is None:
                    got.append(m)
        return got

    def _run_copy(self, producer: ck.Producer, copier: ck.Consumer) -> None:
        c, o = self.config, self.outcome
        transactional = c.transactional_id is not None
        while o.records < c.records:
            if transactional:
                producer.begin_transaction()
            copied = 0
            for _ in range(c.batches_per_unit):
                batch = self._take(copier, c.batch)
                for m in batch:
                    self._produce(producer, m.partition() or 0, m.value() or b"")
                producer.poll(0)
                copied += len(batch)
                if not transactional:
                    # The usual at-least-once loop: the batch's offsets, once it is handed on.
                    refused = [tp for tp in copier.commit(offsets=_next_offsets(batch),
                                                          asynchronous=False)
                               if tp.error is not None]
                    if refused:
                        raise SessionFailed(f"committing offsets: {refused[0].error}")
                    o.offset_commits += 1
            if transactional:
                try:
                    producer.send_offsets_to_transaction(
                        _positions(copier), copier.consumer_group_metadata(),
                        _call_timeout(c.deadline, "send_offsets_to_transaction"))
                    o.offset_commits += 1
                    self._end_unit(producer, True)
                except ck.KafkaException as exc:
                    if not exc.args[0].txn_requires_abort():
                        raise
                    producer.abort_transaction(_call_timeout(c.deadline, "abort_transaction"))
                    _rewind(copier, c.deadline)
                    o.aborts += 1
                    continue
            else:
                self._end_unit(producer, False)
            o.units += 1
            o.transactions += int(transactional)
            o.records += copied


def _commit(producer: ck.Producer, deadline: float) -> None:
    for _ in range(COMMIT_ATTEMPTS):
        try:
            producer.commit_transaction(_call_timeout(deadline, "commit_transaction"))
            return
        except ck.KafkaException as exc:
            if not exc.args[0].retriable():
                raise
    raise SessionFailed(f"commit_transaction failed {COMMIT_ATTEMPTS} times with retriable "
                        "errors")


def _next_offsets(batch: list[ck.Message]) -> list[ck.TopicPartition]:
    """Per partition of ``batch``, the offset after its last record there."""
    last: dict[tuple[str, int], int] = {}
    for m in batch:
        key = (m.topic() or "", m.partition() or 0)
        last[key] = max(last.get(key, -1), m.offset() or 0)
    return [ck.TopicPartition(t, p, o + 1) for (t, p), o in last.items()]


def _positions(copier: ck.Consumer) -> list[ck.TopicPartition]:
    """The copier's positions where it has one (a partition it has read nothing of yet has
    none, and nothing to commit)."""
    return [tp for tp in copier.position(copier.assignment()) if tp.offset >= 0]


def _rewind(copier: ck.Consumer, deadline: float) -> None:
    """Back to the committed offsets (0 where none), after an aborted transaction."""
    committed = copier.committed(copier.assignment(), _call_timeout(deadline, "rewinding"))
    for tp in committed:
        copier.seek(ck.TopicPartition(tp.topic, tp.partition, max(tp.offset, 0)))
