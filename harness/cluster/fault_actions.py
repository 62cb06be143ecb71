"""The fault vocabulary: one name per thing that can go wrong, and what it does to a cluster.

Used by ``twinbench fault`` (through the cluster's control socket,
harness/cluster/control_socket.py) and by fault workloads (harness/studies/faults/session.py), so a
fault means the same thing in both:

==================  =========  ==========================================================
action              target     effect
==================  =========  ==========================================================
kill                broker     SIGKILL the broker process (a crash; data on disk stays)
pause               broker     SIGSTOP it: sockets open, nothing answered (GC pause, frozen VM)
resume              broker     SIGCONT a paused broker
restart             broker     start it again on the same id, address and data directory
partition           broker     take its network link down (needs network netns)
heal                broker     bring the link back up
==================  =========  ==========================================================

and every service's own actions (harness/services: ZooKeeper's stop-zookeeper,
start-zookeeper [server], kill-zookeeper server), which apply to the architectures whose
registry entry has that service.

Each action has an opener/closer relation (kill/restart, pause/resume, partition/heal,
stop/start-zookeeper, kill/start-zookeeper) that workload validation and ``repair`` rely on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brokers.core.errors import UserError
from harness import services

if TYPE_CHECKING:  # the vocabulary is read by workload validation, which starts nothing
    from harness.cluster.running import ProcessCluster


@dataclass(frozen=True)
class Action:
    name: str
    # broker | service: what the action is applied to.
    target: str
    # The action that undoes this one (None for the undoing actions themselves).
    undo: str | None
    # The service it acts on (a name in harness/services), or None for a broker fault: it
    # applies to an architecture whose registry entry has that service.
    service: str | None
    # Needs brokers in network namespaces.
    needs_netns: bool
    # What the answer line says, e.g. "killed" -> "killed=1".
    verb: str
    # A service action's server index: "no", "optional" or "required".
    server: str = "no"


def _service_actions() -> tuple[Action, ...]:
    return tuple(Action(a.name, "service", a.undo, svc.name, False, a.verb, a.server)
                 for svc in (services.get(n) for n in services.names()) for a in svc.actions)


ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("kill", "broker", "restart", None, False, "killed"),
    Action("pause", "broker", "resume", None, False, "paused"),
    Action("resume", "broker", None, None, False, "resumed"),
    Action("restart", "broker", None, None, False, "restarted"),
    Action("partition", "broker", "heal", None, True, "partitioned"),
    Action("heal", "broker", None, None, True, "healed"),
    *_service_actions(),
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
    assert a.service is not None
    if broker is not None:
        raise UserError(f"{name} acts on {a.service}, not on a broker")
    if a.server == "required" and server is None:
        raise UserError(f"{name} needs --server I (a server of the {a.service} ensemble)")
    if a.server == "no" and server is not None:
        raise UserError(f"{name} acts on every {a.service} server; drop --server")
    return f"{a.verb}={cluster.act_on_service(a.service, name, server)}"


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
