"""The shared-dir architecture's registry entry."""

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
from harness.architectures.options import Options, knob


@dataclass(frozen=True)
class SharedDirOptions(Options):
    # The directory's name under the cluster's root.
    directory: str = knob("shared", "the shared directory's name under the cluster's root")


def _command(launch: Launch) -> Callable[[Node], ProcessSpec]:
    options = launch.options
    assert isinstance(options, SharedDirOptions)
    shared = launch.root / options.directory
    return core_broker("tests.support.shared_dir_arch", launch.settings,
                       lambda node: ["--shared-dir", str(shared)])


SHARED_DIR = Architecture(
    name="shared-dir",
    summary="brokers coordinated through a directory they share (a test's plugin)",
    labels=Labels(display_name="shared directory", short_name="SHARED", color="#55A868",
                  order=5, baseline=False, cost_column="coord_messages",
                  cost_label="shared-directory reads and writes"),
    options=SharedDirOptions,
    command=_command,
    counters="brokers.core.local_coordinator:LocalCounters",
    coordination=Coordination(messages="coordinator:coordination_ops"),
    replicates=False,
)
