"""The election promises file of a DSBS broker (``DsbsCoordinator``): a promise is on disk,
fsynced, before its ballot may leave, and a restarted broker holds the newest promise per
partition (a replica that forgot a grant could grant the epoch again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from brokers.core import fsyncs
from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.coordinator import PROMISES_FILE, DsbsCoordinator
from brokers.dsbs_broker.gossip.simnet import SimNet
from brokers.dsbs_broker.packets.wire import Promise

pytestmark = pytest.mark.filesystem


def _started(data_dir: Path) -> tuple[DsbsCoordinator, SimNet]:
    net = SimNet(GossipConfig.LOCAL, seed=1)
    (data_dir / "dsbs").mkdir(exist_ok=True)  # start() has written the state file there
    coordinator = DsbsCoordinator(0, data_dir)
    coordinator._load_promises(net.add(0))
    return coordinator, net


def test_promises_are_fsynced_and_a_restart_holds_the_newest_per_partition(tmp_path):
    first, _ = _started(tmp_path)
    before = fsyncs.count()
    first._persist_promise("t", 0, 77, Promise(1, 1))
    first._persist_promise("t", 0, 77, Promise(3, 2))
    first._persist_promise("u", 1, 9, Promise(2, 0))
    assert fsyncs.count() - before == 3  # one per promise, before the ballot is queued
    path = tmp_path / "dsbs" / PROMISES_FILE
    with path.open("a") as f:
        f.write('{"topic": "t", "partition": 0}\n')  # not a promise: skipped, not fatal
    assert first._promises_file is not None
    first._promises_file.close()

    again, net = _started(tmp_path)
    assert net.nodes[0].leadership.persisted == {("t", 0): (77, Promise(3, 2)),
                                                 ("u", 1): (9, Promise(2, 0))}
    assert len(path.read_text().splitlines()) == 2  # kept: the newest per partition only
    assert again._promises_file is not None
    again._promises_file.close()
