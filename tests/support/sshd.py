"""Test hosts: network namespaces (harness/netns.py, 198.18.0.0/15) each running Debian's
OpenSSH server, reachable from the root namespace with a key made for the test.

Every namespace shares this machine's file system, so a "remote" host has the project at the
same path and version: what differs is the network path and the SSH login, which is what a
multi-host test needs to exercise. Everything is removed by ``close()`` (sshd by PID, then the
namespaces and links).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import netns
from harness.processes import ManagedProcess

SSHD = Path("/usr/sbin/sshd")


def unavailable() -> str | None:
    """Why test hosts cannot be made here (None: they can)."""
    reason = netns.available()
    if reason is not None:
        return reason
    if not SSHD.exists() or shutil.which("ssh-keygen") is None:
        return "no OpenSSH server (apt-get install openssh-server; make setup installs it)"
    return None


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
