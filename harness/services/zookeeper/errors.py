"""What can go wrong getting a ZooKeeper, and the one sentence that says how to get one."""

from __future__ import annotations

from brokers.core.errors import UserError
from harness.cluster.processes import ProcessError

HOW_TO_GET_ZOOKEEPER = (
    "no ZooKeeper available: to use a running one, pass --option zookeeper.connect=HOST:PORT "
    "(perf-zk: --zookeeper HOST:PORT) or set ZOOKEEPER_CONNECT; or install Java and the "
    "ZooKeeper jars (Debian: sudo apt-get install default-jre-headless zookeeper; or set "
    "ZOOKEEPER_HOME to an unpacked Apache ZooKeeper release); or start a Docker engine "
    "so testcontainers can run the zookeeper image"
)


class ZooKeeperUnavailable(UserError):
    """No ZooKeeper can be found or started; the message says how to get one."""


class ZooKeeperStartError(ProcessError):
    """A local ZooKeeper process was started but did not become ready; carries the log tail."""
