"""Start real broker processes for tests: free ports, readiness by the listening= line, PIDs."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.processes import ManagedProcess


@dataclass
class RunningBroker:
    process: ManagedProcess
    host: str
    port: int
    data_dir: Path

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"


def start_single_broker(
    data_dir: Path, *, flush: str = "os", port: int = 0, extra: Sequence[str] = (),
    timeout_s: float = 30.0, log_path: Path | None = None, protocol: str = "PLAINTEXT",
) -> RunningBroker:
    """``protocol``: the listener's security protocol (its TLS/SASL options go in ``extra``)."""
    listen = (["--listen", f"127.0.0.1:{port}"] if protocol == "PLAINTEXT"
              else ["--listener", f"{protocol}://127.0.0.1:{port}"])
    argv = [sys.executable, "-m", "harness.cli", "broker", *listen,
            "--data-dir", str(data_dir), "--flush", flush, *extra]
    return start_broker_process(argv, data_dir, log_path=log_path, timeout_s=timeout_s)


def start_broker_process(
    argv: Sequence[str], data_dir: Path, *, log_path: Path | None = None,
    timeout_s: float = 30.0,
) -> RunningBroker:
    """Start any broker entry point's command line and wait for its listening= line. The log
    goes next to the data directory unless ``log_path`` says otherwise (a test whose disk is
    about to fail keeps it elsewhere, so the broker's last words are readable)."""
    log = log_path or data_dir.parent / f"{data_dir.name}.log"
    proc = ManagedProcess(argv, name="broker", log_path=log)
    proc.start()
    try:
        line = proc.wait_for_line("listening=", timeout_s)
    except BaseException:
        proc.kill()
        raise
    host, _, bound = line.split("=", 1)[1].rpartition(":")
    return RunningBroker(proc, host, int(bound), data_dir)
