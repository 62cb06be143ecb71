"""Services an architecture's cluster starts before its brokers, by name.

Layout:
- ``api.py``        Service (an entry: options, start, size, faults), RunningService,
                    ServiceAction, ServicePlace
- ``zookeeper/``    a real Apache ZooKeeper: provisioning (an address, local jars, a
                    container), the ensemble, four-letter words; ``service.py`` its entry
- ``raft_controllers.py``  the Raft twin's dedicated controllers (KRaft's
                    process.roles=controller): the quorum's membership, processes, faults
"""

from __future__ import annotations

import importlib

from brokers.core.errors import UserError
from harness.services.api import Service

# Every service by name -> "module:attribute" of its entry, imported when first used.
REGISTRY: dict[str, str] = {
    "zookeeper": "harness.services.zookeeper.service:ZOOKEEPER",
    "raft-controllers": "harness.services.raft_controllers:RAFT_CONTROLLERS",
}


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def get(name: str) -> Service:
    try:
        target = REGISTRY[name]
    except KeyError:
        raise UserError(f"unknown service {name!r}; known: {', '.join(REGISTRY)}") from None
    module, _, attr = target.partition(":")
    service: Service = getattr(importlib.import_module(module), attr)
    return service
