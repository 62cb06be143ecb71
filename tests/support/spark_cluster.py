"""A real Spark standalone cluster on loopback: one master and one worker, started with
pyspark's own launcher (``bin/spark-class``), ready when the master's status page lists the
worker ALIVE, stopped by process group.

What `twinbench analyze --master spark://...` runs against on a real cluster, here on one
machine: the driver, the master, the worker and its executor are four JVMs (and the executor's
Python workers), talking over sockets exactly as they would across machines.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyspark

from harness.cluster.machines import free_ports
from harness.cluster.processes import ManagedProcess

SPARK_HOME = Path(pyspark.__file__).resolve().parent


def env() -> dict[str, str]:
    """The environment of the master, the worker and the driver: loopback, this Python."""
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


@dataclass(frozen=True)
class SparkCluster:
    master_url: str
    status_url: str

    def status(self) -> dict:
        with urllib.request.urlopen(self.status_url, timeout=5) as answer:
            return json.loads(answer.read())


@contextmanager
def standalone(workdir: Path, cores: int = 2, memory: str = "1g",
               ready_s: float = 120.0) -> Iterator[SparkCluster]:
    workdir.mkdir(parents=True, exist_ok=True)
    port, ui, worker_ui = free_ports(3)
    launcher = str(SPARK_HOME / "bin" / "spark-class")
    master = ManagedProcess(
        [launcher, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
         "--port", str(port), "--webui-port", str(ui)],
        name="spark master", log_path=workdir / "master.log", env=env())
    worker = ManagedProcess(
        [launcher, "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
         "--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
         "--webui-port", str(worker_ui), "--work-dir", str(workdir / "work")],
        name="spark worker", log_path=workdir / "worker.log", env=env())
    cluster = SparkCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui}/json/")
    try:
        master.start()
        worker.start()
        deadline = time.monotonic() + ready_s
        while True:
            try:
                state = cluster.status()
                if state.get("status") == "ALIVE" and any(
                        w.get("state") == "ALIVE" for w in state.get("workers", [])):
                    break
            except OSError:
                pass  # the master's status page is not up yet
            for proc in (master, worker):
                if not proc.running:
                    raise RuntimeError(f"{proc.name} exited; its log is in {workdir}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no ALIVE worker after {ready_s:.0f} s; logs in {workdir}")
            time.sleep(0.5)
        yield cluster
    finally:
        for proc in (worker, master):
            proc.stop()
