"""The fault schedule of a seed: what the nemesis does to which broker, and when (pure).

A schedule is drawn step by step from ``random.Random(seed)`` against a model of the cluster's
state, so every step is one that can be applied (a killed broker is restarted, not paused) and
the same seed always gives the same steps. Faults compose and overlap: a broker may be paused
while another is cut off one way from a third; nothing keeps a majority up (an architecture
that cannot serve then must say so, not lose data). The last step heals everything.

Operations (``Step.op``):

* ``kill`` / ``restart``: SIGKILL, and a start from the broker's files later.
* ``pause`` / ``resume``: SIGSTOP and SIGCONT (a long GC pause, a frozen VM).
* ``isolate`` / ``heal``: the broker's link down: cut off from everyone, both ways.
* ``cut`` / ``uncut``: packets from ``target`` to ``other`` dropped (one way only).

A third of the faults aim at a partition's leader (``target`` ``LEADER``: whoever leads
partition 0 when the step runs, resolved by the run and logged), as Jepsen's nemeses target
leaders: a random broker is a follower two times out of three, and the schedules that lose
data (a leader paused while the others elect, then resumed) need the leader. Such a fault
lasts ``lasts_s`` (0.5 to 6 s, drawn with the step), then the run undoes it. The model does
not know whom they hit, so the run checks every step against the cluster's actual state
(a step that cannot apply is logged as skipped) and repairs everything at the end.

The transactions workload (``transactions.py``) aims those faults at the transaction
coordinator as well (``target`` ``COORDINATOR``: whichever broker FindCoordinator names for the
producer's or the copying worker's transactional id, in turn, when the step runs):
``generate(..., aims=(LEADER, COORDINATOR))`` draws one of the two for each. With a
transaction ending every few tens of milliseconds, a pause or a one-way cut of a few seconds
lands between AddPartitionsToTxn and EndTxn, and between PREPARE and the markers, again and
again.

Clock steps are not among them: no architecture's safety reads the wall clock (DSBS orders
committed offsets by Lamport stamps), and one machine has one clock for every process.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

OPS = ("kill", "restart", "pause", "resume", "isolate", "heal", "cut", "uncut")
LEADER = -1  # ``Step.target``: the leader of partition 0 when the step runs
COORDINATOR = -2  # ``Step.target``: the transaction coordinator when the step runs
_AIMED = {LEADER: "leader", COORDINATOR: "coordinator"}
# Faults that may aim at the leader, and the share of steps that do.
AT_LEADER = ("kill", "pause", "isolate", "cut")
LEADER_SHARE = 1 / 3


@dataclass(frozen=True)
class Step:
    at_s: float  # seconds after the load started
    op: str
    target: int
    other: int = -1  # cut/uncut: the broker the packets no longer reach
    lasts_s: float = 0.0  # a fault at the leader: undone this long after it began

    def __str__(self) -> str:
        tail = f"->{self.other}" if self.other >= 0 else ""
        who = _AIMED.get(self.target, str(self.target))
        lasts = f" for {self.lasts_s:.1f}s" if self.lasts_s else ""
        return f"{self.at_s:.1f}s {self.op} {who}{tail}{lasts}"


@dataclass
class _Model:
    killed: set[int] = field(default_factory=set)
    paused: set[int] = field(default_factory=set)
    isolated: set[int] = field(default_factory=set)
    cuts: set[tuple[int, int]] = field(default_factory=set)

    def choices(self, brokers: int) -> list[Step]:
        """Every step that can be applied now (at time 0; the caller sets it)."""
        out: list[Step] = []
        for b in range(brokers):
            if b in self.killed:
                # A broker starts only where it can reach what it starts from (a zk broker
                # gives up without ZooKeeper): restarted once its link is back.
                out.append(Step(0, "heal" if b in self.isolated else "restart", b))
                continue
            out.append(Step(0, "resume" if b in self.paused else "pause", b))
            out.append(Step(0, "kill", b))
            out.append(Step(0, "heal" if b in self.isolated else "isolate", b))
            for o in range(brokers):
                if o != b:
                    out.append(Step(0, "uncut" if (b, o) in self.cuts else "cut", b, o))
        return out

    def apply(self, s: Step) -> None:
        if s.op == "kill":
            self.killed.add(s.target)
            self.paused.discard(s.target)
        elif s.op == "restart":
            self.killed.discard(s.target)
        elif s.op == "pause":
            self.paused.add(s.target)
        elif s.op == "resume":
            self.paused.discard(s.target)
        elif s.op == "isolate":
            self.isolated.add(s.target)
        elif s.op == "heal":
            self.isolated.discard(s.target)
        elif s.op == "cut":
            self.cuts.add((s.target, s.other))
        elif s.op == "uncut":
            self.cuts.discard((s.target, s.other))

    def undo(self, at_s: float) -> list[Step]:
        """The steps that bring every broker back and every link up."""
        steps = [Step(at_s, "resume", b) for b in sorted(self.paused)]
        steps += [Step(at_s, "heal", b) for b in sorted(self.isolated)]
        steps += [Step(at_s, "uncut", a, b) for a, b in sorted(self.cuts)]
        steps += [Step(at_s, "restart", b) for b in sorted(self.killed)]
        return steps


def generate(seed: int, brokers: int, duration_s: float, *, mean_gap_s: float = 2.5,
             first_s: float = 3.0, aims: tuple[int, ...] = (LEADER,)) -> list[Step]:
    """The steps of ``seed`` over ``duration_s`` seconds of load, for ``brokers`` brokers;
    the last steps (at ``duration_s``) undo what the model knows is in force (the run
    repairs what aimed steps did). ``aims``: whom the aimed faults hit (``LEADER``,
    ``COORDINATOR``), one drawn per fault."""
    if brokers < 1 or duration_s <= 0 or mean_gap_s <= 0:
        raise ValueError("a schedule needs brokers, a duration and a gap above 0")
    if not aims or any(a not in _AIMED for a in aims):
        raise ValueError(f"aims: choose among {sorted(_AIMED)}")
    rng = random.Random(seed)
    model = _Model()
    steps: list[Step] = []
    t = first_s
    while t < duration_s:
        if brokers > 1 and rng.random() < LEADER_SHARE:
            op = rng.choice(AT_LEADER)
            other = rng.randrange(brokers) if op == "cut" else -1
            # One aim draws nothing: the queue workload's seeds keep their schedules.
            aim = aims[0] if len(aims) == 1 else rng.choice(aims)
            steps.append(Step(round(t, 1), op, aim, other,
                              round(rng.uniform(0.5, 6.0), 1)))
            t += rng.expovariate(1.0 / mean_gap_s)
            continue
        options = model.choices(brokers)
        # Undoing is as likely as doing: faults overlap without piling up for ever.
        weights = [1.0 if s.op in ("restart", "resume", "heal", "uncut") else
                   (0.5 if s.op in ("cut",) else 1.0 / max(brokers - 1, 1)) for s in options]
        pick = rng.choices(options, weights)[0]
        step = Step(round(t, 1), pick.op, pick.target, pick.other)
        model.apply(step)
        steps.append(step)
        t += rng.expovariate(1.0 / mean_gap_s)
    steps += model.undo(round(duration_s, 1))
    return steps


def parse(text: str) -> list[Step]:
    """Steps written as ``str(Step)`` does, comma-separated ("3.0s kill 0, 5.1s cut 2->1,
    7.0s pause leader for 2.5s, 9.2s cut coordinator->0 for 1.0s"): a schedule printed by a
    run, replayed as it was."""
    named = {v: k for k, v in _AIMED.items()}
    steps = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            head, _, lasts = part.partition(" for ")
            at, op, who = head.split()
            target, _, other = who.partition("->")
            step = Step(float(at.removesuffix("s")), op,
                        named[target] if target in named else int(target),
                        int(other) if other else -1,
                        float(lasts.removesuffix("s")) if lasts else 0.0)
        except ValueError:
            raise ValueError(f"not a step: {part!r} (expected like '3.0s kill 0')") from None
        if step.op not in OPS or (step.op in ("cut", "uncut")) != (step.other >= 0):
            raise ValueError(f"not a step: {part!r}")
        steps.append(step)
    return steps
