"""The fault vocabulary: one name per thing that can go wrong, and what it does to a cluster.

Used by ``twinbench fault`` (through the cluster's control socket, harness/control.py) and by
fault workloads (harness/driver/faults.py), so a fault means the same thing in both:

==================  =========  ==========================================================
action              target     effect
==================  =========  ==========================================================
kill                broker     SIGKILL the broker process (a crash; data on disk stays)
pause               broker     SIGSTOP it: sockets open, nothing answered (GC pause, frozen VM)
resume              broker     SIGCONT a paused broker
restart             broker     start it again on the same id, address and data directory
partition           broker     take its network link down (needs network netns)
heal                broker     bring the link back up
stop-zookeeper      -          stop every ZooKeeper server
start-zookeeper     [server]   start ZooKeeper (every stopped server, or one)
kill-zookeeper      server     SIGKILL one server of the ensemble
==================  =========  ==========================================================

The ZooKeeper actions act on a service (``Action.service``): they apply to the architectures
whose registry entry has it (harness/architectures.py), zk's.

Each action has an opener/closer relation (kill/restart, pause/resume, partition/heal,
stop/start-zookeeper, kill/start-zookeeper) that workload validation and ``repair`` rely on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brokers.core.errors import UserError
from harness.architectures import ZOOKEEPER

if TYPE_CHECKING:  # the vocabulary is read by workload validation, which starts nothing
    from harness.cluster import ProcessCluster


@dataclass(frozen=True)
class Action:
    name: str
    # broker | server | zookeeper: what the action is applied to.
    target: str
    # The action that undoes this one (None for the undoing actions themselves).
    undo: str | None
    # The external service it acts on (ZOOKEEPER), or None for a broker fault: it applies to
    # an architecture whose registry entry has that service.
    service: str | None
    # Needs brokers in network namespaces.
    needs_netns: bool
    # What the answer line says, e.g. "killed" -> "killed=1".
    verb: str


ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("kill", "broker", "restart", None, False, "killed"),
    Action("pause", "broker", "resume", None, False, "paused"),
    Action("resume", "broker", None, None, False, "resumed"),
    Action("restart", "broker", None, None, False, "restarted"),
    Action("partition", "broker", "heal", None, True, "partitioned"),
    Action("heal", "broker", None, None, True, "healed"),
    Action("stop-zookeeper", "zookeeper", "start-zookeeper", ZOOKEEPER, False,
           "stopped_zookeeper"),
    Action("start-zookeeper", "zookeeper", None, ZOOKEEPER, False, "started_zookeeper"),
    Action("kill-zookeeper", "server", "start-zookeeper", ZOOKEEPER, False, "killed_zookeeper"),
)}
# Actions that end an outage another action began.
CLOSERS = {a.undo for a in ACTIONS.values() if a.undo}


def action(name: str) -> Action:
    try:
        return ACTIONS[name]
    except KeyError:
        raise UserError(f"unknown fault {name!r}; choose one of {', '.join(ACTIONS)}") from None


def apply(cluster: ProcessCluster, name: str, broker: int | None = None,
          server: int | None = None) -> str:
    """Inject one fault into ``cluster``; returns the answer line (``killed=1``). Raises
    UserError for a target that does not exist or a fault this cluster cannot take."""
    a = action(name)
    if a.target == "broker":
        if broker is None:
            raise UserError(f"{name} needs --broker N")
        node = broker
        operations: dict[str, Callable[[int], object]] = {
            "kill": cluster.kill_broker, "pause": cluster.pause_broker,
            "resume": cluster.resume_broker, "restart": cluster.restart_broker,
            "partition": cluster.isolate_broker, "heal": cluster.heal_broker}
        operations[name](node)
        return f"{a.verb}={node}"
    if name == "stop-zookeeper":
        cluster.stop_zookeeper()
        return f"{a.verb}=all"
    if name == "kill-zookeeper":
        if server is None:
            raise UserError("kill-zookeeper needs --server I (a server of the ensemble)")
        cluster.kill_zookeeper_server(server)
        return f"{a.verb}={server}"
    # start-zookeeper: one server, or every stopped one.
    if server is None:
        cluster.start_zookeeper()
        return f"{a.verb}=all"
    cluster.start_zookeeper_server(server)
    return f"{a.verb}={server}"


def handle(cluster: ProcessCluster, message: dict[str, Any]) -> str:
    """A control-socket request -> ``apply``; validates the request's shape."""
    name = message.get("action")
    if not isinstance(name, str):
        raise UserError("a fault request needs an action")
    broker, server = message.get("broker"), message.get("server")
    for key, value in (("broker", broker), ("server", server)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise UserError(f"--{key} must be an integer")
    return apply(cluster, name, broker, server)
