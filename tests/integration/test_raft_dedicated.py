"""The Raft twin with dedicated controllers (``--arch raft-dc``): three controller processes
(the service raft-controllers) and three learner brokers, real processes on loopback.

Metadata names a broker as the controller (a dedicated one serves no client); killing the
quorum's leader elects another and topics are still created and served; the controllers'
counters are read beside the brokers'; a bad controller command line is one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec
from harness.services.raft_controllers import NAME, RunningControllers
from tests.support.ops import connect, create_everywhere, eventually, fetch_values, produce_values

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(tmp_path: Path):  # type: ignore[no-untyped-def]
    c = ProcessCluster(ClusterSpec("raft-dc", brokers=3, data_dir=tmp_path)).start()
    yield c
    c.stop()


def test_dedicated_controllers_lead_and_fail_over(cluster: ProcessCluster) -> None:
    service = cluster.services[NAME]
    assert isinstance(service, RunningControllers)
    broker_ids = {b.node_id for b in cluster.brokers}
    with connect(cluster.brokers[0]) as p:
        md = p.metadata([])
    # A broker stands in for the controller in Metadata, the same one on every broker.
    assert md.controller_id in broker_ids
    for b in cluster.brokers[1:]:
        with connect(b) as p:
            assert p.metadata([]).controller_id == md.controller_id
    before = create_everywhere(cluster.brokers, "before", 3)
    assert produce_values(cluster.broker(before[0]), "before", 0, [b"a", b"b"]) == 0

    first = eventually(lambda: service.leader(), what="a quorum leader")
    counters = service.counters()
    assert counters is not None and counters["raft_messages_out"] > 0
    assert cluster.act_on_service(NAME, "kill-raft-controller") == str(first)
    second = eventually(lambda: (x := service.leader()) is not None and x != first and (x,),
                        what="another leader")[0]
    assert second != first
    # The brokers follow the new leader: a topic is created and served.
    leaders = create_everywhere(cluster.brokers, "after", 2)
    b = cluster.broker(leaders[1])
    assert produce_values(b, "after", 1, [b"c"]) == 0
    assert fetch_values(b, "after", 1) == [b"c"]
    # Nothing acknowledged before the election is lost (no broker moved: only a controller).
    assert fetch_values(cluster.broker(before[0]), "before", 0) == [b"a", b"b"]
    assert cluster.repair() and all(service.running())
    assert service.counters() is not None


def test_a_bad_controller_command_line_is_one_line(tmp_path: Path) -> None:
    cases = [
        (["--node-id", "5", "--voters", "1,3,7", "--raft-insecure", "--raft-peers",
          "1=127.0.0.1:1,3=127.0.0.1:2,5=127.0.0.1:3,7=127.0.0.1:4"], "not among the voters"),
        (["--node-id", "1", "--voters", "1,3", "--raft-insecure"], "even number"),
        (["--node-id", "1"], "--raft-key-file"),  # neither a key nor insecure
    ]
    for args, message in cases:
        argv = [sys.executable, "-m", "brokers.raft_broker.controller", "--data-dir",
                str(tmp_path / "c"), *args]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], done.stderr
