"""A broker's profile during a benchmark cell: py-spy attached to the process, summarised.

`make perf PERF_ARGS=--profile DIR` (perf.py) runs one extra session per cell after the measured
ones, with py-spy sampling the broker (never during a measured session: sampling costs the
broker CPU), and keeps for each cell py-spy's raw stacks and a summary of where the broker's time
went. The summary is what a closing note quotes, so a profile is reproducible by a command.

* ``Sampler``: ``py-spy record --format raw`` on a PID from ``start()`` to ``stop()``. py-spy
  leaves idle threads out, so what is sampled is the broker working; without native frames, time
  in the event loop's own C code (uvloop: socket reads, writes, epoll) shows as its Python
  caller's line, ``Runner.run``, and a transport write as the line that called it.
* ``summarise``: pure. Self share (samples where a frame is the innermost) and inclusive share
  (samples where it is anywhere on the stack) of the top frames.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from brokers.core.errors import UserError

# Seconds of sessions sampled per profile: a few thousand samples at RATE_HZ (a fast cell's one
# session is a fraction of a second, too few).
PROFILE_S = 8.0
# Samples per second: enough for a few thousand over a session of seconds, little enough that
# py-spy itself stays a small share of a core.
RATE_HZ = 250
STOP_TIMEOUT_S = 30.0


def py_spy() -> str:
    """The py-spy executable: beside this interpreter (the project's venv), else on PATH."""
    here = Path(sys.executable).parent / "py-spy"
    found = str(here) if here.exists() else shutil.which("py-spy")
    if found is None:
        raise UserError("py-spy is not installed: `make setup` installs it into .venv")
    return found


class Sampler:
    def __init__(self, pid: int, out: Path, rate_hz: int = RATE_HZ) -> None:
        self.pid, self.out, self.rate_hz = pid, out, rate_hz
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Sampler:
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self._proc = subprocess.Popen(
            [py_spy(), "record", "--pid", str(self.pid), "--rate", str(self.rate_hz),
             "--format", "raw", "--output", str(self.out), "--nonblocking"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return self

    def stop(self) -> str:
        """Stop sampling (SIGINT makes py-spy write its output) and return the raw stacks."""
        proc = self._proc
        if proc is None:
            raise UserError("the sampler was never started")
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        if not self.out.exists():
            # Most often ptrace is restricted (kernel.yama.ptrace_scope >= 1 without root).
            raise UserError(f"py-spy wrote no profile of PID {self.pid} (root, or "
                            f"kernel.yama.ptrace_scope 0, lets it attach): "
                            f"{(err or b'').decode(errors='replace').strip()[-300:]}")
        return self.out.read_text()


@dataclass(frozen=True)
class Summary:
    samples: int
    # (frame, share of samples), largest first.
    self_top: list[tuple[str, float]]
    inclusive_top: list[tuple[str, float]]

    def text(self) -> str:
        lines = [f"{self.samples} samples", "self (innermost frame):"]
        lines += [f"  {share:6.1%}  {frame}" for frame, share in self.self_top]
        lines.append("inclusive (anywhere on the stack):")
        lines += [f"  {share:6.1%}  {frame}" for frame, share in self.inclusive_top]
        return "\n".join(lines) + "\n"


def summarise(raw: str, top: int = 15) -> Summary:
    """py-spy's raw format: one line per distinct stack, ``frame;frame;...;innermost count``."""
    own: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        own[frames[-1]] += n
        for frame in set(frames):
            anywhere[frame] += n
    if not total:
        return Summary(0, [], [])
    # Frames on every stack (the entry point down to the event loop) say nothing: left out.
    inclusive = [(f, n / total) for f, n in anywhere.most_common() if n < total][:top]
    return Summary(total, [(f, n / total) for f, n in own.most_common(top)], inclusive)


def profile_sessions(pid: int, out: Path, name: str, what: str,
                     session: Callable[[], tuple[int, float]]) -> None:
    """Sample ``pid`` while ``session`` (records, wall seconds) runs again and again for at least
    PROFILE_S; write OUT/NAME.raw (py-spy's stacks) and OUT/NAME.txt (``what``, the rate while
    sampled, the summary) and print the summary's head."""
    sampler = Sampler(pid, out / f"{name}.raw").start()
    records, wall = 0, 0.0
    try:
        while wall < PROFILE_S:
            n, seconds = session()
            records, wall = records + n, wall + seconds
    finally:
        raw = sampler.stop()
    summary = summarise(raw)
    rate = records / wall
    (out / f"{name}.txt").write_text(
        f"{what}, {records:,} records at {rate:,.0f} rec/s while sampled\n" + summary.text())
    print(f"\nprofile {name} ({rate:,.0f} rec/s while sampled; {out / name}.txt):")
    print("".join(summary.text().splitlines(keepends=True)[:8]), end="")
