"""A real Prometheus server scraping a cluster's brokers (Debian's ``prometheus`` package).

``start_prometheus`` writes a configuration with one static job of the brokers' metrics
addresses (scraped every second: runs are short), starts the binary on a free loopback port
with its storage in a directory of the run, and waits for its readiness endpoint. ``query``
asks the HTTP API for an instant vector. A missing binary is ``PrometheusUnavailable``, whose
message says how to install it.
"""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.processes import ManagedProcess, ProcessError, wait_ready
from harness.services.zookeeper import free_ports

SCRAPE_INTERVAL_S = 1


class PrometheusUnavailable(ProcessError):
    """No prometheus binary on PATH."""


@dataclass
class PrometheusHandle:
    process: ManagedProcess
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def query(self, expr: str, timeout_s: float = 5.0, at: float | None = None) -> list[dict]:
        """The result of an instant query, evaluated now or at the Unix time ``at``: a vector
        (``[{"metric": {...}, "value": [t, "v"]}]``), or for a range selector the samples
        (``"values": [[t, "v"], ...]``)."""
        params = {"query": expr, **({} if at is None else {"time": f"{at:.3f}"})}
        url = f"http://{self.address}/api/v1/query?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=timeout_s) as reply:
            doc = json.loads(reply.read())
        if doc.get("status") != "success":
            raise ProcessError(f"prometheus query {expr!r} failed: {doc}")
        result: list[dict] = doc["data"]["result"]
        return result

    def stop(self) -> None:
        self.process.stop()


def scrape_config(targets: list[str], arch: str) -> str:
    """Prometheus's YAML for one static job whose series carry ``arch`` (the dashboard's rows
    filter on it). JSON is YAML, so no YAML writer is needed."""
    return json.dumps({
        "global": {"scrape_interval": f"{SCRAPE_INTERVAL_S}s",
                   "evaluation_interval": f"{SCRAPE_INTERVAL_S}s"},
        "scrape_configs": [{"job_name": f"twinbench-{arch}", "static_configs": [
            {"targets": targets, "labels": {"arch": arch}}]}],
    }, indent=2)


def start_prometheus(targets: list[str], arch: str, workdir: Path, timeout_s: float = 60.0
                     ) -> PrometheusHandle:
    binary = shutil.which("prometheus")
    if binary is None:
        raise PrometheusUnavailable(
            "no prometheus binary on PATH (Debian: apt-get install prometheus; "
            "`make setup` installs it)")
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(scrape_config(targets, arch))
    (port,) = free_ports(1)
    process = ManagedProcess(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        name="prometheus", log_path=workdir / "prometheus.log", stdout_to_log=True).start()
    handle = PrometheusHandle(process, "127.0.0.1", port)

    def ready() -> bool | None:
        try:
            with urllib.request.urlopen(f"http://{handle.address}/-/ready", timeout=2) as r:
                return True if r.status == 200 else None
        except (OSError, urllib.error.URLError):
            return None

    try:
        wait_ready({process: ready}, timeout_s, what="prometheus")
    except BaseException:
        process.stop()
        raise
    return handle
