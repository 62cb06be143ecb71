"""From a hosts file to running processes: which hosts a command needs, the SSH fleet over
them, and each cluster's layout (broker i on broker host i mod n, one server of each service
per host of the service's role: one ZooKeeper server per zookeeper host)."""

from __future__ import annotations

from collections.abc import Sequence

from brokers.core.errors import UserError
from harness import architectures, services
from harness.cluster.layout import Layout
from harness.cluster.machines import Machine
from harness.hosts import Host, HostsFile, check_roles
from harness.remote.ssh import SshFleet


def needed_hosts(hosts: HostsFile, arches: Sequence[str], clients: bool,
                 brokers: bool = True) -> list[Host]:
    """The hosts whose roles the command uses, after the roles check (one line). ``brokers``
    False: a cluster twinbench does not start (--bootstrap), driven from the client hosts."""
    needed = {name: services.get(name).quorum for a in arches if brokers
              for name in architectures.get(a).services}
    check_roles(hosts, services=needed, clients=clients, brokers=brokers)
    roles = (({"broker"} if brokers else set()) | set(needed)
             | ({"client"} if clients else set()))
    return [h for h in hosts.hosts if roles & set(h.roles)]


def open_fleet(hosts: HostsFile, arches: Sequence[str], clients: bool,
               brokers: bool = True) -> SshFleet:
    """Logins to every host the command needs, each checked as `twinbench hosts check` does."""
    return SshFleet(hosts).open(needed_hosts(hosts, arches, clients, brokers))


def cluster_layout(fleet: SshFleet, arch: str) -> Layout:
    """Where ``arch``'s cluster runs on the fleet's hosts."""
    def machines(role: str) -> tuple[Machine, ...]:
        return tuple(fleet.machines[h.name] for h in fleet.hosts.with_role(role))

    brokers = machines("broker")
    if not brokers:
        raise UserError(f"{fleet.hosts.path.name}: no host has the broker role")
    return Layout(brokers=brokers, services={
        name: machines(name) for name in architectures.get(arch).services})
