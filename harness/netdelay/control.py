"""The harness's side of a delay line: rules into the namespaces, the daemon, its RTT, its stats.

Where the delay goes (this kernel has no netem): every broker namespace of a
``harness.cluster.netns`` network queues the IPv4 packets arriving on its link (iptables' raw table,
PREROUTING, before anything else sees them) in one of two netfilter queues, and the daemon
(daemon.py) hands each back to the kernel once it has waited:

* queue ``PEERS`` (packets from another broker: gossip, replication, forwarded requests) waits
  rtt/2, so a round trip between two brokers pays rtt;
* queue ``GATEWAY`` (packets from the root namespace's bridge address: the load client,
  ZooKeeper, the harness's probes) waits the whole rtt, since the root namespace delays
  nothing: a client's or ZooKeeper's round trip to a broker pays rtt.

Packets are held on the receiving side, after the kernel has taken them from the sender's
socket, so the sender's TCP small-queue accounting never sees them waiting (which would throttle
it as no real network does). ``--queue-bypass`` lets packets through unheld while no daemon is
bound. Namespaces, rules and queues go when the network is destroyed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from brokers.core.atomic_file import replace_file
from brokers.core.errors import UserError
from harness.cluster.processes import ManagedProcess

if TYPE_CHECKING:
    from harness.cluster.netns import NetnsNetwork

# Queue numbers in every namespace.
PEERS = 0
GATEWAY = 1
# Largest round trip accepted (ms): beyond it ZooKeeper sessions and SWIM timeouts are the
# experiment.
MAX_RTT_MS = 1000.0
# How long the daemon may take to apply a new delay or write its stats.
ANSWER_TIMEOUT_S = 5.0
IPTABLES = "iptables-legacy"


class DelayUnavailable(UserError):
    """No delay line here (no iptables, not root); the message says what to install."""


def available() -> str | None:
    """None when a delay line can run here, else the one-line reason why not."""
    if os.geteuid() != 0:
        return "a network delay needs root (it queues packets with iptables in namespaces)"
    if shutil.which(IPTABLES) is None:
        return "a network delay needs iptables (apt-get install iptables)"
    return None


def check_rtt(rtt_ms: float) -> float:
    if not 0 <= rtt_ms <= MAX_RTT_MS:
        raise UserError(f"rtt must be between 0 and {MAX_RTT_MS:g} ms, got {rtt_ms:g}")
    return float(rtt_ms)


def one_way_delays_ms(rtt_ms: float) -> dict[int, float]:
    """What each queue waits for a round trip of ``rtt_ms`` (see the module docstring)."""
    return {PEERS: rtt_ms / 2, GATEWAY: rtt_ms}


def rules(gateway: str) -> list[list[str]]:
    """The iptables commands, run inside a broker namespace, that queue its incoming packets:
    from the gateway (root namespace) first, everything else from a peer."""
    queue = ["-j", "NFQUEUE", "--queue-bypass", "--queue-num"]
    return [[IPTABLES, "-w", "-t", "raw", "-A", "PREROUTING", "-i", "eth0", "-s", gateway,
             *queue, str(GATEWAY)],
            [IPTABLES, "-w", "-t", "raw", "-A", "PREROUTING", "-i", "eth0", *queue, str(PEERS)]]


@dataclass(frozen=True)
class DelayStats:
    """The daemon's counters at one moment (cumulative since it started)."""

    # Generation of the delays in force (the config file's).
    generation: int
    # Per queue: packets released, seconds held (sum), seconds late (sum), packets that
    # bypassed the line (the kernel queue or the notice buffer was full).
    packets: dict[int, int]
    held_s: dict[int, float]
    late_s: dict[int, float]
    bypassed: dict[int, int]


@dataclass(frozen=True)
class DelayChange:
    """What happened between two readings."""

    packets: int
    bypassed: int
    # Mean time a packet from the gateway was held (ms): the round trip a client or ZooKeeper
    # saw added; None when none passed.
    gateway_held_ms: float | None
    # Mean time a packet from a peer was held (ms): half the round trip between brokers added.
    peer_held_ms: float | None
    # Mean lateness of a release against its due time (ms), over both queues.
    late_ms: float | None


def change(before: DelayStats, after: DelayStats) -> DelayChange:
    queues = (PEERS, GATEWAY)
    packets = {q: after.packets.get(q, 0) - before.packets.get(q, 0) for q in queues}
    held = {q: after.held_s.get(q, 0.0) - before.held_s.get(q, 0.0) for q in queues}
    late = sum(after.late_s.get(q, 0.0) - before.late_s.get(q, 0.0) for q in queues)
    bypassed = sum(after.bypassed.get(q, 0) - before.bypassed.get(q, 0) for q in queues)
    total = sum(packets.values())

    def mean_ms(queue: int) -> float | None:
        return held[queue] / packets[queue] * 1000 if packets[queue] > 0 else None

    return DelayChange(total, bypassed, mean_ms(GATEWAY), mean_ms(PEERS),
                       late / total * 1000 if total > 0 else None)


class NetworkDelay:
    """The delay line of one namespace network: ``start(rtt_ms)``, ``set_rtt``, ``stats``,
    ``stop``. The daemon is a ManagedProcess (stopped by PID, at exit too)."""

    def __init__(self, network: NetnsNetwork, workdir: Path) -> None:
        reason = available()
        if reason is not None:
            raise DelayUnavailable(reason)
        self.network = network
        self.workdir = workdir
        self.config_path = workdir / "netdelay.json"
        self.stats_path = workdir / "netdelay-stats.json"
        self.rtt_ms = 0.0
        self._generation = 0
        self.process: ManagedProcess | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None, "not started"
        return self.process.pid

    def start(self, rtt_ms: float, timeout_s: float = 30.0) -> NetworkDelay:
        rtt_ms = check_rtt(rtt_ms)
        self.workdir.mkdir(parents=True, exist_ok=True)
        for host in self.network.hosts:
            for rule in rules(self.network.gateway):
                proc = subprocess.run([*host.exec_prefix(), *rule], capture_output=True,
                                      text=True, timeout=30)
                if proc.returncode != 0:
                    raise DelayUnavailable(f"cannot queue packets in {host.namespace}: "
                                           f"{proc.stderr.strip() or proc.returncode}")
        self._write_config(rtt_ms)
        argv = [sys.executable, "-m", "harness.netdelay.daemon",
                "--config", str(self.config_path), "--stats", str(self.stats_path)]
        for host in self.network.hosts:
            argv += ["--netns", host.namespace]
        for queue in (PEERS, GATEWAY):
            argv += ["--queue", str(queue)]
        self.process = ManagedProcess(argv, name="network delay line",
                                      log_path=self.workdir / "netdelay.log").start()
        try:
            self.process.wait_for_line("ready=", timeout_s)
        except BaseException:
            self.stop()
            raise
        self.rtt_ms = rtt_ms
        return self

    def _write_config(self, rtt_ms: float) -> None:
        self._generation += 1
        doc = {"generation": self._generation,
               "delays_ms": {str(q): ms for q, ms in one_way_delays_ms(rtt_ms).items()}}
        replace_file(self.config_path, json.dumps(doc) + "\n", sync_file=False,
                     sync_dir=False)

    def set_rtt(self, rtt_ms: float) -> None:
        """Change the round trip; returns once the daemon has it in force."""
        rtt_ms = check_rtt(rtt_ms)
        if rtt_ms == self.rtt_ms:
            return
        assert self.process is not None, "not started"
        self._write_config(rtt_ms)
        self.process.signal(signal.SIGHUP)
        stats = self.stats()
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while stats.generation < self._generation:
            if time.monotonic() > deadline:
                raise DelayUnavailable(f"the delay line did not take rtt {rtt_ms:g} ms within "
                                       f"{ANSWER_TIMEOUT_S:g} s (log: {self.process.log_path})")
            stats = self.stats()
        self.rtt_ms = rtt_ms

    def stats(self) -> DelayStats:
        """The daemon's counters now (it writes them on SIGUSR1; polled with a deadline)."""
        assert self.process is not None, "not started"
        t0 = time.time_ns()
        self.process.signal(signal.SIGUSR1)
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while True:
            try:
                doc = json.loads(self.stats_path.read_text("utf-8"))
            except (OSError, ValueError):
                doc = {}
            if doc.get("written_unix_ns", 0) >= t0:
                return _parse_stats(doc)
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise DelayUnavailable(f"the delay line did not answer (log: "
                                       f"{self.process.log_path}: {self.process.tail()})")
            time.sleep(0.001)  # polling interval of the probe, not a wait for an effect

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


def _parse_stats(doc: dict[str, object]) -> DelayStats:
    queues = doc.get("queues")
    if not isinstance(queues, dict):
        raise DelayUnavailable("the delay line wrote stats without queues")

    def per(key: str) -> dict[int, float]:
        return {int(q): float(v[key]) for q, v in queues.items()}

    generation = doc.get("generation")
    return DelayStats(int(generation) if isinstance(generation, int) else 0,
                      {q: int(v) for q, v in per("packets").items()}, per("held_s"),
                      per("late_s"), {q: int(v) for q, v in per("bypassed").items()})
