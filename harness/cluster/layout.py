"""Layout: which machine each process of a cluster runs on (harness/cluster/machines.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness.cluster.machines import LOCAL, Machine

if TYPE_CHECKING:  # imported when a cluster needs them: netns needs root
    pass


@dataclass(frozen=True)
class Layout:
    """Which machine each process of a cluster runs on (harness/cluster/machines.py)."""

    # Broker i (standby brokers included) runs on brokers[i % len(brokers)].
    brokers: tuple[Machine, ...] = (LOCAL,)
    # Per service, one server per machine (the hosts of the service's role; an ensemble when
    # several); a service absent here is started by its plugin here (ZooKeeper: an address,
    # local jars, a container).
    services: Mapping[str, tuple[Machine, ...]] = field(default_factory=dict)

    def broker(self, node_id: int) -> Machine:
        return self.brokers[node_id % len(self.brokers)]

    @property
    def local(self) -> bool:
        return all(m.local for m in (*self.brokers, *self._service_machines()))

    def _service_machines(self) -> list[Machine]:
        return [m for machines in self.services.values() for m in machines]

    def machines(self) -> list[Machine]:
        """Every machine of the layout, once each."""
        seen: dict[str, Machine] = {}
        for m in (*self._service_machines(), *self.brokers):
            seen.setdefault(m.name, m)
        return list(seen.values())


LOCAL_LAYOUT = Layout()
