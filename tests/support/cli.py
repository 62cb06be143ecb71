"""The `twinbench` command as tests run it: a child process, its output captured, bounded."""

from __future__ import annotations

import subprocess
import sys


def twinbench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m harness.cli ARGS``; never raises for its exit status (tests check it)."""
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)
