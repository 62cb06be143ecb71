"""zk: brokers coordinated by a real Apache ZooKeeper (brokers/zk_broker), as Kafka was before
KRaft. Its cluster starts the ZooKeeper service first (harness/services/zookeeper) and gives
every broker the connect string under the chroot ``/twinbench``."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

from harness.architectures.core_broker import core_broker
from harness.architectures.entry import (
    Architecture,
    Coordination,
    Labels,
    Launch,
    Node,
    ProcessSpec,
)
from harness.architectures.options import Options, knob

# The chroot of the zk brokers' znodes: the ensemble may hold other things (kafka-zk's).
CHROOT = "/twinbench"
# The ZooKeeper digest identity of a secured cluster (digest auth and ACLs on every znode).
CREDENTIAL_FILE = "zookeeper.credential"


@dataclass(frozen=True)
class ZkOptions(Options):
    # The brokers' ZooKeeper session timeout (zookeeper.session.timeout.ms): how long a dead
    # broker stays registered. None: the broker's default (18000, Kafka's).
    session_timeout_ms: int | None = knob(
        None, "the brokers' ZooKeeper session timeout (ms); default 18000, Kafka's",
        low=1000, high=600_000)


def new_credential() -> str:
    """A fresh ZooKeeper digest identity (``twinbench:<random>``)."""
    return f"twinbench:{secrets.token_urlsafe(24)}\n"


def _command(launch: Launch) -> Callable[[Node], ProcessSpec]:
    options = launch.options
    assert isinstance(options, ZkOptions)
    session = ([] if options.session_timeout_ms is None
               else ["--zk-session-timeout-ms", str(options.session_timeout_ms)])
    connect = f"{launch.services['zookeeper']}{CHROOT}"
    auth: list[list[str]] = [[] for _ in launch.hosts]
    if launch.settings.protocol.value != "PLAINTEXT":
        # A secured cluster secures its ZooKeeper state too: digest auth and ACLs.
        auth = [["--zk-auth-file", str(path)]
                for path in launch.share(CREDENTIAL_FILE, new_credential())]
    return core_broker("brokers.zk_broker", launch.settings,
                       lambda node: ["--zookeeper", connect, *session, *auth[node.node_id]])


ZK = Architecture(
    name="zk",
    summary="coordinated by a real Apache ZooKeeper, as Kafka was before KRaft",
    labels=Labels(display_name="ZooKeeper", short_name="ZK", color="#4C72B0", order=0,
                  baseline=True, cost_column="coord_messages", cost_label="ZooKeeper requests"),
    options=ZkOptions,
    command=_command,
    counters="brokers.zk_broker.counters:ZkCounters",
    # ZooKeeper's own count of the requests it served (mntr), the client library's pings
    # included; the brokers' own count of their requests is coordination_ops.
    coordination=Coordination(messages="zookeeper:packets_received"),
    services=("zookeeper",),
    legacy_keys={"zk_session_timeout_ms": "session_timeout_ms"},
)
