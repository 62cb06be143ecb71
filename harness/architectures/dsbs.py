"""dsbs: every broker keeps its own tables and gossips with its peers over UDP
(brokers/dsbs_broker, the DSBS paper's design). No service: each broker gets a gossip address
(its namespace's fixed port, or a free port of its machine), every broker's address as seeds,
and the cluster's gossip key."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from brokers.core.atomic_file import replace_file
from brokers.dsbs_broker.config import DsbsConfig
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

# In a network namespace every broker has an address of its own, so all use the usual port.
NETNS_GOSSIP_PORT = 7946
GOSSIP_KEY_FILE = "gossip.key"


@dataclass(frozen=True)
class DsbsOptions(Options):
    # Gossip timing: lan (1 s protocol period, realistic) or local (fast failure detection,
    # for tests on one host).
    gossip_preset: str = knob("lan", "gossip timing preset: lan (1 s protocol period) or "
                              "local (fast failure detection on one host)",
                              choices=("lan", "local"))
    # Successors that must hold a committed offset before the coordinator acknowledges it
    # (brokers/dsbs_broker/gossip/offset_replication.py): 1, or 0 for the paper's lazy
    # replication, to measure what the guarantee costs.
    offset_commit_acks: int = knob(1, "successor coordinators holding a commit before it is "
                                   "acknowledged (0: the paper's lazy replication)", low=0,
                                   high=16)


def new_gossip_key() -> str:
    """A fresh random cluster key (256 bits, hex); every broker of the cluster authenticates
    its gossip with it."""
    return secrets.token_hex(32) + "\n"


def write_gossip_key(root: Path) -> Path:
    """A fresh gossip key in ``root``, mode 0600 from creation on."""
    path = root / GOSSIP_KEY_FILE
    # Not durable: the cluster that uses the key does not outlive the machine, and the next
    # cluster writes a fresh one.
    replace_file(path, new_gossip_key(), sync_file=False, sync_dir=False, mode=0o600)
    return path


def _command(launch: Launch) -> Callable[[Node], ProcessSpec]:
    options = launch.options
    assert isinstance(options, DsbsOptions)
    if launch.netns:
        gossip = [f"{h}:{NETNS_GOSSIP_PORT}" for h in launch.hosts]
    else:
        gossip = [f"{h}:{p}" for h, p in zip(launch.hosts, launch.free_ports(), strict=True)]
    keys = launch.share(GOSSIP_KEY_FILE, new_gossip_key())
    seeds = ",".join(gossip)
    # Only when it differs from the brokers' default: a base commit's brokers, older than the
    # flag, still start under this harness (make regress).
    acks = ([] if options.offset_commit_acks == DsbsConfig.offset_commit_acks
            else ["--offset-commit-acks", str(options.offset_commit_acks)])
    return core_broker("brokers.dsbs_broker", launch.settings, lambda node: [
        "--gossip", gossip[node.node_id], "--seeds", seeds,
        "--gossip-preset", options.gossip_preset, *acks,
        "--gossip-key-file", str(keys[node.node_id])])


def _arbiter(topic: str, node_ids: Sequence[int]) -> int:
    """The top rendezvous rank of the name over the brokers
    (brokers/dsbs_broker/gossip/creation.py)."""
    from brokers.dsbs_broker.tables.replica_placement import rendezvous_order

    return rendezvous_order(topic, node_ids)[0]


DSBS = Architecture(
    name="dsbs",
    summary="every broker keeps its own tables and gossips over UDP (SWIM)",
    labels=Labels(display_name="DSBS", short_name="DSBS", color="#DD8452", order=1,
                  baseline=False, cost_column="coord_messages", cost_label="gossip packets"),
    options=DsbsOptions,
    command=_command,
    counters="brokers.dsbs_broker.counters:DsbsCounters",
    coordination=Coordination(messages="coordinator:gossip_packets_out",
                              bytes="coordinator:gossip_bytes_out"),
    arbiter=_arbiter,
    legacy_keys={"gossip_preset": "gossip_preset"},
)
