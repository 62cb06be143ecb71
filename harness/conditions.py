"""What a measurement depends on besides the code: machine conditions and `twinbench tune`.

A broker round trip on this kind of machine is a handful of cross-CPU wake-ups (client on one
CPU, brokers on the other, ZooKeeper beside them). On a virtual machine whose idle vCPU halts
at once, every such wake-up is an inter-processor interrupt and a VM exit: on the 2-core
development VM that cost more than the brokers' own work, halved the twins' throughput and
made repetitions of one cell spread by 30% (docs/architecture.md, "Measuring on a small VM").
So a run records the conditions it ran under, and `twinbench tune` sets the few knobs that
govern them, the way `pyperf system tune` does for CPU frequency:

* ``Knob``: one setting (sysfs files, the value we recommend, why); ``KNOBS`` lists them.
  Only knobs whose files exist on this machine apply; the others are reported as absent.
* ``read_knobs`` / ``apply`` / ``reset`` / ``restore``: read the current values; set the
  recommended ones (root), keeping what was there in a state file so ``reset`` restores it
  exactly; ``restore`` undoes one ``apply`` (what `twinbench run --tune` does on its way out).
* ``snapshot``: a self-describing snapshot for manifests (knobs, load average, idle driver,
  kernel, hypervisor).
* ``CpuMeter`` / ``BackgroundMeter``: the whole machine's busy and steal time between two
  readings, less the run's own processes' CPU, so the driver can say how much CPU *other*
  processes took during a session (coordination.csv's ``background_cpu`` and ``steal``).

Pure parsing is separated from file access (``parse_proc_stat``, ``parse_loadavg``) and every
reader takes a root directory, so the tests read a fake tree instead of this machine's.
"""

from __future__ import annotations

import contextlib
import glob
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brokers.core.errors import UserError

STATE_VERSION = 1


@dataclass(frozen=True)
class Knob:
    name: str
    # Glob patterns under the root ("/"); every matching file is set (one per CPU for cpufreq).
    patterns: tuple[str, ...]
    recommended: str
    why: str


KNOBS: tuple[Knob, ...] = (
    Knob("guest_halt_poll_ns", ("sys/module/haltpoll/parameters/guest_halt_poll_ns",),
         "200000",
         # The cpuidle-haltpoll driver's poll budget: an idle vCPU spins this long before it
         # halts. Wake-ups inside the window need no IPI and no VM exit (the waker sees the
         # polling flag). 0, the default of some images, makes every wake-up a VM exit.
         "an idle vCPU polls 200 us before halting, so cross-CPU wake-ups cost no VM exit"),
    Knob("cpufreq_governor", ("sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor",),
         "performance",
         # Frequency scaling ramps up under load and down between sessions: a session's speed
         # would depend on what ran before it.
         "every CPU at its nominal frequency, not ramping between sessions"),
)


def _files(knob: Knob, root: Path) -> list[Path]:
    out: list[Path] = []
    for pattern in knob.patterns:
        out += [Path(p) for p in sorted(glob.glob(str(root / pattern)))]
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return None


def read_knobs(root: Path = Path("/")) -> dict[str, str | None]:
    """Each knob's current value (None: absent on this machine; values of several files that
    differ are joined with ',')."""
    out: dict[str, str | None] = {}
    for knob in KNOBS:
        values = [v for v in (_read(p) for p in _files(knob, root)) if v is not None]
        out[knob.name] = ",".join(sorted(set(values))) if values else None
    return out


def tuned(values: Mapping[str, str | None]) -> bool:
    """Every knob present on this machine has its recommended value."""
    return all(v is None or v == k.recommended for k in KNOBS
               for v in [values.get(k.name)])


def default_state_file() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return Path(base) / f"twinbench-{os.getuid()}" / "tune.json"


def apply(root: Path = Path("/"), state_file: Path | None = None) -> dict[str, str]:
    """Set every present knob to its recommended value; returns {file: previous value} of what
    changed. The previous values are merged into ``state_file`` (first value wins, so applying
    twice still resets to what the machine had). Raises UserError when a file cannot be
    written (not root)."""
    state_file = state_file or default_state_file()
    saved = _load_state(state_file)
    changed: dict[str, str] = {}
    for knob in KNOBS:
        for path in _files(knob, root):
            old = _read(path)
            if old is None or old == knob.recommended:
                continue
            try:
                path.write_text(knob.recommended + "\n", encoding="utf-8")
            except OSError as exc:
                _save_state(state_file, saved)
                raise UserError(f"cannot set {knob.name} ({path}): {exc.strerror or exc}; "
                                "`twinbench tune apply` needs root") from None
            changed[str(path)] = old
            saved.setdefault(str(path), old)
    _save_state(state_file, saved)
    return changed


def reset(state_file: Path | None = None) -> dict[str, str]:
    """Write back every value ``apply`` replaced; returns {file: value written}."""
    state_file = state_file or default_state_file()
    saved = _load_state(state_file)
    restored: dict[str, str] = {}
    failed: list[str] = []
    for path, value in saved.items():
        try:
            Path(path).write_text(value + "\n", encoding="utf-8")
            restored[path] = value
        except OSError:
            failed.append(path)
    if failed:
        _save_state(state_file, {p: saved[p] for p in failed})
        raise UserError(f"could not restore {', '.join(failed)} (needs root); kept in "
                        f"{state_file}")
    state_file.unlink(missing_ok=True)
    return restored


def restore(changed: Mapping[str, str], state_file: Path | None = None) -> None:
    """Undo one ``apply`` (``changed`` is what it returned): write the previous values back
    and forget them in the state file, leaving anything an earlier ``apply`` saved. Never
    raises: a run restoring on its way out reports what it could not restore."""
    state_file = state_file or default_state_file()
    failed = []
    for path, value in changed.items():
        try:
            Path(path).write_text(value + "\n", encoding="utf-8")
        except OSError:
            failed.append(path)
    try:
        saved = _load_state(state_file)
        _save_state(state_file, {p: v for p, v in saved.items()
                                 if p not in changed or p in failed})
    except (UserError, OSError):
        pass
    if failed:
        print(f"twinbench: warning: could not restore {', '.join(failed)}; "
              "`twinbench tune reset` (root) restores it", file=sys.stderr)


@contextlib.contextmanager
def tuning(enabled: bool) -> Iterator[dict[str, str]]:
    """``--tune`` for a command's duration: the recommended knobs set on entry and restored on
    exit, yielding {file: value before} of what changed. A machine where they cannot be set
    (not root) runs as it is, with one warning line; its manifest's conditions say so."""
    changed: dict[str, str] = {}
    if enabled:
        try:
            changed = apply()
        except UserError as exc:
            print(f"twinbench: warning: --tune: {exc}; running untuned", file=sys.stderr)
        for path, old in changed.items():
            print(f"twinbench: tuned {path} (was {old}) for this run", file=sys.stderr)
    try:
        yield changed
    finally:
        if changed:
            restore(changed)


def _load_state(state_file: Path) -> dict[str, str]:
    try:
        data = json.loads(state_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UserError(f"{state_file}: unreadable tune state ({exc}); remove it") from None
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION or not isinstance(
            data.get("saved"), dict):
        raise UserError(f"{state_file}: not a twinbench tune state file; remove it")
    return {str(k): str(v) for k, v in data["saved"].items()}


def _save_state(state_file: Path, saved: Mapping[str, str]) -> None:
    if not saved:
        state_file.unlink(missing_ok=True)
        return
    state_file.parent.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps({"version": STATE_VERSION, "saved": dict(saved)},
                                     indent=2) + "\n", encoding="utf-8")


# --- conditions ---------------------------------------------------------------------------------


def parse_loadavg(text: str) -> list[float]:
    return [float(x) for x in text.split()[:3]]


def _cpuinfo_flags(root: Path) -> set[str]:
    text = _read(root / "proc/cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def snapshot(root: Path = Path("/")) -> dict[str, Any]:
    """What the run's timing depends on, as found now (manifest ``host.conditions``)."""
    knobs = read_knobs(root)
    load = _read(root / "proc/loadavg")
    idle = root / "sys/devices/system/cpu/cpuidle"
    return {
        "knobs": knobs,
        "tuned": tuned(knobs),
        "loadavg": parse_loadavg(load) if load else None,
        "cpuidle_driver": _read(idle / "current_driver"),
        "cpuidle_governor": _read(idle / "current_governor_ro") or _read(
            idle / "current_governor"),
        "virtual_machine": "hypervisor" in _cpuinfo_flags(root),
        "kernel": platform.release(),
        "kernel_build": platform.version(),
    }


def describe(values: Mapping[str, str | None]) -> list[str]:
    """One line per knob for `twinbench tune`: name, current, recommended, why."""
    lines = []
    for knob in KNOBS:
        now = values.get(knob.name)
        if now is None:
            lines.append(f"{knob.name}: absent on this machine")
            continue
        mark = "ok" if now == knob.recommended else f"recommended {knob.recommended}"
        lines.append(f"{knob.name}={now} ({mark}): {knob.why}")
    return lines


# --- the machine's CPU during a session ------------------------------------------------------


@dataclass(frozen=True)
class CpuSample:
    # Seconds since boot, summed over CPUs, from /proc/stat's first line.
    busy_s: float
    steal_s: float
    wall_s: float  # time.monotonic() when read


def parse_proc_stat(text: str, ticks_per_s: float) -> tuple[float, float]:
    """(busy, steal) seconds summed over CPUs from /proc/stat's aggregate ``cpu`` line: busy is
    everything but idle, iowait and steal (guest time is already inside user)."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            f = [int(x) for x in line.split()[1:]]
            f += [0] * (8 - len(f))
            user, nice, system, _idle, _iowait, irq, softirq, steal = f[:8]
            busy = user + nice + system + irq + softirq
            return busy / ticks_per_s, steal / ticks_per_s
    raise ValueError("no aggregate cpu line in /proc/stat")


class CpuMeter:
    """Reads the machine's busy and steal CPU time (for ``background_cpu``)."""

    def __init__(self, root: Path = Path("/")) -> None:
        self._path = root / "proc/stat"
        self._hz = float(os.sysconf("SC_CLK_TCK"))
        self.cpus = os.cpu_count() or 1

    def sample(self) -> CpuSample | None:
        text = _read(self._path)
        if text is None:
            return None
        busy, steal = parse_proc_stat(text, self._hz)
        return CpuSample(busy, steal, time.monotonic())


def background(before: CpuSample | None, after: CpuSample | None, ours_s: float | None,
               cpus: int) -> tuple[float | None, float | None]:
    """(background_cpu, steal) between two samples as fractions of the machine (cpus x wall):
    background is the busy time not spent by our own processes (``ours_s``: the clusters' and
    the client's CPU seconds over the same window). None when unknown."""
    if before is None or after is None:
        return None, None
    capacity = (after.wall_s - before.wall_s) * cpus
    if capacity <= 0:
        return None, None
    steal = max(0.0, after.steal_s - before.steal_s) / capacity
    if ours_s is None:
        return None, steal
    other = max(0.0, after.busy_s - before.busy_s - ours_s)
    return min(1.0, other / capacity), steal


def cpu_change(before: Mapping[str, float], after: Mapping[str, float]) -> float:
    """CPU seconds spent between two readings of {process key: CPU so far}, over the keys both
    have with finite values (a process restarted in between is a new key and is left out)."""
    total = 0.0
    for key, value in after.items():
        old = before.get(key)
        if old is not None and math.isfinite(old) and math.isfinite(value):
            total += max(0.0, value - old)
    return total


@dataclass(frozen=True)
class Mark:
    machine: CpuSample | None
    ours: Mapping[str, float]


class BackgroundMeter:
    """How much of the machine others used during a window: ``start`` before it, ``stop``
    after; ``ours`` returns {process key: CPU seconds so far} of every process of the run."""

    def __init__(self, ours: Callable[[], Mapping[str, float]],
                 meter: CpuMeter | None = None) -> None:
        self._ours = ours
        self._meter = meter or CpuMeter()
        self.background: list[float] = []
        self.steal: list[float] = []

    def start(self) -> Mark:
        return Mark(self._meter.sample(), dict(self._ours()))

    def stop(self, mark: Mark) -> tuple[float | None, float | None]:
        """(background_cpu, steal) of the window, each a fraction of the whole machine."""
        ours = cpu_change(mark.ours, self._ours())
        bg, steal = background(mark.machine, self._meter.sample(), ours, self._meter.cpus)
        if bg is not None:
            self.background.append(bg)
        if steal is not None:
            self.steal.append(steal)
        return bg, steal

    def summary(self) -> dict[str, Any] | None:
        """Mean and largest per-window fractions (manifest ``host.background``)."""
        if not self.background:
            return None
        return {"sessions": len(self.background),
                "background_cpu_mean": sum(self.background) / len(self.background),
                "background_cpu_max": max(self.background),
                "steal_mean": sum(self.steal) / len(self.steal) if self.steal else None}
