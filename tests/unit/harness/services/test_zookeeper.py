"""Pure parts of harness/services/zookeeper: config rendering and four-letter-word parsing."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from brokers.core.errors import UserError
from harness.services import zookeeper as zk
from harness.services.zookeeper.discovery import manifest_class_path

SRVR = """Zookeeper version: 3.8.0-abc, built on 2024-12-29 17:54 UTC
Latency min/avg/max: 0/0.5/3
Received: 50
Sent: 49
Connections: 1
Outstanding: 0
Zxid: 0x1a
Mode: leader
Node count: 12
"""


def test_parse_srvr() -> None:
    out = zk.parse_srvr(SRVR)
    assert out["mode"] == "leader"
    assert out["received"] == 50 and out["sent"] == 49 and out["node_count"] == 12
    assert out["zxid"] == "0x1a"
    assert out["latency_min_avg_max"] == "0/0.5/3"
    assert str(out["zookeeper_version"]).startswith("3.8.0")


def test_parse_mntr() -> None:
    out = zk.parse_mntr("zk_version\t3.8.0\nzk_packets_received\t17\nzk_avg_latency\t0.5\nbad\n")
    assert out == {"zk_version": "3.8.0", "zk_packets_received": 17, "zk_avg_latency": "0.5"}


@pytest.mark.filesystem
def test_standalone_config_is_loopback_without_admin_server(tmp_path: Path) -> None:
    m = zk.Member(1, 2181, 0, 0)
    text = zk.render_config(zk.ZooKeeperConfig(tick_time_ms=500), m, [m], tmp_path)
    lines = set(text.splitlines())
    assert {"tickTime=500", "clientPort=2181", "clientPortAddress=127.0.0.1"} <= lines
    assert {"admin.enableServer=false", "4lw.commands.whitelist=*"} <= lines
    assert f"dataDir={tmp_path}" in lines
    assert not any(line.startswith("server.") for line in lines)


@pytest.mark.filesystem
def test_ensemble_config_lists_every_member(tmp_path: Path) -> None:
    members = [zk.Member(i, 3000 + i, 4000 + i, 5000 + i) for i in (1, 2, 3)]
    text = zk.render_config(zk.ZooKeeperConfig(nodes=3), members[1], members, tmp_path)
    assert "clientPort=3002" in text
    for i in (1, 2, 3):
        assert f"server.{i}=127.0.0.1:{4000 + i}:{5000 + i}" in text


@pytest.mark.parametrize("nodes", [0, 2, -1])
def test_ensemble_size_must_be_odd(nodes: int) -> None:
    with pytest.raises(UserError, match="odd"):
        zk.ZooKeeperConfig(nodes=nodes)


def test_parse_connect_string() -> None:
    assert zk.parse_connect_string("a:1,b:2/chroot") == (("a", 1), ("b", 2))
    assert zk.parse_connect_string("[::1]:2181") == (("::1", 2181),)
    for bad in ("", "host", "host:x", "host:70000", ":2181"):
        with pytest.raises(UserError):
            zk.parse_connect_string(bad)


@pytest.mark.filesystem
def test_free_ports_are_distinct() -> None:
    ports = zk.free_ports(9)
    assert len(set(ports)) == 9 and all(p > 0 for p in ports)


@pytest.mark.filesystem
def test_manifest_class_path_unwraps_continuation_lines(tmp_path: Path) -> None:
    jar = tmp_path / "z.jar"
    manifest = (
        "Manifest-Version: 1.0\r\nClass-Path: /usr/share/java/a.jar /usr/share/java/b\r\n"
        " .jar /usr/share/java/c.jar\r\nCreated-By: test\r\n"
    )
    with zipfile.ZipFile(jar, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", manifest)
    assert manifest_class_path(jar) == [
        "/usr/share/java/a.jar",
        "/usr/share/java/b.jar",
        "/usr/share/java/c.jar",
    ]


@pytest.mark.filesystem
def test_classpath_from_a_release_home(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "conf").mkdir()
    for name in ("zookeeper-3.8.4.jar", "zookeeper-jute-3.8.4.jar", "logback-core-1.2.13.jar"):
        (tmp_path / "lib" / name).write_bytes(b"")
    cp = zk.find_classpath(tmp_path)
    assert cp is not None and cp[0] == tmp_path / "conf"
    assert {p.name for p in cp[1:]} >= {"zookeeper-3.8.4.jar", "logback-core-1.2.13.jar"}
    assert zk.find_classpath(tmp_path / "missing") is None


def test_four_letter_rejects_wrong_length() -> None:
    with pytest.raises(ValueError):
        zk.four_letter("127.0.0.1", 1, "stat!")
