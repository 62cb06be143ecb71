"""Start and stop a cluster of one architecture: ZooKeeper (zk only) and N broker processes.

`twinbench cluster` and `twinbench run` both come through here, so a benchmark runs against
exactly the cluster a user can start by hand. Readiness is observed, never assumed: every
broker prints ``listening=HOST:PORT``, then every broker must answer Metadata listing all N
brokers before the cluster counts as up. Everything started is stopped by PID, brokers first.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import psutil

from brokers.core.errors import UserError
from harness.kafka_probe import KafkaProbe
from harness.processes import ManagedProcess, ProcessError

Arch = Literal["zk", "dsbs"]
ARCHITECTURES: tuple[Arch, ...] = ("zk", "dsbs")


@dataclass(frozen=True)
class ClusterSpec:
    # Which coordination architecture the brokers use.
    arch: Arch
    # Broker processes to start (the paper uses 3-5).
    brokers: int = 3
    # Broker i listens on port + i; 0 lets each broker pick a free port.
    port: int = 0
    # Parent of every broker's data directory; None = a temporary directory removed on stop.
    data_dir: Path | None = None
    # zk only: use this ZooKeeper ("host:port[,...]") instead of starting one.
    zookeeper: str | None = None
    # zk only: servers in the ZooKeeper ensemble started for the cluster (1 or 3).
    zk_nodes: int = 1
    # Storage flush policy of every broker (every_batch | interval_ms:N | os).
    flush: str = "os"
    # Fairness rule 2: per_request | cached, applied to every broker.
    metadata_check: str = "cached"
    # dsbs only: gossip timing preset: lan (1 s protocol period, realistic) or local (fast
    # failure detection for tests on one host).
    gossip_preset: str = "lan"
    # How long the whole cluster may take to come up before start() gives up.
    ready_timeout_s: float = 90.0
    # Extra arguments appended to every broker's command line.
    broker_args: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.arch not in ARCHITECTURES:
            raise UserError(f"unknown architecture {self.arch!r}; choose zk or dsbs")
        if not 1 <= self.brokers <= 64:
            raise UserError("--brokers must be between 1 and 64")
        if self.port and not 1024 <= self.port <= 65535 - self.brokers:
            raise UserError(f"--port {self.port} leaves no room for {self.brokers} brokers")
        if self.zk_nodes not in (1, 3):
            raise UserError("--zk-nodes must be 1 or 3")
        if self.zookeeper and self.arch != "zk":
            raise UserError("--zookeeper only applies to --arch zk")


@dataclass
class BrokerProcess:
    node_id: int
    process: ManagedProcess
    host: str = ""
    port: int = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class Cluster:
    """A running cluster; use as a context manager or call start()/stop()."""

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        self.brokers: list[BrokerProcess] = []
        self.zookeeper = None  # harness.zookeeper.ZooKeeperHandle for zk clusters
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.root: Path = Path()
        self.started_at = 0.0
        self.start_seconds = 0.0
        self._argvs: list[list[str]] = []

    # --- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Cluster:
        t0 = time.monotonic()
        self.started_at = time.time()
        if self.spec.data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix=f"twinbench-{self.spec.arch}-")
            self.root = Path(self._tmp.name)
        else:
            self.root = self.spec.data_dir
            self.root.mkdir(parents=True, exist_ok=True)
        try:
            self._argvs = self._broker_argvs()
            for node_id in range(len(self._argvs)):
                self.brokers.append(BrokerProcess(node_id, self._launch(node_id)))
            deadline = time.monotonic() + self.spec.ready_timeout_s
            for b in self.brokers:
                self._await_listening(b, deadline)
            self._wait_for_membership(deadline)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def _launch(self, node_id: int) -> ManagedProcess:
        return ManagedProcess(self._argvs[node_id], name=f"{self.spec.arch} broker {node_id}",
                              log_path=self.root / f"broker-{node_id}.log").start()

    @staticmethod
    def _await_listening(b: BrokerProcess, deadline: float) -> None:
        line = b.process.wait_for_line("listening=", max(1.0, deadline - time.monotonic()))
        b.host, _, port = line.split("=", 1)[1].rpartition(":")
        b.port = int(port)

    def kill_broker(self, node_id: int) -> None:
        """SIGKILL one broker, as a crash would (failure scenarios and their tests)."""
        self.brokers[node_id].process.kill()

    def restart_broker(self, node_id: int, timeout_s: float = 60.0) -> BrokerProcess:
        """Start a stopped or killed broker again with its original command line (same id,
        same data directory, same port when one was fixed)."""
        b = self.brokers[node_id]
        b.process.stop()
        if not self.spec.port:
            # Keep the address clients and peers already know, as a restarted host would.
            argv = self._argvs[node_id]
            argv[argv.index("--listen") + 1] = b.address
        b.process = self._launch(node_id)
        self._await_listening(b, time.monotonic() + timeout_s)
        return b

    def _broker_argvs(self) -> list[list[str]]:
        spec = self.spec
        common = ["--flush", spec.flush, "--metadata-check", spec.metadata_check,
                  "--log-level", "INFO", *spec.broker_args]
        ports = [spec.port + i if spec.port else 0 for i in range(spec.brokers)]
        argvs = []
        if spec.arch == "zk":
            from harness.zookeeper import provision

            self.zookeeper = provision(spec.zookeeper, spec.zk_nodes, self.root / "zookeeper")
            connect = f"{self.zookeeper.connect_string}/twinbench"
            for i, port in enumerate(ports):
                argvs.append([sys.executable, "-m", "brokers.zk_broker", "--node-id", str(i),
                              "--listen", f"127.0.0.1:{port}",
                              "--data-dir", str(self.root / f"broker-{i}"),
                              "--zookeeper", connect, *common])
        else:
            from harness.zookeeper import free_ports

            gossip = [f"127.0.0.1:{p}" for p in free_ports(spec.brokers)]
            for i, port in enumerate(ports):
                argvs.append([sys.executable, "-m", "brokers.dsbs_broker", "--node-id", str(i),
                              "--listen", f"127.0.0.1:{port}",
                              "--data-dir", str(self.root / f"broker-{i}"),
                              "--gossip", gossip[i], "--seeds", ",".join(gossip),
                              "--gossip-preset", spec.gossip_preset, *common])
        return argvs

    def _wait_for_membership(self, deadline: float) -> None:
        """Every broker must answer Metadata listing all N brokers."""
        want = {b.port for b in self.brokers}
        pending = list(self.brokers)
        last_error = ""
        while pending:
            b = pending[0]
            if b.process.poll() is not None:
                raise ProcessError(f"{b.process.name} exited with code {b.process.poll()}")
            try:
                with KafkaProbe(b.host, b.port, timeout_s=5) as probe:
                    seen = {x.port for x in probe.metadata([]).brokers}
                if seen >= want:
                    pending.pop(0)
                    continue
                last_error = f"it lists {len(seen)} of {len(want)} brokers"
            except (OSError, ConnectionError) as exc:
                last_error = str(exc)
            if time.monotonic() > deadline:
                raise ProcessError(f"{b.process.name} did not see the whole cluster within "
                                   f"{self.spec.ready_timeout_s:.0f} s: {last_error}")
            time.sleep(0.05)  # polling interval of a readiness probe, not a wait for start-up

    def stop(self) -> None:
        for b in self.brokers:
            b.process.stop()
        if self.zookeeper is not None:
            self.zookeeper.stop()
            self.zookeeper = None
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                self._tmp.cleanup()
            self._tmp = None

    # --- observation ------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers)

    @property
    def zookeeper_connect(self) -> str | None:
        return None if self.zookeeper is None else self.zookeeper.connect_string

    def pids(self) -> list[int]:
        pids = [b.process.pid for b in self.brokers]
        if self.zookeeper is not None:
            pids.extend(self.zookeeper.pids)
        return pids

    def cpu_seconds(self) -> dict[str, float]:
        """User+system CPU seconds so far of every broker (and ZooKeeper server)."""
        out: dict[str, float] = {}
        for b in self.brokers:
            out[f"broker-{b.node_id}"] = _cpu(b.process.pid)
        if self.zookeeper is not None:
            for i, pid in enumerate(self.zookeeper.pids):
                out[f"zookeeper-{i}"] = _cpu(pid)
        return out


def _cpu(pid: int) -> float:
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return float("nan")
    return t.user + t.system
