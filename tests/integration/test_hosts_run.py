"""`twinbench run|cluster --hosts` through the real SSH path: test hosts are network namespaces
on a bridge (198.18.0.0/15) running Debian's OpenSSH (tests/support/sshd.py), made and removed
here. A 3-host cluster of each twin (ZooKeeper on the first host for zk) with the load on a
fourth host (and a fifth: producers and consumers dealt to two client hosts and merged), a
small workload end to end, the run log checked; a host that vanishes mid-run is one line and
no hang; nothing is left running on any host afterwards.

`make test` runs a sample; TWINBENCH_HOSTS_FULL=1 (`make test-hosts`) adds Ctrl-C, the
watchdog without the link coming back, a 3-server ZooKeeper ensemble, `twinbench cluster
--hosts` with a broker killed and restarted over SSH, and an external cluster driven from
client hosts.
"""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import sshd
from tests.support.cli import twinbench

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Deselected unless TWINBENCH_HOSTS_FULL=1 (tests/conftest.py).
full_only = pytest.mark.hosts_full
CLUSTER = [["zookeeper", "broker"], ["broker"], ["broker"]]
# Quick failure detection for tests: a host is lost after 1 s x 8 unanswered keepalives (not
# fewer: this machine is shared, and a starved sshd may miss a few).
TIMING = {"keepalive_s": 1, "keepalive_count": 8, "watchdog_s": 15}


def zookeeper_missing() -> str | None:
    from harness.services.zookeeper import HOW_TO_GET_ZOOKEEPER, find_classpath, find_java

    if find_java() is None or find_classpath() is None:
        return "no java or ZooKeeper jars: " + HOW_TO_GET_ZOOKEEPER
    return None


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sshd.SshHosts]:
    yield from sshd.module_hosts(tmp_path_factory, 5)


def _layout(hosts: sshd.SshHosts, tmp_path: Path, clients: int = 1,
            cluster: list[list[str]] = CLUSTER) -> tuple[Path, Path]:
    workdir = tmp_path / "remote"
    path = hosts.hosts_file(tmp_path / "hosts.yaml", [*cluster, *[["client"]] * clients],
                            workdir, **TIMING)
    return path, workdir


def _run_log(out: Path) -> tuple[Path, dict, list[dict]]:
    (run_dir,) = out.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    with open(run_dir / "records.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return run_dir, manifest, rows


def _check_run(run_dir: Path, manifest: dict, rows: list[dict], arch: str,
               clients: list[str]) -> None:
    """Every session verified and measured; the hosts, their clock offsets and the layout in
    the manifest; the logs back in the run directory."""
    assert manifest["incomplete"] is False and manifest["failed_cells"] == []
    assert {(r["scenario"], r["role"]) for r in rows} == {
        (s, r) for s in ("split", "streaming") for r in ("production", "consumption")}
    for r in rows:
        assert r["status"] == "ok" and r["lost"] in ("", "0") and int(r["records"]) == 3000
        assert float(r["rps"]) > 0 and r["lat_p99_us"]
    h = manifest["hosts"]
    assert {x["name"] for x in h["hosts"]} == {"h1", "h2", "h3", *clients}
    assert all(isinstance(x["clock_offset_ms"], float) and x["rtt_ms"] > 0 for x in h["hosts"])
    assert h["brokers"] == ["h1", "h2", "h3"]
    assert h["zookeeper"] == (["h1"] if arch == "zk" else [])
    # Producers and consumers dealt to the client hosts, every one exactly once.
    assert [c["host"] for c in h["clients"]] == clients
    assert sorted(p for c in h["clients"] for p in c["producers"]) == [0, 1]
    assert sorted(p for c in h["clients"] for p in c["consumers"]) == [0, 1]
    assert manifest["cluster"]["network"] == "hosts"
    logs = run_dir / "hosts" / f"{arch}-cluster1"
    for i, host in enumerate(("h1", "h2", "h3")):
        assert (logs / host / f"broker-{i}.log").stat().st_size > 0
        assert json.loads((logs / host / f"broker-{i}.counters.json").read_text())["node_id"] == i
    if arch == "zk":
        assert "binding to port" in (logs / "h1" / "zookeeper.log").read_text()
    with open(run_dir / "coordination.csv", newline="") as f:
        coordination = list(csv.DictReader(f))
    # Counters and CPU were read from the brokers on their hosts. Every session of the zk twin
    # talks to ZooKeeper; DSBS gossips on a timer (a 1 s SWIM period on hosts), so a session of
    # a few hundred milliseconds may send no datagram at all (read as 0, not left empty),
    # while each broker's last counters show the gossip of its whole life.
    assert all(float(c["broker_cpu_s"]) > 0 for c in coordination), coordination
    if arch == "zk":
        assert all(int(c["coord_messages"]) > 0 for c in coordination), coordination
    else:
        assert all(int(c["coord_messages"]) >= 0 for c in coordination), coordination
        # DSBS gossips; the Raft twin's voters (every broker here) exchange Raft messages.
        sent = "gossip_packets_out" if arch == "dsbs" else "raft_messages_out"
        for i, host in enumerate(("h1", "h2", "h3")):
            last = json.loads((logs / host / f"broker-{i}.counters.json").read_text())
            assert last["coordinator"][sent] > 0


def _run_on_hosts(hosts: sshd.SshHosts, tmp_path: Path, arch: str, clients: int = 1) -> Path:
    """``twinbench run --arch ARCH --hosts`` on the layout, its run log checked, nothing left
    behind on the hosts; the hosts' work directory."""
    path, workdir = _layout(hosts, tmp_path, clients=clients)
    out = tmp_path / "runs"
    done = twinbench("run", "--arch", arch, "--hosts", str(path), "--workload", "hosts-smoke",
                     "--out", str(out), timeout=400)
    assert done.returncode == 0, done.stderr
    _check_run(*_run_log(out), arch, [f"c{i + 1}" for i in range(clients)])
    assert hosts.wait_no_leftovers(workdir, 15) == []
    return workdir


@pytest.mark.zookeeper
def test_zk_twin_on_three_hosts_with_the_load_on_a_fourth(hosts: sshd.SshHosts,
                                                         tmp_path: Path) -> None:
    if reason := zookeeper_missing():
        pytest.skip(reason)
    workdir = _run_on_hosts(hosts, tmp_path, "zk")
    assert not workdir.exists() or list(workdir.iterdir()) == []


def test_dsbs_twin_with_the_load_on_two_client_hosts(hosts: sshd.SshHosts,
                                                     tmp_path: Path) -> None:
    _run_on_hosts(hosts, tmp_path, "dsbs", clients=2)


def test_raft_twin_on_three_hosts_with_the_load_on_a_fourth(hosts: sshd.SshHosts,
                                                           tmp_path: Path) -> None:
    # Its voters reach each other at the hosts' addresses, the brokers' Raft ports chosen on
    # each host (harness/architectures/raft.py), as DSBS's gossip ports are.
    _run_on_hosts(hosts, tmp_path, "raft")


def _start_run(path: Path, out: Path, messages: int = 2_000_000) -> subprocess.Popen[str]:
    """A long dsbs run in the background (a workload made big enough to be cut mid-run)."""
    workload = out.parent / "long.yaml"
    workload.write_text(
        f"name: long\nmessages: {messages}\ntries: 1\nproducers: 2\nconsumers: 2\n"
        "scenarios: [split]\nconsumer_timeout_s: 120\ncells:\n  - {table: size_grid, "
        "msg_sizes: [32], batches: [20]}\n")
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "--arch", "dsbs", "--hosts", str(path),
         "--workload", str(workload), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_first_session(proc: subprocess.Popen[str], out: Path, timeout_s: float) -> None:
    """Poll (a readiness probe) until the run log exists: the first session has started."""
    deadline = time.monotonic() + timeout_s
    while not any(out.glob("*/manifest.json")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run did not start its first session"
        time.sleep(0.1)


def _cut_mid_run(hosts: sshd.SshHosts, tmp_path: Path, index: int, heal: bool
                 ) -> tuple[int, str, float, Path, Path, list[str]]:
    """Cut host ``index``'s link once a long run's first session has started: the run's exit
    status, stderr, how long it took to end after the cut, its output and remote directories,
    and what is still left running (the link restored first when ``heal``)."""
    path, workdir = _layout(hosts, tmp_path)
    out = tmp_path / "runs"
    proc = _start_run(path, out)
    try:
        _wait_for_first_session(proc, out, 120)
        hosts.isolate(index)
        t0 = time.monotonic()
        _, stderr = proc.communicate(timeout=120)
        ended_after = time.monotonic() - t0
        if heal:
            hosts.heal(index)
        # With the link back its sshd drops the dead session and the keeper stops its broker;
        # without, the keeper's watchdog does.
        left = hosts.wait_no_leftovers(workdir, 30 if heal else TIMING["watchdog_s"] + 20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        hosts.heal(index)
    return proc.returncode, stderr, ended_after, out, workdir, left


def test_a_host_that_vanishes_mid_run_is_one_line_not_a_hang(hosts: sshd.SshHosts,
                                                             tmp_path: Path) -> None:
    code, stderr, ended_after, out, _, left = _cut_mid_run(hosts, tmp_path, 1, heal=True)
    assert code == 1, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("twinbench: error:")]
    assert len(errors) == 1 and "host h2 (" in errors[0] and "vanished" in errors[0], stderr
    assert "Traceback" not in stderr
    # Detection (8 s of keepalives) and the stop of the rest, not a consumer's timeout.
    assert ended_after < 60, ended_after
    manifest = json.loads(next(out.glob("*/manifest.json")).read_text())
    assert manifest["incomplete"] is True
    assert left == []


# make test samples one layout and one host; the roles check is unit-tested in full
# (tests/unit/harness/test_hosts_roles.py) and the host lines in tests/integration/test_hosts.py.
@pytest.mark.parametrize(("change", "expected"), [
    pytest.param({"roles": [["broker"], ["broker"], ["broker"], ["client"]]},
                 "no host has the zookeeper role, which the architecture needs",
                 marks=full_only),
    ({"roles": [["zookeeper", "broker"], ["zookeeper"], ["broker"], ["client"]]},
     "2 hosts have the zookeeper role; a zookeeper ensemble needs an odd number"),
    pytest.param({"roles": [["zookeeper", "broker"], ["broker"], ["broker"]]},
                 "no host has the client role", marks=full_only),
    ({"key": "wrong"}, "NOT READY: SSH refused the login (wrong user or key)"),
    pytest.param({"address": "ghost"}, "NOT READY: unreachable", marks=full_only),
    pytest.param({"project": "/nonexistent"}, "NOT READY: no twinbench at /nonexistent",
                 marks=full_only),
])
def test_bad_layouts_and_hosts_are_one_line(hosts: sshd.SshHosts, tmp_path: Path,
                                            change: dict, expected: str) -> None:
    roles = change.get("roles", [*CLUSTER, ["client"]])
    workdir = tmp_path / "remote"
    path = hosts.hosts_file(tmp_path / "hosts.yaml", roles, workdir,
                            **({"project": change["project"]} if "project" in change else {}))
    if "key" in change or "address" in change:
        import yaml

        doc = yaml.safe_load(path.read_text())
        if "key" in change:
            doc["hosts"][1]["key"] = str(hosts.wrong_key)
        else:  # an address on the test network that nobody answers for
            doc["hosts"][1]["address"] = hosts.addresses[0].rsplit(".", 1)[0] + ".99"
        path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "runs"
    done = twinbench("run", "--arch", "zk", "--hosts", str(path), "--workload", "hosts-smoke",
                     "--out", str(out), timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("twinbench: error:"), done.stderr
    assert expected in lines[0]
    assert not out.exists()  # refused before any run directory was written
    assert hosts.leftovers(workdir) == []


# --- make test-hosts ---------------------------------------------------------------------------
@full_only
def test_ctrl_c_stops_everything_on_every_host(hosts: sshd.SshHosts, tmp_path: Path) -> None:
    path, workdir = _layout(hosts, tmp_path, clients=2)
    out = tmp_path / "runs"
    proc = _start_run(path, out)
    try:
        _wait_for_first_session(proc, out, 120)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert hosts.wait_no_leftovers(workdir, 15) == []


@full_only
def test_the_watchdog_stops_what_runs_on_a_host_that_stays_cut_off(hosts: sshd.SshHosts,
                                                                  tmp_path: Path) -> None:
    # h3 stays cut off: only its keeper's watchdog can stop its broker.
    code, stderr, _, _, _, left = _cut_mid_run(hosts, tmp_path, 2, heal=False)
    assert code == 1 and "host h3 (" in stderr
    assert left == []


@full_only
@pytest.mark.zookeeper
def test_zk_ensemble_of_three_zookeeper_hosts(hosts: sshd.SshHosts, tmp_path: Path) -> None:
    if reason := zookeeper_missing():
        pytest.skip(reason)
    path, workdir = _layout(hosts, tmp_path, cluster=[["zookeeper", "broker"]] * 3)
    out = tmp_path / "runs"
    done = twinbench("run", "--arch", "zk", "--hosts", str(path), "--workload", "hosts-smoke",
                     "--out", str(out), timeout=400)
    assert done.returncode == 0, done.stderr
    _, manifest, rows = _run_log(out)
    assert manifest["hosts"]["zookeeper"] == ["h1", "h2", "h3"]
    assert manifest["cluster"]["options"]["zookeeper"]["nodes"] == 3
    assert all(r["status"] == "ok" for r in rows)
    assert hosts.wait_no_leftovers(workdir, 15) == []


@full_only
def test_cluster_on_hosts_takes_faults_and_ctrl_c(hosts: sshd.SshHosts, tmp_path: Path) -> None:
    path, workdir = _layout(hosts, tmp_path)
    state = tmp_path / "state.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "cluster", "--arch", "dsbs", "--hosts", str(path),
         "--data-dir", str(tmp_path / "local"), "--state", str(state)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith("state="):
                break
        bootstrap = next(x for x in lines if x.startswith("bootstrap=")).split("=", 1)[1]
        assert [x.rsplit(":", 1)[0] for x in bootstrap.split(",")] == hosts.addresses[:3]
        done = twinbench("fault", "kill", "--broker", "1", "--state", str(state))
        assert done.returncode == 0, done.stderr
        assert json.loads(state.read_text())["brokers"][1]["state"] == "exited"
        done = twinbench("fault", "restart", "--broker", "1", "--state", str(state))
        assert done.returncode == 0, done.stderr
        assert json.loads(state.read_text())["brokers"][1]["state"] == "running"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (tmp_path / "local" / "hosts" / "h2" / "broker-1.log").stat().st_size > 0
    assert hosts.wait_no_leftovers(workdir, 15) == []


@full_only
def test_an_external_cluster_driven_from_client_hosts(hosts: sshd.SshHosts,
                                                      tmp_path: Path) -> None:
    """A twin started on its own (here: on this machine's view of the hosts, through
    `twinbench cluster --hosts`) treated as external, with the load on two client hosts."""
    cluster_file, workdir = _layout(hosts, tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "cluster", "--arch", "dsbs", "--hosts",
         str(cluster_file), "--state", str(tmp_path / "state.json")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        bootstrap = ""
        for line in proc.stdout:
            if line.startswith("bootstrap="):
                bootstrap = line.strip().split("=", 1)[1]
            if line.startswith("state="):
                break
        clients = hosts.hosts_file(tmp_path / "clients.yaml", [["client"], ["client"]],
                                   tmp_path / "remote-clients", **TIMING)
        # Only the client hosts: the fourth and fifth namespaces.
        import yaml

        doc = yaml.safe_load(clients.read_text())
        for h, address in zip(doc["hosts"], hosts.addresses[3:], strict=True):
            h["address"] = address
        clients.write_text(yaml.safe_dump(doc))
        out = tmp_path / "runs"
        done = twinbench("run", "--bootstrap", bootstrap, "--label", "ext-dsbs", "--hosts",
                         str(clients), "--workload", "hosts-smoke", "--out", str(out),
                         timeout=300)
        assert done.returncode == 0, done.stderr
        _, manifest, rows = _run_log(out)
        assert manifest["arch"] == "ext-dsbs"
        assert [c["host"] for c in manifest["hosts"]["clients"]] == ["c1", "c2"]
        assert all(r["status"] == "ok" for r in rows)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    assert hosts.wait_no_leftovers(workdir, 15) == []
