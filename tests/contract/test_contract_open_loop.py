"""Open-loop load on every architecture: the load client keeps a low target rate, and every
record consumed carries its intended send time, so each has an end-to-end latency.

Real broker processes (and ZooKeeper for zk), the load client's own producer and consumer.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.support.ops import create_everywhere
from workloads.cluster import ClusterClient
from workloads.connection import run as run_async
from workloads.consumer import Consumer
from workloads.producer import Producer, ProducerConfig
from workloads.verify import Verifier

pytestmark = pytest.mark.integration

RATE = 2_000.0  # records/s: far below what any twin sustains, so the schedule is the limit
DURATION_S = 1.5
BATCH = 10


async def _open_loop(bootstrap: str, topic: str, arrivals: str) -> tuple:
    prod_client = await ClusterClient.open(bootstrap)
    cons_client = await ClusterClient.open(bootstrap)
    try:
        parts = await prod_client.topic_partitions(topic)
        cfg = ProducerConfig(topic=topic, msg_size=32, batch=BATCH, mode="pipelined", window=4,
                             producer_id=1, rate=RATE, arrivals=arrivals, seed=3)  # type: ignore[arg-type]
        producer = Producer(prod_client, config=cfg)
        verifier = Verifier()
        consumer = Consumer(cons_client, topic, parts, batch=BATCH, msg_size=32,
                            verifier=verifier)
        # Upper bound of what the schedule sends in the duration (poisson may run short).
        count = int(RATE * DURATION_S * 1.5)
        # Streaming: the consumer follows the topic while the producer runs, then catches up.
        consuming = asyncio.ensure_future(consumer.run(deadline_s=60, follow=True))
        prod = await producer.run(count, duration_s=DURATION_S)
        consumer.finish()
        cons = await asyncio.wait_for(consuming, 90)
        verifier.expect(prod.producer_id, prod.acked)
        return prod, cons, verifier.report()
    finally:
        await prod_client.close()
        await cons_client.close()


@pytest.mark.parametrize("arrivals", ["uniform", "poisson"])
def test_open_loop_keeps_a_low_rate_and_times_every_record_end_to_end(cluster, arrivals):
    topic = f"open-loop-{uuid.uuid4().hex[:10]}"
    # Every broker knows the leaders before the first send: a pipelined request refused by a
    # leader that has not heard of the topic yet is resent after later ones (out of order).
    create_everywhere(cluster.brokers, topic, 2)
    prod, cons, report = run_async(_open_loop(cluster.bootstrap, topic, arrivals))
    sched = prod.schedule_report
    assert sched is not None and not sched.behind, sched
    assert prod.records_acked == prod.records_sent > 0
    # Achieved rate vs target over the schedule (poisson: the count is random, +-5 sigma).
    tolerance = 0.05 if arrivals == "uniform" else 5 * (RATE * DURATION_S) ** 0.5 / (
        RATE * DURATION_S)
    assert sched.achieved_rate == pytest.approx(RATE, rel=tolerance)
    assert report.lost == report.duplicates == report.out_of_order == 0, (report, prod.retries)
    assert cons.records == prod.records_acked
    # Every record consumed has a latency from its intended send time ...
    assert cons.e2e_latency.count == prod.records_acked
    # ... and so does every acknowledged record's produce latency, timed from the intended and
    # from the actual send; the intended one can only be longer.
    assert prod.schedule is not None
    assert prod.schedule.latency_intended.count == prod.records_acked
    assert prod.schedule.latency_intended.histogram.get_max_value() >= (
        prod.schedule.latency_actual.histogram.get_max_value())
    # Consumed while produced: end-to-end is a round trip or two and a long-poll, not the
    # session's length (which it would be if records carried no intended time of their own).
    assert 0 < cons.e2e_latency.percentile(50) < 500_000
