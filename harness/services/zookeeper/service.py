"""ZooKeeper as a service: options, start (provision), counters (mntr), faults, state."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brokers.core.errors import UserError
from harness.architectures.options import Options, knob
from harness.cluster.machines import Machine
from harness.cluster.processes import ChildProcess
from harness.services.api import RunningService, Service, ServiceAction, ServicePlace
from harness.services.zookeeper.config import ZooKeeperConfig
from harness.services.zookeeper.ensemble import ZooKeeperEnsemble
from harness.services.zookeeper.provision import ZooKeeperHandle, provision, provision_on

NAME = "zookeeper"


@dataclass(frozen=True)
class ZooKeeperOptions(Options):
    # Servers of the ensemble started for a cluster: 1 (standalone) or 3.
    nodes: int = knob(1, "servers of the ensemble started for the cluster (1 or 3)",
                      choices=(1, 3))
    # An existing ZooKeeper (HOST:PORT[,...]) to use instead of starting one; also the
    # environment's ZOOKEEPER_CONNECT.
    connect: str | None = knob(None, "use this ZooKeeper (HOST:PORT[,...]) instead of "
                               "starting one (also ZOOKEEPER_CONNECT)")

    def given(self) -> str | None:
        return self.connect or os.environ.get("ZOOKEEPER_CONNECT") or None


@dataclass
class RunningZooKeeper:
    handle: ZooKeeperHandle

    @property
    def kind(self) -> str:
        return self.handle.kind

    @property
    def endpoint(self) -> str:
        return self.handle.connect_string

    @property
    def version(self) -> str | None:
        return self.handle.version

    def processes(self) -> tuple[ChildProcess, ...]:
        return self.handle.processes

    def counters(self) -> dict[str, int] | None:
        # mntr's names without their zk_ prefix: packets_received is every request served,
        # the client library's pings included.
        return {k.removeprefix("zk_"): v for k, v in self.handle.request_counters().items()}

    def _ensemble(self, what: str) -> ZooKeeperEnsemble:
        if self.handle.ensemble is None:
            raise UserError(f"{what}: this cluster uses a ZooKeeper it did not start")
        return self.handle.ensemble

    def act(self, action: str, server: int | None) -> str:
        ensemble = self._ensemble(action)
        if server is not None and not 0 <= server < len(ensemble.endpoints):
            raise UserError(f"no ZooKeeper server {server} (servers: 0.."
                            f"{len(ensemble.endpoints) - 1})")
        if action == "stop-zookeeper":
            ensemble.stop()
        elif action == "kill-zookeeper":
            assert server is not None
            ensemble.kill_member(server)
        elif server is None:
            # Every server at once: one member of an ensemble cannot serve until a quorum is
            # back.
            ensemble.start()
        elif not ensemble.member_running(server):
            ensemble.start_member(server)
        return "all" if server is None else str(server)

    def running(self) -> list[bool]:
        ensemble = self.handle.ensemble
        if ensemble is None:
            return []
        return [ensemble.member_running(i) for i in range(len(ensemble.endpoints))]

    def repair(self) -> bool:
        if all(self.running()):
            return False
        self._ensemble("start-zookeeper").start()
        return True

    def log_paths(self, machine: Machine) -> tuple[Path, ...]:
        return self.handle.log_paths(machine)

    def state(self) -> dict[str, Any]:
        h = self.handle
        return {"connect": h.connect_string, "kind": h.kind, "pids": list(h.pids),
                "running": self.running()}

    def stop(self) -> None:
        self.handle.stop()


def _start(options: Options, place: ServicePlace) -> RunningService:
    assert isinstance(options, ZooKeeperOptions)
    if place.machines:
        return RunningZooKeeper(provision_on(place.machines, place.roots))
    cfg = ZooKeeperConfig(host=place.host) if place.host else None
    return RunningZooKeeper(provision(options.given(), options.nodes, place.root, cfg))


def _check(options: Options, network: str, remote: bool) -> None:
    assert isinstance(options, ZooKeeperOptions)
    if options.connect and network == "netns":
        raise UserError("--network netns starts its own ZooKeeper on the namespaces' bridge; "
                        "drop zookeeper.connect")
    if options.connect and remote:
        raise UserError("zookeeper.connect: with --hosts, ZooKeeper runs on the zookeeper hosts")


ZOOKEEPER = Service(
    name=NAME,
    summary="a real Apache ZooKeeper (or ensemble): a given address, local jars or a container",
    options=ZooKeeperOptions,
    start=_start,
    size=lambda options: options.nodes if isinstance(options, ZooKeeperOptions) else 1,
    actions=(
        ServiceAction("stop-zookeeper", "start-zookeeper", "no", "stopped_zookeeper"),
        ServiceAction("start-zookeeper", None, "optional", "started_zookeeper"),
        ServiceAction("kill-zookeeper", "start-zookeeper", "required", "killed_zookeeper"),
    ),
    check=_check,
    quorum=True,
    legacy_keys={"zk_nodes": "nodes"},
)
