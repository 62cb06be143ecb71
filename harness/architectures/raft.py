"""raft: an embedded Raft metadata quorum among the brokers, KRaft's design on the twins' core
(brokers/raft_broker). No service: the first brokers vote (three when there are three or more,
else one), the others are learners replaying the log; every broker gets its Raft address (its
namespace's fixed port, or a free port of its machine), every member's, and the cluster key.

raft-dc: the same twin with dedicated controllers (KRaft's ``process.roles=controller``): the
service ``raft-controllers`` (harness/services/raft_controllers.py) runs the voters in processes
of their own and plans the membership; every broker is a learner. Not in ``--arch all`` (a
deployment of the raft twin, measured when named), under test like every twin."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from harness.architectures.core_broker import core_broker
from harness.architectures.dsbs import new_gossip_key
from harness.architectures.entry import (
    Architecture,
    Coordination,
    Labels,
    Launch,
    Node,
    ProcessSpec,
)
from harness.architectures.options import Options, knob
from harness.services.raft_controllers import NAME as CONTROLLERS
from harness.services.raft_controllers import NETNS_RAFT_PORT, decode_endpoint

RAFT_KEY_FILE = "raft.key"


@dataclass(frozen=True)
class RaftOptions(Options):
    # How many of the brokers vote: KRaft's usual quorum is three (one failure tolerated);
    # five tolerate two. A cluster with fewer brokers gets the largest odd number it has.
    voters: int = knob(3, "quorum voters among the brokers (an odd number; fewer brokers: the "
                       "largest odd number of them)", low=1, high=9)
    # The controller fences a broker whose heartbeats stopped this long ago.
    session_timeout_s: float = knob(3.0, "seconds of silence after which the controller "
                                    "fences a broker", low=1.0, high=60.0)


def quorum_size(brokers: int, wanted: int) -> int:
    """The voters of a cluster of ``brokers``: ``wanted``, or the largest odd number below."""
    n = min(brokers, wanted)
    return n if n % 2 else n - 1


def _command(launch: Launch) -> Callable[[Node], ProcessSpec]:
    options = launch.options
    assert isinstance(options, RaftOptions)
    if launch.netns:
        addresses = [(h, NETNS_RAFT_PORT) for h in launch.hosts]
    else:
        addresses = list(zip(launch.hosts, launch.free_ports(), strict=True))
    peers = ",".join(f"{i}={h}:{p}" for i, (h, p) in enumerate(addresses))
    voters = tuple(range(quorum_size(len(launch.hosts), options.voters)))
    # The same kind of key as the gossip's: 256 random bits, hex.
    keys = launch.share(RAFT_KEY_FILE, new_gossip_key())
    process = core_broker("brokers.raft_broker", launch.settings, lambda node: [
        "--raft", "{}:{}".format(*addresses[node.node_id]), "--raft-peers", peers,
        "--voters", ",".join(map(str, voters)),
        "--session-timeout", str(options.session_timeout_s),
        "--raft-key-file", str(keys[node.node_id])])

    def spec(node: Node) -> ProcessSpec:
        return replace(process(node), voter=node.node_id in voters)

    return spec


RAFT = Architecture(
    name="raft",
    summary="an embedded Raft metadata quorum among the brokers (KRaft's design)",
    labels=Labels(display_name="Raft", short_name="RAFT", color="#55A868", order=2,
                  baseline=False, cost_column="coord_messages", cost_label="Raft messages"),
    options=RaftOptions,
    command=_command,
    counters="brokers.raft_broker.counters:RaftCounters",
    coordination=Coordination(messages="coordinator:raft_messages_out",
                              bytes="coordinator:raft_bytes_out"),
    quorum=True,
)


@dataclass(frozen=True)
class RaftDcOptions(Options):
    """No knob of its own: the quorum's (its size, the session timeout) are the
    ``raft-controllers`` service's options."""


def _dc_command(launch: Launch) -> Callable[[Node], ProcessSpec]:
    m = decode_endpoint(launch.services[CONTROLLERS])
    keys = launch.share(RAFT_KEY_FILE, m.key_file.read_text("utf-8"))
    return core_broker("brokers.raft_broker", launch.settings, lambda node: [
        "--raft", "{}:{}".format(*m.brokers[node.node_id]), "--raft-peers", m.peers,
        "--voters", m.voters, "--raft-key-file", str(keys[node.node_id])])


RAFT_DC = Architecture(
    name="raft-dc",
    summary="the Raft twin with dedicated controller processes (KRaft's "
            "process.roles=controller); every broker a learner",
    labels=Labels(display_name="Raft, dedicated controllers", short_name="RAFT-DC",
                  color="#8172B2", order=3, baseline=False, cost_column="coord_messages",
                  cost_label="Raft messages"),
    options=RaftDcOptions,
    command=_dc_command,
    counters="brokers.raft_broker.counters:RaftCounters",
    # The brokers' own messages (requests to the controller, heartbeats, the learners'
    # answers) and the controllers' (most of the quorum's traffic).
    coordination=Coordination(
        messages=f"coordinator:raft_messages_out+{CONTROLLERS}:raft_messages_out",
        bytes=f"coordinator:raft_bytes_out+{CONTROLLERS}:raft_bytes_out"),
    services=(CONTROLLERS,),
    controller_is_a_broker=False,
    compared=False,
)
