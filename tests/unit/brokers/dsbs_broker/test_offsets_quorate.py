"""What a DSBS broker that is not quorate answers for committed offsets (``DsbsCoordinator``).

COORDINATOR_LOAD_IN_PROGRESS, which clients retry against the same broker, not
COORDINATOR_NOT_AVAILABLE: given that, librdkafka looks the coordinator up again, finds the
same broker, and never sends again the OffsetFetch of the assignment it was serving, so the
group's partitions wait for committed offsets for ever (found by the nemesis, seed 668362305:
a restarted coordinator answered before a seed had, and the group stalled)."""

from __future__ import annotations

from pathlib import Path

import pytest

from brokers.core.errors import CoordinatorLoadInProgress
from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.coordinator import DsbsCoordinator
from brokers.dsbs_broker.gossip.simnet import SimNet

pytestmark = pytest.mark.filesystem


def test_a_broker_without_a_majority_answers_load_in_progress_until_it_has_one(tmp_path: Path):
    net = SimNet(GossipConfig.LOCAL, seed=5)
    coordinator = DsbsCoordinator(0, tmp_path)
    coordinator._node = net.add(0, seeds=(1, 2))  # no seed has answered yet
    with pytest.raises(CoordinatorLoadInProgress, match="serves no committed offsets"):
        coordinator._check_quorate("g")
    for peer in (1, 2):
        net.add(peer, seeds=(0, 1, 2))
    assert net.run_until(lambda: coordinator.node.offset_replication.quorate(),
                         timeout_s=10) is not None
    coordinator._check_quorate("g")  # served now
