"""What every architecture must do when a broker dies: the others keep serving, and the dead
broker comes back with every record it had acknowledged (real processes, SIGKILL)."""

from __future__ import annotations

import uuid

import pytest

from tests.support.ops import create_everywhere, eventually, fetch_values, leaders, produce_values

pytestmark = pytest.mark.integration


def by_node(cluster, node_id: int):
    return next(b for b in cluster.brokers if b.node_id == node_id)


@pytest.mark.multi_broker
def test_a_killed_leader_keeps_its_records_and_the_others_keep_serving(cluster):
    topic = f"faults-{uuid.uuid4().hex[:10]}"
    n = len(cluster.brokers)
    placement = create_everywhere(cluster.brokers, topic, n)
    sent = {p: [f"{topic}-{p}-{i}".encode() for i in range(30)] for p in placement}
    for p, node in placement.items():
        assert produce_values(by_node(cluster, node), topic, p, sent[p]) == 0
    victim = placement[0]
    cluster.kill_broker(victim)
    try:
        # Partitions led elsewhere take writes as before (no survivor needs the dead one).
        for p, node in placement.items():
            if node != victim:
                more = [b"after-kill"]
                assert produce_values(by_node(cluster, node), topic, p, more) == 0
                sent[p] += more
    finally:
        cluster.restart_broker(victim)
    # The restarted broker leads its partition again and still has every acknowledged record.
    for b in cluster.brokers:
        eventually(lambda b=b: leaders(b, topic).get(0) == victim, timeout_s=60,
                   what=f"partition 0 led by {victim} again, as seen by {b.port}")
    for p, node in placement.items():
        assert fetch_values(by_node(cluster, node), topic, p) == sent[p]
