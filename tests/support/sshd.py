"""Test hosts: network namespaces (harness/cluster/netns.py, 198.18.0.0/15) each running Debian's
OpenSSH server, reachable from the root namespace with a key made for the test.

Every namespace shares this machine's file system, so a "remote" host has the project at the
same path and version: what differs is the network path and the SSH login, which is what a
multi-host test needs to exercise. Everything is removed by ``close()`` (sshd by PID, then the
namespaces and links).

As a program it makes the 4-host test layout and waits, for runs by hand (docs/hosts.md, "Tests
and measurement")::

    python -m tests.support.sshd --hosts-file /tmp/hosts.yaml [--clients 1]
    twinbench run --arch both --workload hosts-paper --hosts /tmp/hosts.yaml
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import yaml

from harness.cluster import netns
from harness.cluster.processes import ManagedProcess

SSHD = Path("/usr/sbin/sshd")


def unavailable() -> str | None:
    """Why test hosts cannot be made here (None: they can)."""
    reason = netns.available()
    if reason is not None:
        return reason
    if not SSHD.exists() or shutil.which("ssh-keygen") is None:
        return "no OpenSSH server (apt-get install openssh-server; make setup installs it)"
    return None


def module_hosts(tmp_path_factory: Any, n: int) -> Iterator[SshHosts]:
    """``n`` test hosts for every test of a module (skipped with the reason when they cannot
    be made here); the body of a module-scoped fixture."""
    import pytest

    if reason := unavailable():
        pytest.skip(reason)
    made = SshHosts(tmp_path_factory.mktemp("hosts")).start(n)
    try:
        yield made
    finally:
        made.close()


def keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                   check=True, capture_output=True, timeout=30)
    return path


@dataclass
class SshHosts:
    workdir: Path
    network: netns.NetnsNetwork | None = None
    daemons: list[ManagedProcess] = field(default_factory=list)
    # The key the hosts accept for root, and one they do not.
    key: Path | None = None
    wrong_key: Path | None = None

    def start(self, n: int) -> SshHosts:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.key = keygen(self.workdir / "id_test")
        self.wrong_key = keygen(self.workdir / "id_wrong")
        host_key = keygen(self.workdir / "host_key")
        authorized = self.workdir / "authorized_keys"
        authorized.write_text(Path(f"{self.key}.pub").read_text())
        authorized.chmod(0o600)
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
        self.network = netns.NetnsNetwork().create(n)
        try:
            for host in self.network.hosts:
                argv = [*host.exec_prefix(), str(SSHD), "-D", "-e", "-f", "/dev/null",
                        "-o", f"ListenAddress={host.address}", "-o", "Port=22",
                        "-o", f"HostKey={host_key}", "-o", f"AuthorizedKeysFile={authorized}",
                        "-o", f"PidFile={self.workdir / f'sshd-{host.index}.pid'}",
                        "-o", "StrictModes=no", "-o", "PasswordAuthentication=no",
                        "-o", "KbdInteractiveAuthentication=no", "-o", "UsePAM=no",
                        "-o", "PermitRootLogin=prohibit-password",
                        # Files come and go by SFTP, as on a stock Debian server.
                        "-o", "Subsystem=sftp internal-sftp",
                        # A driver whose link came back after it gave up is noticed in
                        # seconds, and its sessions end (their programs see end of input).
                        "-o", "ClientAliveInterval=1", "-o", "ClientAliveCountMax=3"]
                self.daemons.append(ManagedProcess(
                    argv, name=f"sshd-{host.index}",
                    log_path=self.workdir / f"sshd-{host.index}.log").start())
            for host in self.network.hosts:
                wait_listening(host.address, 22, 30.0)
        except BaseException:
            self.close()
            raise
        return self

    @property
    def addresses(self) -> list[str]:
        assert self.network is not None
        return [h.address for h in self.network.hosts]

    def hosts_file(self, path: Path, roles: list[list[str]], workdir: Path,
                   **extra: Any) -> Path:
        """A hosts file for the first ``len(roles)`` hosts (names h1, h2, ...; clients c1, c2,
        ... when a host is a client only), the test key, any host key accepted."""
        assert self.key is not None
        hosts = []
        for i, (address, r) in enumerate(zip(self.addresses, roles, strict=False)):
            name = f"c{i + 1 - sum(1 for x in roles if x != ['client'])}" if r == ["client"] \
                else f"h{i + 1}"
            hosts.append({"name": name, "address": address, "user": "root",
                          "key": str(self.key), "roles": r})
        path.write_text(yaml.safe_dump({"known_hosts": None, "workdir": str(workdir), **extra,
                                        "hosts": hosts}))
        return path

    def isolate(self, index: int) -> None:
        assert self.network is not None
        self.network.isolate(index)

    def heal(self, index: int) -> None:
        assert self.network is not None
        self.network.heal(index)

    def leftovers(self, workdir: Path) -> list[str]:
        """Processes still running that the hosts' SSH servers started (sessions, keepers,
        workers) or that belong to ``workdir`` (brokers, ZooKeeper): what a run must not
        leave behind."""
        found: dict[int, str] = {}
        for d in self.daemons:
            if not d.running:
                continue
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(d.pid).children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        found[child.pid] = " ".join(child.cmdline())[:160]
        for proc in psutil.process_iter(["pid", "cmdline"]):
            cmdline = " ".join(proc.info["cmdline"] or [])
            if str(workdir) in cmdline and proc.pid != os.getpid():
                found[proc.pid] = cmdline[:160]
        return [f"{pid}: {cmd}" for pid, cmd in sorted(found.items())]

    def wait_no_leftovers(self, workdir: Path, timeout_s: float) -> list[str]:
        """Poll (a readiness probe) until nothing is left; what is left at the deadline."""
        deadline = time.monotonic() + timeout_s
        while (left := self.leftovers(workdir)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left

    def close(self) -> None:
        for d in self.daemons:
            d.stop()
        self.daemons = []
        if self.network is not None:
            self.network.destroy()
            self.network = None


def wait_listening(host: str, port: int, timeout_s: float) -> None:
    """Readiness probe: a TCP connection is accepted (bounded)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"nothing listens on {host}:{port} after {timeout_s:g} s") from None
            time.sleep(0.05)  # polling interval of the probe, not a wait for an effect


# The 4-host test layout: a 3-host cluster (ZooKeeper on the first) and the load on a fourth.
LAYOUT = [["zookeeper", "broker"], ["broker"], ["broker"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.sshd")
    parser.add_argument("--hosts-file", type=Path, required=True)
    parser.add_argument("--clients", type=int, default=1, help="client hosts (default 1)")
    args = parser.parse_args(argv)
    if reason := unavailable():
        print(f"test hosts unavailable: {reason}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="twinbench-hosts-"))
    hosts = SshHosts(work).start(len(LAYOUT) + args.clients)
    stop = False

    def on_signal(*_: object) -> None:
        nonlocal stop
        stop = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    try:
        hosts.hosts_file(args.hosts_file, [*LAYOUT, *[["client"]] * args.clients],
                         work / "remote")
        print(f"hosts_file={args.hosts_file}", flush=True)
        while not stop:
            time.sleep(0.2)
    finally:
        hosts.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
