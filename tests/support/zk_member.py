"""A child program: one ZkCoordinator registered in ZooKeeper, in a process of its own, so a
test can SIGKILL it (no goodbye to ZooKeeper) and watch its session expire.

``python -m tests.support.zk_member CONNECT CHROOT NODE_ID SESSION_TIMEOUT_MS`` starts the
coordinator as broker NODE_ID (advertised at 127.0.0.1:19000 + NODE_ID), prints ``ready`` once
it is registered, then waits forever.
"""

from __future__ import annotations

import asyncio
import sys

from brokers.core.coordinator import BrokerInfo
from brokers.zk_broker import ZkCoordinator, ZkCoordinatorConfig


async def main(connect: str, chroot: str, node: int, session_timeout_ms: int) -> None:
    cfg = ZkCoordinatorConfig(connect, chroot=chroot, session_timeout_ms=session_timeout_ms)
    c = ZkCoordinator(cfg, node)
    await c.start(BrokerInfo(node, "127.0.0.1", 19000 + node))
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
