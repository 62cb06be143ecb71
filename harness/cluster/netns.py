"""A private network for one cluster: one Linux network namespace per broker, joined by a bridge.

Why: a network partition cannot be simulated on loopback (every process shares one interface),
and this kernel has no netem. With each broker in its own namespace, wired to a bridge in the
root namespace by a veth pair, taking the broker's veth link down cuts it off from everyone
(the other brokers, ZooKeeper, the load client) exactly as a pulled cable would: packets
vanish, connections time out, nothing is refused politely.

Layout (one /24 out of 198.18.0.0/15, the range reserved for benchmark tests, picked so that
it collides with no address already configured on the machine)::

    root namespace: bridge tb<pid><tag>  198.18.K.1/24   harness, load client, ZooKeeper
    namespace tb<pid><tag>-b<i>: eth0    198.18.K.(10+i)  broker i (lo up, default route
                                                          via 198.18.K.1)

Names carry the owning process id, so namespaces and links left behind by a harness that was
SIGKILLed are recognised and removed by the next one (``sweep_stale``). Traffic never leaves the
bridge: nothing is routed or NATed to any other address.

Needs root and iproute2's ``ip``; ``NetnsUnavailable`` says so in one line otherwise.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from brokers.core.errors import UserError
from harness.cluster.processes import pid_alive

# 198.18.0.0/15: RFC 2544's benchmarking range, reserved for exactly this kind of test network.
BENCH_NET = ipaddress.ip_network("198.18.0.0/15")
# Host part of broker i's address (.1 is the bridge, the harness side).
FIRST_HOST = 10
_NAME = re.compile(r"tb(\d+)([a-z])(?:-b\d+)?$")
_LINK = re.compile(r"tb(\d+)([a-z])(?:b\d+)?$")
_tags = iter("abcdefghijklmnopqrstuvwxyz")


class NetnsUnavailable(UserError):
    """Network namespaces cannot be created here (not root, or no iproute2)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise NetnsUnavailable(f"ip {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc


def available() -> str | None:
    """None when namespaces can be made here, else the one-line reason why not."""
    if shutil.which("ip") is None:
        return "network namespaces need iproute2's `ip` command (apt-get install iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root (run as root, or use network: loopback)"
    return None


def _used_subnets() -> set[int]:
    """Third octets (plus 256 for 198.19) of the 198.18/15 /24s configured on any interface."""
    out = _ip("-o", "-4", "addr", "show", check=False).stdout
    used = set()
    for m in re.finditer(r"inet (\d+\.\d+\.\d+\.\d+)/", out):
        addr = ipaddress.ip_address(m.group(1))
        if addr in BENCH_NET:
            used.add((int(addr) - int(BENCH_NET.network_address)) >> 8)
    return used


# The machine-wide lock around choosing a /24 (NetnsNetwork.create).
_LOCK_PATH = Path(tempfile.gettempdir()) / "twinbench-netns.lock"


@contextlib.contextmanager
def _subnet_lock() -> Iterator[None]:
    with open(_LOCK_PATH, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
        yield


def sweep_stale() -> list[str]:
    """Remove namespaces and bridges that a dead twinbench process left behind; their names."""
    removed = []
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = _NAME.match(name)
        if m and not pid_alive(int(m.group(1))):
            _ip("netns", "delete", name, check=False)
            removed.append(name)
    for line in _ip("-o", "link", "show", check=False).stdout.splitlines():
        parts = line.split(":")
        if len(parts) < 2:
            continue
        name = parts[1].strip().split("@")[0]
        m = _LINK.match(name)
        if m and not pid_alive(int(m.group(1))):
            _ip("link", "delete", name, check=False)
            removed.append(name)
    return removed


@dataclass(frozen=True)
class NetnsHost:
    # Broker index within the network.
    index: int
    # The namespace the broker runs in (`ip netns exec <namespace> ...`).
    namespace: str
    # The root-namespace end of its veth pair: taking it down isolates the host.
    link: str
    # The host's address on the bridge.
    address: str

    def exec_prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.namespace]


class NetnsNetwork:
    """Create with ``NetnsNetwork().create(n)``; ``destroy()`` removes everything it made."""

    def __init__(self) -> None:
        reason = available()
        if reason is not None:
            raise NetnsUnavailable(reason)
        self.prefix = f"tb{os.getpid()}{next(_tags)}"
        self.bridge = self.prefix
        self.hosts: list[NetnsHost] = []
        self.gateway = ""
        self._subnet = -1
        self._base = 0  # the chosen /24's first address, as an integer

    def create(self, n_hosts: int) -> NetnsNetwork:
        if not 1 <= n_hosts <= 200:
            raise UserError("a namespace network holds 1..200 brokers")
        # Two harnesses creating networks at once (make test's two workers) would both see the
        # same /24 free, and Linux lets two bridges hold the same address, so both would route
        # it: the pick and the address are made under a machine-wide lock.
        with _subnet_lock():
            self._pick_subnet()
        try:
            _ip("link", "set", self.bridge, "up")
            for i in range(n_hosts):
                self.hosts.append(self._add_host(i, self._base))
        except BaseException:
            self.destroy()
            raise
        return self

    def _pick_subnet(self) -> None:
        sweep_stale()
        used = _used_subnets()
        # Skip K=0 (198.18.0.x) and pick the first free /24; an address that cannot be added
        # moves on to the next.
        for k in range(1, 511):
            if k in used or k == 256:
                continue
            base = int(BENCH_NET.network_address) + (k << 8)
            gateway = str(ipaddress.ip_address(base + 1))
            try:
                _ip("link", "add", self.bridge, "type", "bridge")
            except NetnsUnavailable:
                self.destroy()
                raise
            if _ip("addr", "add", f"{gateway}/24", "dev", self.bridge, check=False).returncode:
                _ip("link", "delete", self.bridge, check=False)
                continue
            self._subnet, self.gateway, self._base = k, gateway, base
            return
        raise NetnsUnavailable("no free /24 left in 198.18.0.0/15 for a test network")

    def _add_host(self, i: int, base: int) -> NetnsHost:
        ns, link = f"{self.prefix}-b{i}", f"{self.prefix}b{i}"
        address = str(ipaddress.ip_address(base + FIRST_HOST + i))
        _ip("netns", "add", ns)
        _ip("link", "add", link, "type", "veth", "peer", "name", f"{link}p")
        _ip("link", "set", f"{link}p", "netns", ns)
        _ip("-n", ns, "link", "set", f"{link}p", "name", "eth0")
        _ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "route", "add", "default", "via", self.gateway)
        _ip("link", "set", link, "master", self.bridge, "up")
        return NetnsHost(i, ns, link, address)

    def isolate(self, index: int) -> None:
        """Cut host ``index`` off from every other host and from the root namespace."""
        _ip("link", "set", self.hosts[index].link, "down")

    def heal(self, index: int) -> None:
        _ip("link", "set", self.hosts[index].link, "up")

    def cut(self, src: int, dst: int) -> None:
        """Drop every packet host ``src`` sends to host ``dst`` (one way: ``dst``'s packets
        still reach ``src``). An iptables rule in ``src``'s namespace, gone with it."""
        self._iptables(src, "-A", dst)

    def uncut(self, src: int, dst: int) -> None:
        self._iptables(src, "-D", dst)

    def _iptables(self, src: int, verb: str, dst: int) -> None:
        host = self.hosts[src]
        cmd = [*host.exec_prefix(), "iptables-legacy", "-w", verb, "OUTPUT", "-d",
               self.hosts[dst].address, "-j", "DROP"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if proc.returncode != 0:
            raise NetnsUnavailable(f"{' '.join(cmd)}: {proc.stderr.strip() or proc.returncode}"
                                   " (a one-way cut needs iptables: apt-get install iptables)")

    def isolated(self, index: int) -> bool:
        out = _ip("-o", "link", "show", self.hosts[index].link, check=False).stdout
        flags = out.partition("<")[2].partition(">")[0].split(",")
        return "UP" not in flags

    def destroy(self) -> None:
        """Remove every namespace and link of this network; idempotent, never raises."""
        for host in self.hosts:
            with contextlib.suppress(Exception):
                _ip("netns", "delete", host.namespace, check=False)
            with contextlib.suppress(Exception):
                _ip("link", "delete", host.link, check=False)
        self.hosts = []
        with contextlib.suppress(Exception):
            _ip("link", "delete", self.bridge, check=False)
