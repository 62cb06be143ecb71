"""A child program: one DsbsCoordinator gossiping over loopback, in a process of its own, so a
test can SIGKILL it and watch the survivors declare it dead, then restart it.

``python -m tests.support.dsbs_member NODE_ID GOSSIP_PORT DATA_DIR SEEDS`` (SEEDS: comma-separated
host:port) joins with the LOCAL gossip preset and the tests' cluster key, prints
``ready <incarnation>`` once it has joined, then waits forever.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from brokers.core.coordinator import BrokerInfo
from brokers.dsbs_broker.config import DsbsConfig, GossipConfig
from brokers.dsbs_broker.coordinator import DsbsCoordinator

# The cluster key this member and the tests' in-process members share.
KEY = b"test cluster key of 32 bytes ok!"


async def main(node_id: int, port: int, data: str, seeds: str) -> None:
    cfg = DsbsConfig(gossip_port=port, seeds=tuple(seeds.split(",")), gossip=GossipConfig.LOCAL,
                     join_timeout_s=2.0, gossip_key=KEY)
    c = DsbsCoordinator(node_id, Path(data), cfg)
    await c.start(BrokerInfo(node_id, "127.0.0.1", 30000 + node_id))
    print("ready", c.node.incarnation, flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]))
