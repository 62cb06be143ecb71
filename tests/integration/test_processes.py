"""harness/cluster/processes.py: a child the harness forgot is stopped when the harness exits, and a
child that prints no readiness line is waited for by a probe."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.cluster.processes import ManagedProcess, ProcessError, pid_alive, wait_ready
from tests.support.ops import eventually

pytestmark = pytest.mark.integration

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


def test_a_forgotten_child_is_stopped_when_the_harness_exits(tmp_path: Path) -> None:
    harness = textwrap.dedent(f"""
        from pathlib import Path
        from harness.cluster.processes import ManagedProcess
        p = ManagedProcess({SLEEPER!r}, name="sleeper", log_path=Path({str(tmp_path)!r}) / "s.log",
                           stdout_to_log=True).start()
        print(p.pid, flush=True)
    """)  # ... and exits without stopping it
    out = subprocess.run([sys.executable, "-c", harness], capture_output=True, text=True,
                         timeout=60, cwd=Path(__file__).resolve().parents[2], check=True)
    child = int(out.stdout.split()[0])
    try:
        assert not pid_alive(child), "the child outlived the process that started it"
    finally:
        if pid_alive(child):
            subprocess.run(["kill", "-9", str(child)], check=False)


def test_wait_ready_polls_a_probe_and_reports_an_early_exit(tmp_path: Path) -> None:
    marker = tmp_path / "ready"
    argv = [sys.executable, "-c",
            f"import pathlib, time; time.sleep(0.3); pathlib.Path({str(marker)!r}).touch(); "
            "time.sleep(120)"]
    p = ManagedProcess(argv, name="quiet", log_path=tmp_path / "q.log", stdout_to_log=True)
    p.start()
    try:
        assert wait_ready({p: lambda: "yes" if marker.exists() else None}, 30,
                          what="quiet child") == ["yes"]
    finally:
        p.stop()
    assert not p.running

    dying = ManagedProcess([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"],
                           name="dying", log_path=tmp_path / "d.log", stdout_to_log=True)
    dying.start()
    with pytest.raises(ProcessError, match=r"dying exited with code 3 .*boom"):
        wait_ready({dying: lambda: None}, 30, what="dying child")
    eventually(lambda: not pid_alive(dying.pid), 10, "the dying child to be gone")
