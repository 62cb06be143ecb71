"""`twinbench run --bootstrap`: a workload against a cluster twinbench did not start (a dsbs
twin started separately with `twinbench cluster`, treated as external), and the one-line
refusals of what an external cluster cannot do."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from harness.cluster.external import NOT_APPLIED, NOT_MEASURED_WITH_METRICS
from harness.cluster.processes import ManagedProcess
from spark_analysis.loader import validate_runs
from tests.support.cli import twinbench

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SMALL = """\
name: ext-small
messages: 3000
tries: 1
cells:
  - table: size_grid
    msg_sizes: [32]
    batches: [20]
"""


def test_a_workload_runs_against_an_external_cluster(tmp_path: Path) -> None:
    """Over SASL_SSL: the cluster's client_config= properties become --client-config's keys.
    The cluster serves its metrics (`--metrics`) and the run reads the coordination counters
    from them (--metrics-url)."""
    proc = ManagedProcess(
        [sys.executable, "-m", "harness.cli", "cluster", "--arch", "dsbs", "--brokers", "3",
         "--data-dir", str(tmp_path / "data"), "--security", "sasl_ssl", "--metrics",
         "--report-dir", str(tmp_path / "report")],
        name="twinbench cluster", log_path=tmp_path / "cluster.log").start()
    try:
        bootstrap = proc.wait_for_line("bootstrap=", 120).split("=", 1)[1]
        properties = Path(proc.wait_for_line("client_config=", 30).split("=", 1)[1])
        endpoints = proc.wait_for_line("metrics=", 60).split("=", 1)[1]
        settings = dict(line.split("=", 1) for line in properties.read_text().splitlines())
        workload = tmp_path / "small.yaml"
        workload.write_text(SMALL)
        config = tmp_path / "client.yaml"
        config.write_text("client_id: ext-test\nrequest_timeout_ms: 30000\n" + "".join(
            f"{key.replace('.', '_')}: {value}\n" for key, value in settings.items()))
        out = tmp_path / "runs"
        done = twinbench("run", "--bootstrap", bootstrap, "--label", "ext-dsbs", "--workload",
                          str(workload), "--client-config", str(config), "--out", str(out),
                          "--quiet", "--metrics-url", endpoints)
        assert done.returncode == 0, done.stderr
        (run,) = out.iterdir()
        m = json.loads((run / "manifest.json").read_text())
        assert (m["arch"], m["label"], m["run_arches"]) == ("ext-dsbs", "ext-dsbs", ["ext-dsbs"])
        assert m["cluster"]["network"] == "external" and m["cluster"]["brokers"] == 3
        ext = m["external"]
        assert ext["bootstrap"] == bootstrap and ext["client"]["client_id"] == "ext-test"
        assert ext["client"]["security_protocol"] == "SASL_SSL"
        assert settings["sasl.password"] not in (run / "manifest.json").read_text()
        assert ext["not_applied"] == list(NOT_APPLIED)
        assert ext["not_measured"] == list(NOT_MEASURED_WITH_METRICS)
        assert ext["metrics"] == [f"{e}/metrics" for e in endpoints.split(",")]
        assert m["architectures"]["ext-dsbs"]["baseline"] is False
        with open(run / "records.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert {(r["scenario"], r["role"]) for r in rows} == {
            (s, r) for s in ("split", "streaming") for r in ("production", "consumption")}
        assert all(r["status"] == "ok" and float(r["rps"]) > 0 for r in rows)
        assert {r["lost"] for r in rows if r["role"] == "consumption"} == {"0"}
        with open(run / "coordination.csv", newline="") as f:
            coord = list(csv.DictReader(f))
        assert coord and all(r["service_cpu_s"] == "" for r in coord)
        # Read from the brokers' endpoints, the first and last scrape of each session.
        assert all(int(r["coord_messages"]) > 0 and int(r["coordination_ops"]) >= 0
                   and float(r["broker_cpu_s"]) > 0 for r in coord)
        with open(run / "counters.csv", newline="") as f:
            counted = {(r["source"], r["counter"]) for r in csv.DictReader(f)}
        assert {("coordinator", "gossip_packets_out"), ("broker", "fsyncs")} <= counted
        with open(run / "metrics.csv", newline="") as f:
            scraped = {(r["node_id"], r["metric"]) for r in csv.DictReader(f)}
        assert {("2", "twinbench_requests_total"), ("0", "process_cpu_seconds_total")
                } <= scraped
        # The analysis reads it like any run log.
        assert [r.arch for r in validate_runs([run]).runs] == ["ext-dsbs"]
        # An endpoint that is no Prometheus endpoint (a broker's Kafka port): one line, before
        # any run directory is written.
        kafka_port = bootstrap.split(",")[0]
        done = twinbench("run", "--bootstrap", bootstrap, "--label", "ext-dsbs", "--workload",
                         str(workload), "--client-config", str(config), "--out",
                         str(tmp_path / "refused"), "--metrics-url", kafka_port)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"twinbench: error: --metrics-url {kafka_port}/metrics: "
                                      "no Prometheus metrics there (")
        assert not (tmp_path / "refused").exists()
    finally:
        proc.stop()


@pytest.mark.parametrize(("args", "expected"), [
    (["--bootstrap", "127.0.0.1:1", "--label", "ext", "--workload", "smoke"],
     "--bootstrap 127.0.0.1:1: no Kafka-protocol cluster answered"),
    (["--bootstrap", "127.0.0.1:1", "--workload", "smoke"], "--bootstrap needs --label NAME"),
    (["--bootstrap", "127.0.0.1:1", "--arch", "zk", "--workload", "smoke"], "drop --arch"),
    (["--bootstrap", "127.0.0.1:1", "--label", "dsbs", "--workload", "smoke"], "names a twin"),
    (["--bootstrap", "nonsense", "--label", "ext", "--workload", "smoke"], "is not host:port"),
    (["--bootstrap", "127.0.0.1:1", "--label", "ext", "--workload", "faults-smoke"],
     "fault workloads need a cluster twinbench starts"),
    (["--workload", "smoke"], "give --arch (a twin, or both) or --bootstrap"),
    (["--arch", "zk", "--client-config", "x.yaml", "--workload", "smoke"],
     "--client-config only applies with --bootstrap"),
    (["--arch", "zk", "--metrics-url", "127.0.0.1:1", "--workload", "smoke"],
     "--metrics-url only applies with --bootstrap"),
    (["--bootstrap", "127.0.0.1:1", "--label", "ext", "--metrics-url", "https://b:9/m",
      "--workload", "smoke"], "not [http://]HOST:PORT[/PATH]"),
    (["--bootstrap", "127.0.0.1:1", "--label", "ext", "--metrics-url", "b:1,b:1/metrics",
      "--workload", "smoke"], "an endpoint is listed twice"),
])
def test_what_an_external_run_refuses(args: list[str], expected: str) -> None:
    done = twinbench("run", *args, "--out", "/nonexistent-twinbench-runs", timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith("twinbench: error: ") and expected in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.filesystem
@pytest.mark.parametrize(("text", "expected"), [
    ("security_protocol: TLS\n", "security_protocol TLS: one of PLAINTEXT, SSL"),
    ("security_protocol: SASL_SSL\nsasl_username: u\n",
     "SASL_SSL needs sasl_username and sasl_password"),
    ("security_protocol: SSL\nsasl_username: u\n", "sasl_username applies to SASL_"),
    ("ssl_ca_location: ca.pem\n", "ssl_ca_location applies to SSL and SASL_SSL only"),
    ("security_protocol: SASL_SSL\nsasl_mechanism: GSSAPI\nsasl_username: u\n"
     "sasl_password: p\n", "sasl_mechanism GSSAPI: one of PLAIN, SCRAM-SHA-256"),
    ("retries: -1\n", "retries: must be an integer >= 0"),
    ("linger_ms: 5\n", "linger_ms: unknown setting"),
    ("[1, 2]\n", "must be a mapping of settings"),
    ("a: [\n", "not valid YAML"),
])
def test_bad_client_configs_are_one_line(tmp_path: Path, text: str, expected: str) -> None:
    from brokers.core.errors import UserError
    from harness.cluster.external import load_client_config

    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as info:
        load_client_config(path)
    assert expected in str(info.value) and "\n" not in str(info.value)
