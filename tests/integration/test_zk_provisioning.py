"""harness/services/zookeeper against real ZooKeeper processes: start, read counters, stop
by PID."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from harness.services import zookeeper as zk
from tests.support import zk_fixtures
from tests.support.zk_fixtures import pid_alive

pytestmark = [pytest.mark.integration, pytest.mark.zookeeper]


def _kazoo(connect: str) -> KazooClient:
    client = KazooClient(hosts=connect, timeout=4.0)
    client.start(timeout=10)
    return client


def test_standalone_serves_reports_counters_and_stops_by_pid(tmp_path: Path) -> None:
    with zk_fixtures.local_zookeeper(tmp_path) as handle:
        assert handle.kind == "local"
        assert handle.ensemble is not None and handle.ensemble.startup_seconds is not None
        ((host, port),) = handle.endpoints
        assert host == "127.0.0.1"
        assert handle.connect_string == f"127.0.0.1:{port}"
        assert handle.version and handle.version.startswith("3.")
        pids = handle.pids
        assert len(pids) == 1 and pid_alive(pids[0])

        assert zk.four_letter(host, port, "ruok") == "imok"
        assert zk.srvr(host, port)["mode"] == "standalone"
        before = handle.request_counters()
        assert before["zk_packets_received"] > 0

        client = _kazoo(handle.connect_string)
        try:
            for i in range(20):
                client.create(f"/p{i}", b"x")
        finally:
            client.stop()
            client.close()
        after = handle.request_counters()
        # 20 creates + session set-up; mntr counts them all as received packets.
        assert after["zk_packets_received"] - before["zk_packets_received"] >= 20
        assert after["zk_znode_count"] >= before["zk_znode_count"] + 20
        stats = zk.mntr(host, port)
        assert stats["zk_server_state"] == "standalone"
        assert isinstance(stats["zk_packets_received"], int)
        log = handle.ensemble.log_paths()[0]
    assert not any(pid_alive(p) for p in pids), "ZooKeeper survived stop()"
    assert log.is_file() and "binding to port" in log.read_text()


def test_three_node_ensemble_elects_one_leader_replicates_and_stops(tmp_path: Path) -> None:
    with zk_fixtures.local_zookeeper(tmp_path, nodes=3) as handle:
        assert handle.ensemble is not None
        pids = handle.pids
        assert len(pids) == 3 and all(pid_alive(p) for p in pids)
        modes = sorted(m or "" for m in handle.ensemble.modes().values())
        assert modes == ["follower", "follower", "leader"]
        (h1, p1), _, (h3, p3) = handle.endpoints
        writer = _kazoo(f"{h1}:{p1}")
        reader = _kazoo(f"{h3}:{p3}")
        try:
            writer.create("/replicated", b"hello")
            reader.sync("/replicated")
            assert reader.get("/replicated")[0] == b"hello"
        finally:
            for c in (writer, reader):
                c.stop()
                c.close()
        # Losing one member keeps the quorum: the other two still serve writes.
        ensemble = handle.ensemble
        modes_by_port = ensemble.modes()
        follower = next(
            i for i, (_, p) in enumerate(handle.endpoints) if modes_by_port[p] == "follower"
        )
        ensemble.stop_member(follower)
        assert len(ensemble.pids) == 2 and not pid_alive(pids[follower])
        survivor = next(p for i, (_, p) in enumerate(handle.endpoints) if i != follower)
        client = _kazoo(f"127.0.0.1:{survivor}")
        try:
            client.create("/with-two", b"ok")
        finally:
            client.stop()
            client.close()
        ensemble.start_member(follower)
        assert len(ensemble.pids) == 3
        per_node = handle.mntr_all()
        assert len(per_node) == 3
        assert {s["zk_server_state"] for s in per_node.values()} == {"leader", "follower"}
        assert handle.request_counters()["zk_packets_received"] > 0
    assert not any(pid_alive(p) for p in pids), "an ensemble member survived stop()"


def test_restart_keeps_address_and_data(tmp_path: Path) -> None:
    with zk_fixtures.local_zookeeper(tmp_path) as handle:
        assert handle.ensemble is not None
        client = _kazoo(handle.connect_string)
        client.create("/kept", b"1")
        client.stop()
        client.close()
        old = handle.pids
        handle.ensemble.stop()
        assert handle.pids == () and not pid_alive(old[0])
        handle.ensemble.start()
        assert handle.pids and handle.pids != old
        client = _kazoo(handle.connect_string)
        try:
            assert client.get("/kept")[0] == b"1"
        finally:
            client.stop()
            client.close()


def test_user_given_address_is_used_and_left_running(tmp_path: Path) -> None:
    with zk_fixtures.local_zookeeper(tmp_path / "own") as own:
        ext = zk.provision(own.connect_string, 1, tmp_path / "ext")
        assert ext.kind == "external" and ext.connect_string == own.connect_string
        assert ext.pids == ()
        ext.stop()
        assert zk.srvr(*own.endpoints[0])["mode"] == "standalone"


def test_environment_address_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with zk_fixtures.local_zookeeper(tmp_path / "own") as own:
        monkeypatch.setenv("ZOOKEEPER_CONNECT", own.connect_string)
        ext = zk.provision(None, 1, tmp_path / "ext")
        assert ext.kind == "external" and ext.endpoints == own.endpoints


def test_unreachable_user_address_is_one_clear_error(tmp_path: Path) -> None:
    (port,) = zk.free_ports(1)
    t0 = time.monotonic()
    with pytest.raises(zk.ZooKeeperUnavailable, match="does not accept connections"):
        zk.provision(f"127.0.0.1:{port}", 1, tmp_path)
    # A refused connection is an answer, not a wait: well inside any retry loop's patience
    # (generous: this asserts no hang, not a speed).
    assert time.monotonic() - t0 < 30


def test_process_that_dies_at_start_reports_its_log(tmp_path: Path) -> None:
    if zk_fixtures.skip_reason():
        pytest.skip(zk_fixtures.skip_reason() or "")
    cfg = zk_fixtures.zk_test_config(java="/bin/false", startup_timeout_s=120.0)
    server = zk.ZooKeeperServer(cfg, tmp_path)
    t0 = time.monotonic()
    with pytest.raises(zk.ZooKeeperStartError, match="exited with code 1"):
        server.start()
    # The exit was noticed, not the start-up timeout waited out (half of it at most).
    assert time.monotonic() - t0 < 60
    assert server.pids == ()


def test_no_jars_and_no_docker_is_one_clear_error(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # No engine at this address, whether or not one runs on the machine.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    t0 = time.monotonic()
    assert not zk.docker_engine_answers()
    assert time.monotonic() - t0 < 30, "probing for Docker must not hang"
    cfg = zk.ZooKeeperConfig(home=tmp_path / "no-such-zookeeper")
    with pytest.raises(zk.ZooKeeperUnavailable, match="apt-get install"):
        zk.provision(None, 1, tmp_path, cfg)


def _docker_or_skip():  # -> docker.DockerClient
    """A client of the machine's Docker engine with the ZooKeeper image, or a skip saying why
    (CI starts the engine and builds the image: harness/setup_system.sh)."""
    if not zk.docker_engine_answers():
        pytest.skip("no Docker engine answers: the testcontainers branch is not taken here "
                    "(as root, `make setup` starts Debian's docker.io)")
    import docker

    client = docker.from_env(timeout=30)
    try:
        client.images.get(zk.CONTAINER_IMAGE)
    except docker.errors.ImageNotFound:
        client.close()
        pytest.skip(f"no {zk.CONTAINER_IMAGE} image on the engine "
                    "(harness/services/zookeeper/build_image.sh builds one)")
    return client


def _containers_of(client, pid: int) -> list[str]:
    return [c.id for c in client.containers.list(
        all=True, filters={"label": f"{zk.OWNER_LABEL}={pid}"})]


_KILLED_HARNESS = """
import sys, time
from pathlib import Path
from harness.services import zookeeper as zk
handle = zk.provision(None, 1, Path(sys.argv[1]), zk.ZooKeeperConfig(home=Path(sys.argv[1])))
print(handle.kind, flush=True)
time.sleep(600)
"""


def test_container_branch_without_jars_cleans_up_after_itself(tmp_path: Path) -> None:
    """No jars, a Docker engine: a container serves, labelled with our PID, and nothing of it
    is left once stopped; one left by a harness that was SIGKILLed is removed by the next
    provisioning. No reaper (Ryuk) is involved: its image cannot be pulled in CI."""
    client = _docker_or_skip()
    try:
        leftover = subprocess.Popen(
            [sys.executable, "-c", _KILLED_HARNESS, str(tmp_path / "killed")],
            stdout=subprocess.PIPE, text=True)
        try:
            assert leftover.stdout is not None
            assert leftover.stdout.readline().strip() == "container"
            stale = _containers_of(client, leftover.pid)
            assert len(stale) == 1
        finally:
            leftover.kill()
            leftover.wait()

        cfg = zk.ZooKeeperConfig(home=tmp_path / "no-such-zookeeper")
        with zk.provisioned(None, 1, tmp_path / "mine", cfg) as handle:
            assert handle.kind == "container"
            assert zk.srvr(*handle.endpoints[0])["mode"] == "standalone"
            assert zk.four_letter(*handle.endpoints[0], "ruok") == "imok"
            mine = _containers_of(client, os.getpid())
            assert len(mine) == 1
            assert _containers_of(client, leftover.pid) == [], "the stale one was not swept"
        assert _containers_of(client, os.getpid()) == []
        assert not any(c.id in stale + mine for c in client.containers.list(all=True))
    finally:
        client.close()
