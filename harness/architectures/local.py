"""local: one broker on its own, with the core's single-node coordinator (LocalCoordinator:
no peer, no coordination store, no coordination traffic). What `twinbench broker` runs, as a
registry entry: the contract suite's single-node case, and the ceiling the twins' coordination
is measured against. Not part of the comparison (``--arch all`` leaves it out)."""

from __future__ import annotations

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
from harness.architectures.options import Options


@dataclass(frozen=True)
class LocalOptions(Options):
    """No knob of its own."""


def _command(launch: Launch) -> Callable[[Node], ProcessSpec]:
    return core_broker("brokers.core", launch.settings)


LOCAL = Architecture(
    name="local",
    summary="one broker with the single-node coordinator (no coordination at all)",
    labels=Labels(display_name="single node", short_name="LOCAL", color="#8C8C8C", order=90,
                  baseline=False, cost_column="coordination_ops",
                  cost_label="coordination messages"),
    options=LocalOptions,
    command=_command,
    counters="brokers.core.local_coordinator:LocalCounters",
    coordination=Coordination(messages=None),
    max_brokers=1,
    compared=False,
    replicates=False,
)
