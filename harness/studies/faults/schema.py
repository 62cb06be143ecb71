"""The ``faults`` block of a workload: fault cases, their schedules, the paced load."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness import services
from harness.cluster.fault_actions import ACTIONS
from harness.schema import NAME_RE, Ctx, defaults, given, keys, required

# The scenario of every session of a fault workload.
SCENARIO = "faults"
FAULT_TARGET_RE = re.compile(r"leader:(\d+)|controller|coordinator|voter|(\d+)")


@dataclass(frozen=True)
class FaultStep:
    # Seconds after the production phase starts.
    at_s: float
    # A harness.cluster.fault_actions action name: a broker's (kill, pause, resume, restart,
    # partition, heal) or a service's (stop-zookeeper, start-zookeeper, kill-zookeeper).
    action: str
    # Broker actions: "leader:P" (P's leader when the step runs), "controller" (KRaft: the
    # quorum's active controller), "coordinator" (of the session's probe group,
    # harness/studies/faults/session.py), "voter" (a quorum voter that is not the active
    # controller; architectures with a quorum only) or a node id; resolved once per session
    # and remembered, so a later step naming the same target means the same broker.
    broker: str | None = None
    # A service action's server: its index in the service's ensemble (kill-zookeeper ...).
    server: int | None = None

    @property
    def target(self) -> str:
        """The broker as written, or the service (``zookeeper``, ``zookeeper:1``)."""
        if self.broker is not None:
            return self.broker
        service = ACTIONS[self.action].service
        return f"{service}" if self.server is None else f"{service}:{self.server}"


@dataclass(frozen=True)
class FaultCase:
    # [a-z0-9_-]+; names the case in faults.csv and the figures.
    name: str
    steps: tuple[FaultStep, ...]

    @property
    def services(self) -> frozenset[str]:
        """The services the case acts on (ZooKeeper): it runs only on architectures that have
        them, and has no counterpart on the others."""
        return frozenset(service for s in self.steps if (service := ACTIONS[s.action].service))

    @property
    def targets_controller(self) -> bool:
        """It acts on the controller as a broker: only where the controller is one."""
        return any(s.broker == "controller" for s in self.steps)

    @property
    def needs_quorum(self) -> bool:
        """It acts on a quorum voter: it runs only on architectures with a quorum."""
        return any(s.broker == "voter" for s in self.steps)


@dataclass(frozen=True)
class FaultPlan:
    # Target production rate, records/s, all producers together (paced, so a fault shows as
    # a dip against a flat line, and the machine keeps CPU for timers and detection).
    rate: float
    # Length of the production phase, in which the schedule runs.
    duration_s: float
    # After production, how long consumers may take to read what was acknowledged.
    drain_s: float = field(default=60.0, kw_only=True)
    # Every broker's Metadata is polled this often (detection and rejoin resolution).
    probe_ms: int = field(default=50, kw_only=True)
    # Width of the timeline's buckets.
    bucket_ms: int = field(default=100, kw_only=True)
    cases: tuple[FaultCase, ...]


_FAULT_KEYS = keys(FaultPlan)
# A file calls a case's steps its schedule.
_CASE_KEYS = keys(FaultCase) - {"steps"} | {"schedule"}
_STEP_KEYS = keys(FaultStep)
_FAULT_DEFAULTS = defaults(FaultPlan)


def _fault_step(ctx: Ctx, where: str, raw: Any, duration_s: float, brokers: int,
                partitions: int, servers: Mapping[str, int], network: str) -> FaultStep:
    if not isinstance(raw, dict):
        raise ctx.fail(where, f"must be a mapping with at_s and action, got {raw!r}")
    ctx.check_keys(raw, _STEP_KEYS, where)
    for key in required(FaultStep):
        if key not in raw:
            raise ctx.fail(f"{where}.{key}", "is missing")
    at = raw["at_s"]
    if isinstance(at, bool) or not isinstance(at, int | float) or not 0 <= at < duration_s:
        raise ctx.fail(f"{where}.at_s", f"must be a time within [0, {duration_s:g}) s (the "
                       f"production phase), got {at!r}")
    action = raw["action"]
    if action not in ACTIONS:
        raise ctx.fail(f"{where}.action", f"unknown fault {action!r}; choose one of "
                       f"{', '.join(ACTIONS)}")
    a = ACTIONS[action]
    broker, server = raw.get("broker"), raw.get("server")
    if a.target == "broker":
        if broker is None:
            raise ctx.fail(f"{where}.broker", f"{action} needs a broker: leader:P, "
                           "controller, voter, coordinator or a node id")
        text = str(broker)
        m = FAULT_TARGET_RE.fullmatch(text)
        if isinstance(broker, bool) or m is None:
            raise ctx.fail(f"{where}.broker", f"must be leader:P, controller, voter, "
                           f"coordinator or a node id, got {broker!r}")
        if m.group(1) is not None and int(m.group(1)) >= partitions:
            raise ctx.fail(f"{where}.broker", f"{text}: the topic has partitions 0.."
                           f"{partitions - 1}")
        if m.group(2) is not None and int(m.group(2)) >= brokers:
            raise ctx.fail(f"{where}.broker", f"no broker {text} (brokers 0..{brokers - 1})")
        if server is not None:
            raise ctx.fail(f"{where}.server", f"{action} takes a broker, not a server")
        if a.needs_netns and network != "netns":
            raise ctx.fail(f"{where}.action", f"{action} needs network: netns (brokers in "
                           "network namespaces)")
        return FaultStep(float(at), action, broker=text)
    assert a.service is not None
    if broker is not None:
        raise ctx.fail(f"{where}.broker", f"{action} acts on {a.service}, not on a broker")
    if a.server == "required" and server is None:
        raise ctx.fail(f"{where}.server", f"{action} needs the server index")
    if a.server == "no" and server is not None:
        raise ctx.fail(f"{where}.server", f"{action} acts on every {a.service} server")
    if server is not None:
        ctx.integer(f"{where}.server", server, 0, servers[a.service] - 1)
    return FaultStep(float(at), action, server=server)


def _fault_case(ctx: Ctx, where: str, raw: Any, **limits: Any) -> FaultCase:
    if not isinstance(raw, dict):
        raise ctx.fail(where, f"must be a mapping with name and schedule, got {raw!r}")
    ctx.check_keys(raw, _CASE_KEYS, where)
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise ctx.fail(f"{where}.name", f"must match [a-z0-9][a-z0-9_-]*, got {name!r}")
    schedule = raw.get("schedule")
    if not isinstance(schedule, list) or not schedule:
        raise ctx.fail(f"{where}.schedule", "must be a non-empty list of steps")
    steps = [_fault_step(ctx, f"{where}.schedule[{i}]", s, **limits)
             for i, s in enumerate(schedule)]
    if [s.at_s for s in steps] != sorted(s.at_s for s in steps):
        raise ctx.fail(f"{where}.schedule", "steps must be in time order")
    # Every undoing step needs its fault first (resume what was paused, heal what was cut off).
    open_faults: dict[str, str] = {}
    for i, s in enumerate(steps):
        a = ACTIONS[s.action]
        key = a.service if a.service is not None else s.target
        if a.undo is not None:
            open_faults[key] = s.action
        elif s.action != "restart" or key in open_faults:
            opener = open_faults.pop(key, None)
            if opener is None or ACTIONS[opener].undo != s.action:
                raise ctx.fail(f"{where}.schedule[{i}]", f"{s.action} of {s.target} without "
                               "the fault it undoes before it")
    if not any(ACTIONS[s.action].undo or s.action == "restart" for s in steps):
        openers = [a.name for a in ACTIONS.values() if a.undo] + ["restart"]
        raise ctx.fail(f"{where}.schedule", f"injects no fault ({', '.join(openers)})")
    return FaultCase(name, tuple(steps))


def parse(ctx: Ctx, data: Mapping[str, Any], core: Mapping[str, Any]) -> FaultPlan | None:
    raw = data.get("faults")
    if raw is None:
        return None
    if data.get("metadata") is not None:
        raise ctx.fail("metadata", "a workload runs fault sessions or metadata sessions, "
                       "not both")
    if not isinstance(raw, dict):
        raise ctx.fail("faults", "must be a mapping with rate, duration_s and cases")
    ctx.check_keys(raw, _FAULT_KEYS, "faults")
    for key in required(FaultPlan):
        if key not in raw:
            raise ctx.fail(f"faults.{key}", "is missing")
    rate = ctx.number("faults.rate", raw["rate"])
    duration = ctx.number("faults.duration_s", raw["duration_s"])
    drain = ctx.number("faults.drain_s", given(raw, "drain_s", _FAULT_DEFAULTS))
    probe = ctx.integer("faults.probe_ms", given(raw, "probe_ms", _FAULT_DEFAULTS), 5, 10_000)
    bucket = ctx.integer("faults.bucket_ms", given(raw, "bucket_ms", _FAULT_DEFAULTS), 10,
                         10_000)
    cases = raw["cases"]
    if not isinstance(cases, list) or not cases:
        raise ctx.fail("faults.cases", "must be a non-empty list of {name, schedule}")
    options = core["options"]
    # A service action's server index is bounded by the service's size (its options).
    servers = {name: services.get(name).size(
        services.get(name).options.parse(options.get(name), name))
        for name in services.names()}
    parsed = [_fault_case(ctx, f"faults.cases[{i}]", c, duration_s=duration,
                          brokers=core["brokers"], partitions=core["partitions"],
                          servers=servers, network=core["network"])
              for i, c in enumerate(cases)]
    names = [c.name for c in parsed]
    for n in names:
        if names.count(n) > 1:
            raise ctx.fail("faults.cases", f"case {n!r} is listed twice")
    return FaultPlan(rate, duration, drain_s=drain, probe_ms=probe, bucket_ms=bucket,
                     cases=tuple(parsed))
