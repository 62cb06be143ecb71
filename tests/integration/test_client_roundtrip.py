"""The load client against MemoryCluster (tests/support/memory_broker.py), a small in-memory
Kafka-protocol cluster, for real over loopback TCP: routing, retries, verification of loss,
duplicates and order, commit policies."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from tests.support.memory_broker import MemoryCluster
from workloads.cluster import ClusterClient
from workloads.connection import BrokerConnection, new_event_loop
from workloads.consumer import Consumer
from workloads.producer import Producer
from workloads.verify import Verifier

pytestmark = pytest.mark.integration


def run(coro):
    loop = new_event_loop()
    try:
        return loop.run_until_complete(asyncio.wait_for(coro, 60))
    finally:
        loop.close()


async def _with_cluster(body, nodes: int = 2):
    mc = await MemoryCluster(nodes).start()
    cluster = None
    try:
        cluster = await ClusterClient.open(mc.bootstrap)
        return await body(mc, cluster)
    finally:
        if cluster is not None:
            await cluster.close()
        await mc.stop()


@pytest.mark.parametrize(
    ("msg_size", "batch", "mode"),
    [
        (32, 20, "sync"),
        (8, 7, "sync"),
        (1024, 50, "pipelined"),
        (128 * 1024, 3, "pipelined"),
    ],
)
def test_produce_then_consume_split(msg_size, batch, mode):
    count = 1003 if msg_size < 100_000 else 31

    async def body(mc: MemoryCluster, cluster: ClusterClient):
        await cluster.create_topic("t", partitions=3)
        prod = await Producer(
            cluster, "t", msg_size=msg_size, batch=batch, mode=mode, window=4, producer_id=5
        ).run(count)
        assert prod.records_acked == prod.records_sent == count
        assert prod.requests == -(-count // batch) and prod.errors == {}
        assert sum(prod.partition_records.values()) == count
        assert prod.latency.count == prod.requests and prod.rps > 0
        v = Verifier()
        v.expect(5, prod.acked)
        cons = await Consumer(
            cluster, "t", [0, 1, 2], group="g", batch=batch, msg_size=msg_size, verifier=v
        ).run(expected=count, deadline_s=30)
        rep = v.report()
        assert rep.ok and rep.records == count and rep.unique == count, rep
        assert cons.records == count and not cons.timed_out and cons.missing == 0
        assert cons.e2e_latency.count == count
        # (a commit in flight when the last loop finished may be cancelled unanswered)
        assert cons.commits >= 1 and mc.commit_count in (
            cons.commits,
            cons.commits + 1,
            cons.commits + 2,
        )
        # committed offsets equal the log ends
        for p, log in mc.topics["t"].items():
            assert mc.offsets[("g", "t", p)] == log.end == cons.positions[p]
        return cons

    run(_with_cluster(body))


def test_every_fetch_commits_and_fetches_about_batch_records():
    async def body(mc, cluster):
        await cluster.create_topic("t", partitions=1)
        await Producer(cluster, "t", msg_size=32, batch=20).run(400)
        cons = await Consumer(cluster, "t", [0], batch=20, msg_size=32, commit="every_fetch").run(
            expected=400
        )
        assert cons.fetches == 20 and cons.commits == 20
        assert cons.fetch_latency.count == 20 and cons.commit_latency.count == 20
        # a second consumer of the group starts from the committed offset: nothing left
        again = await Consumer(cluster, "t", [0], batch=20, msg_size=32).run(deadline_s=2)
        assert again.records == 0 and again.positions == {0: 400}

    run(_with_cluster(body, nodes=1))


def test_interval_and_none_commit_policies():
    async def body(mc, cluster):
        await cluster.create_topic("t", partitions=2)
        await Producer(cluster, "t", msg_size=16, batch=10).run(200)
        c1 = await Consumer(
            cluster, "t", [0, 1], group="a", batch=10, msg_size=16, commit=("interval_ms", 60_000)
        ).run(expected=200)
        assert c1.commits == 1  # only the final commit
        before = mc.commit_count
        c2 = await Consumer(
            cluster, "t", [0, 1], group="b", batch=10, msg_size=16, commit="none"
        ).run(expected=200)
        assert c2.commits == 0 and mc.commit_count == before and c2.records == 200

    run(_with_cluster(body))


def test_streaming_consumers_split_partitions_share_a_verifier():
    async def body(mc, cluster):
        await cluster.create_topic("s", partitions=4)
        v = Verifier()
        consumers = [
            Consumer(
                cluster,
                "s",
                parts,
                group="g",
                batch=20,
                msg_size=64,
                verifier=v,
                consumer_id=i,
                max_wait_ms=50,
            )
            for i, parts in enumerate([[0, 1], [2, 3]])
        ]
        # 480 records = 24 batches per producer = 6 per partition: each consumer gets 480
        ctasks = [asyncio.ensure_future(c.run(expected=480, deadline_s=30)) for c in consumers]
        prods = await asyncio.gather(
            *[Producer(cluster, "s", msg_size=64, batch=20, producer_id=i).run(480) for i in (1, 2)]
        )
        for p in prods:
            v.expect(p.producer_id, p.acked)
        results = await asyncio.gather(*ctasks)
        rep = v.report()
        assert rep.ok and rep.records == 960, rep
        assert sum(r.records for r in results) == 960
        assert all(r.e2e_latency.percentile(50) > 0 for r in results)

    run(_with_cluster(body))


def test_producer_retries_after_not_leader_and_verifier_sees_faults():
    async def body(mc, cluster):
        await cluster.create_topic("f", partitions=2)
        mc.faults.not_leader[1] = 2  # the first two requests to partition 1 bounce
        mc.faults.drop_produce.add(3)  # acked, never stored -> lost
        mc.faults.duplicate_produce.add(5)  # stored twice -> duplicates
        prod = await Producer(cluster, "f", msg_size=32, batch=10, producer_id=1).run(100)
        assert prod.retries == 2 and prod.records_acked == 100 and prod.errors == {}
        assert cluster.metadata_refreshes >= 3
        v = Verifier()
        v.expect(1, prod.acked)
        cons = await Consumer(cluster, "f", [0, 1], batch=10, msg_size=32, verifier=v).run(
            expected=100, deadline_s=3
        )
        rep = v.report()
        assert rep.lost == 10 and rep.duplicates == 10 and rep.out_of_order == 0
        assert cons.records == 100  # 90 originals + 10 duplicates

    run(_with_cluster(body))


def test_deadline_reports_missing_records():
    async def body(mc, cluster):
        await cluster.create_topic("d", partitions=1)
        await Producer(cluster, "d", msg_size=32, batch=5).run(50)
        cons = await Consumer(cluster, "d", [0], batch=5, msg_size=32, max_wait_ms=20).run(
            expected=80, deadline_s=0.5
        )
        assert cons.timed_out and cons.records == 50 and cons.missing == 30

    run(_with_cluster(body, nodes=1))


def test_connection_pipelines_and_records_latency():
    async def body(mc, cluster):
        conn = await BrokerConnection.open("127.0.0.1", mc.ports[0])
        futs = [conn.request(18, 2, b"") for _ in range(50)]
        frames = await asyncio.gather(*futs)
        assert len(frames) == 50 and conn.in_flight == 0
        assert conn.latency[18].count == 51  # + the handshake
        assert conn.pick_version(0, 3, 8) == 8 and conn.pick_version(1, 4, 11) == 11
        conn.close()
        with contextlib.suppress(Exception):
            await conn.request(18, 2, b"")

    run(_with_cluster(body, nodes=1))


def test_acks_zero_sends_without_waiting_and_counts_nothing_as_acked():
    async def body(mc, cluster):
        await cluster.create_topic("z", partitions=1)
        prod = await Producer(cluster, "z", msg_size=32, batch=10, acks=0).run(100)
        assert prod.records_sent == 100 and prod.records_acked == 0 and prod.requests == 10
        v = Verifier()
        v.expect(0, prod.acked)
        cons = await Consumer(cluster, "z", [0], batch=10, msg_size=32, verifier=v).run(
            expected=100, deadline_s=5
        )
        rep = v.report()
        assert cons.records == 100 and rep.unexpected == 100 and rep.lost == 0

    run(_with_cluster(body, nodes=1))


def test_pipelined_producer_over_several_leaders_keeps_per_partition_order():
    async def body(mc, cluster):
        await cluster.create_topic("o", partitions=6)
        prod = await Producer(
            cluster, "o", msg_size=16, batch=7, mode="pipelined", window=16, producer_id=3
        ).run(5000)
        assert prod.records_acked == 5000
        assert {p: (0, c - 1) for p, c in prod.partition_records.items()} == (
            prod.partition_offsets
        )
        v = Verifier()
        v.expect(3, prod.acked)
        await Consumer(cluster, "o", list(range(6)), batch=7, msg_size=16, verifier=v).run(
            expected=5000
        )
        assert v.report().ok

    run(_with_cluster(body, nodes=3))
