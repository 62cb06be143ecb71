"""A DSBS broker without the cluster key cannot join: real broker processes on loopback.

The harness gives every dsbs cluster a fresh key (secured or not: gossip authentication is
always on, brokers/dsbs_broker/packets/auth.py). A broker started with another key, or with
``--gossip-insecure``, pointed at the cluster's seeds, never becomes a member: the cluster
drops its datagrams unread (counted as ``gossip_dropped_unauthenticated``) and it serves
alone. The same broker started with the cluster's key joins, which shows the check can see a
join when there is one.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from harness.architectures.dsbs import write_gossip_key
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.processes import ManagedProcess
from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec
from harness.services.zookeeper import free_ports
from tests.support.ops import eventually

pytestmark = [pytest.mark.integration]


def _members(host: str, port: int) -> set[int]:
    with KafkaProbe(host, port, timeout_s=5) as probe:
        return {b.node_id for b in probe.metadata([]).brokers}


def _dropped_unauthenticated(cluster: ProcessCluster) -> int:
    total = 0
    for b in cluster.brokers:
        path = b.data_dir / "counters.json"
        sent = time.time_ns()
        os.kill(b.process.pid, signal.SIGUSR1)

        def fresh(p: Path = path, sent: int = sent) -> dict | None:
            try:
                doc = json.loads(p.read_text())
            except (OSError, ValueError):
                return None
            return doc if doc["written_unix_ns"] >= sent else None

        doc = eventually(fresh, 10, "counters.json")
        total += doc["coordinator"].get("gossip_dropped_unauthenticated", 0)
    return total


def _start(root: Path, node_id: int, seeds: str, auth: list[str]) -> tuple[ManagedProcess, int]:
    (gossip,) = free_ports(1)
    argv = [sys.executable, "-m", "brokers.dsbs_broker", "--node-id", str(node_id),
            "--listen", "127.0.0.1:0", "--data-dir", str(root / f"broker-{node_id}"),
            "--gossip", f"127.0.0.1:{gossip}", "--seeds", seeds, "--gossip-preset", "local",
            *auth]
    proc = ManagedProcess(argv, name=f"dsbs broker {node_id}",
                          log_path=root / f"broker-{node_id}.log").start()
    line = proc.wait_for_line("listening=", 30)
    return proc, int(line.rsplit(":", 1)[1])


def test_a_broker_without_the_cluster_key_cannot_join(tmp_path: Path) -> None:
    spec = ClusterSpec("dsbs", brokers=2, data_dir=tmp_path / "cluster",
                       options={"dsbs": {"gossip_preset": "local"}})
    with ProcessCluster(spec) as cluster:
        argv = cluster.brokers[0].process.argv
        seeds = argv[argv.index("--seeds") + 1]
        key = Path(argv[argv.index("--gossip-key-file") + 1])
        outsiders = tmp_path / "outsiders"
        outsiders.mkdir()
        before = _dropped_unauthenticated(cluster)
        started = []
        try:
            for node_id, auth in (
                    (5, ["--gossip-key-file", str(write_gossip_key(outsiders))]),
                    (6, ["--gossip-insecure"])):
                proc, port = _start(outsiders, node_id, seeds, auth)
                started.append(proc)
                # Its datagrams reach the cluster and are dropped there, unread...
                drops = before
                deadline = time.monotonic() + 20
                while drops < before + 5 and time.monotonic() < deadline:
                    drops = _dropped_unauthenticated(cluster)
                assert drops >= before + 5, "the outsider's gossip never reached the cluster"
                before = drops
                # ...so nobody lists it, and it lists nobody but itself.
                for b in cluster.brokers:
                    assert _members(b.host, b.port) == {0, 1}
                assert _members("127.0.0.1", port) == {node_id}
                assert proc.poll() is None
            # The control: the cluster's own key, and the same broker joins.
            proc, port = _start(tmp_path, 2, seeds, ["--gossip-key-file", str(key)])
            started.append(proc)
            eventually(lambda: all(_members(b.host, b.port) == {0, 1, 2}
                                   for b in cluster.brokers), 30, "the keyed broker to join")
            assert _members("127.0.0.1", port) == {0, 1, 2}
        finally:
            for proc in started:
                proc.stop()
