"""The paper's cells driven by librdkafka (confluent-kafka), the client most Kafka users run.

`make perf-kafka` judges brokers, so its load should cost the client as little as possible: a
C client spends microseconds where the harness's own Python client spends tens, and a broker
difference hidden under client time is not measured. Both functions here are the paper's load in
librdkafka's terms:

* ``produce`` is the synchronous producer: one request in flight (``max.in.flight`` 1), a batch
  closed at ``batch`` records (``batch.num.messages``) or after ``linger.ms`` 5, acks from the
  leader (acks=1, as the paper and the harness's producer), no idempotence. The next request
  leaves when the previous one is answered, so records/s is request rate x batch.
* ``drain`` reads a partition from its start with the client's default fetch sizes, through
  kcat (librdkafka's own command-line consumer): confluent-kafka's Python binding costs about
  8 µs per message, so a Python consumer of small records measures itself (every broker drained
  at the same 123,000 records/s). Its rate is taken from the first records kcat printed to the
  last, so connection set-up and metadata, which have nothing to do with how fast a broker
  serves fetches, are left out on every side alike.

Each returns a ``Run``; a run that did not deliver every record says so (``complete`` False)
and is reported as a failure, never as a rate.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from dataclasses import dataclass

import confluent_kafka as ck

# librdkafka's command-line client (make setup installs it): the drain's consumer.
KCAT = "kcat"
# A drain or a flush that takes longer than this has failed (a broker stopped serving).
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Run:
    records: int
    wall_s: float
    complete: bool
    error: str = ""

    @property
    def rps(self) -> float:
        return self.records / self.wall_s if self.wall_s > 0 and self.complete else 0.0


def produce(bootstrap: str, topic: str, msg_size: int, batch: int, count: int) -> Run:
    errors: list[str] = []

    def delivered(err: ck.KafkaError | None, _msg: ck.Message) -> None:
        if err is not None:
            errors.append(str(err))

    producer = ck.Producer({
        "bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5,
        "batch.num.messages": batch, "max.in.flight.requests.per.connection": 1,
        "enable.idempotence": False, "queue.buffering.max.messages": max(count, 100_000),
    })
    value = b"x" * msg_size
    # Metadata and the connection first, so the clock starts at the first record on any side.
    producer.list_topics(topic, timeout=30)
    t0 = time.perf_counter()
    for _ in range(count):
        producer.produce(topic, value, partition=0, on_delivery=delivered)
        producer.poll(0)
    left = producer.flush(TIMEOUT_S)
    wall = time.perf_counter() - t0
    ok = left == 0 and not errors
    return Run(count - left - len(errors), wall, ok, "; ".join(errors[:3]) or
               (f"{left} records undelivered" if left else ""))


def drain(bootstrap: str, topic: str, count: int) -> Run:
    """kcat (librdkafka's own command-line client) reads partition 0 from its start, printing
    one offset per record; this process counts lines in whole pipe reads, so no Python work is
    done per record and the consumer is C from fetch to output."""
    proc = subprocess.Popen(
        [KCAT, "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-c",
         str(count), "-e", "-q", "-f", "%o\n"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    reads: list[tuple[float, int]] = []
    deadline = time.monotonic() + TIMEOUT_S
    fd = proc.stdout.fileno()
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1.0)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            reads.append((time.perf_counter(), chunk.count(b"\n")))
    finally:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate()
    return drain_rate(reads, count, err.decode(errors="replace").strip())


def drain_rate(reads: list[tuple[float, int]], count: int, stderr: str = "") -> Run:
    """The drain's run from its pipe reads, (time, records) each: the records after the first
    read over the time from it to the last. A drain short of ``count``, or whose records all
    came in one read (no time to divide by), is not complete, and says why."""
    got = sum(n for _, n in reads)
    if got < count:
        why = (stderr.splitlines()[-1:] or [f"{got} of {count} records in {TIMEOUT_S:g} s"])[0]
        return Run(got, 0.0, False, why)
    if len(reads) < 2:
        return Run(got, 0.0, False, f"all {got} records came in one read: no rate")
    (first_t, first_n), (last_t, _) = reads[0], reads[-1]
    return Run(got - first_n, last_t - first_t, last_t > first_t)
