"""Hosts files and `twinbench hosts check` over real SSH: test hosts are network namespaces
running OpenSSH (tests/support/sshd.py); a good login, a wrong key, a host that does not exist
and a wrong project path each get their one line."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from brokers.core.errors import UserError
from harness.hosts import (
    HostStatus,
    end_session,
    load_hosts,
    local_version,
    login,
    measure_clock,
)
from tests.support import sshd
from tests.support.cli import twinbench

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sshd.SshHosts]:
    yield from sshd.module_hosts(tmp_path_factory, 2)


def _write(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def test_hosts_check_says_per_host_what_is_wrong(hosts: sshd.SshHosts, tmp_path: Path) -> None:
    a, b = hosts.addresses
    # A host on the test network that nobody answers for.
    ghost = a.rsplit(".", 1)[0] + ".99"
    doc = {"known_hosts": None, "hosts": [
        {"name": "good", "address": a, "user": "root", "key": str(hosts.key),
         "roles": ["broker", "zookeeper"]},
        {"name": "wrong-key", "address": b, "user": "root", "key": str(hosts.wrong_key),
         "roles": ["broker"]},
        {"name": "ghost", "address": ghost, "user": "root", "key": str(hosts.key),
         "roles": ["client"]},
    ]}
    path = _write(tmp_path / "hosts.yaml", doc)
    done = twinbench("hosts", "check", str(path), timeout=120)
    assert done.returncode == 1, done.stderr
    lines = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert set(lines) == {"good", "wrong-key", "ghost"}
    assert f": ok: {local_version()}, clock offset " in lines["good"]
    assert "NOT READY: SSH refused the login (wrong user or key)" in lines["wrong-key"]
    assert "NOT READY: unreachable" in lines["ghost"]
    # The same host with the project somewhere it is not.
    doc["project"] = str(tmp_path / "nowhere")
    doc["hosts"] = doc["hosts"][:1]
    done = twinbench("hosts", "check", str(_write(tmp_path / "elsewhere.yaml", doc)),
                     timeout=120)
    assert done.returncode == 1
    assert f"NOT READY: no twinbench at {tmp_path / 'nowhere'}" in done.stdout
    # The project there, but another version of it (its interpreter says so).
    other = tmp_path / "other-python"
    other.write_text("#!/bin/sh\necho 'twinbench 0.0.1 0000000'\n")
    other.chmod(0o755)
    doc.pop("project")
    doc["python"] = str(other)
    done = twinbench("hosts", "check", str(_write(tmp_path / "other.yaml", doc)), timeout=120)
    assert done.returncode == 1
    assert (f"good root@{a}:22 [broker,zookeeper]: NOT READY: version 'twinbench 0.0.1 "
            f"0000000', here {local_version()!r}") in done.stdout, done.stdout


@pytest.mark.filesystem
@pytest.mark.parametrize(("doc", "expected"), [
    ({"hosts": []}, "hosts: must be a non-empty list of hosts"),
    ({"hosts": [{"name": "a", "address": "x", "user": "u", "roles": ["broker"]}],
      "workers": 3}, "workers: unknown key"),
    ({"hosts": [{"name": "a", "address": "x", "user": "u", "roles": ["broker"]},
                {"name": "b", "address": "x", "user": "u", "roles": ["client"]}]},
     "hosts: address x is listed twice"),
    ({"hosts": [{"name": "a", "address": "x", "user": "u", "roles": ["broker"]},
                {"name": "a", "address": "y", "user": "u", "roles": ["client"]}]},
     "hosts: name a is listed twice"),
    ({"hosts": [{"name": "a", "address": "x", "user": "u", "roles": ["ksql"]}]},
     "hosts[0].roles: must be a list of distinct roles"),
    ({"hosts": [{"name": "a", "address": "x", "roles": ["broker"]}]}, "hosts[0].user: is missing"),
    ({"hosts": [{"name": "A B", "address": "x", "user": "u", "roles": ["broker"]}]},
     "hosts[0].name: must be a short word"),
    ({"hosts": [{"name": "a", "address": "x", "user": "u", "roles": ["broker"], "port": 0}]},
     "hosts[0].port: must be a TCP port"),
    ({"hosts": [{"name": "a", "address": "x", "user": "u", "roles": ["broker"],
                 "cpus": [-1]}]}, "hosts[0].cpus: must be a list of CPU numbers"),
    ({"hosts": [{"name": "a", "address": "x", "user": "u", "roles": ["broker"]}],
      "workdir": "tmp/tb"}, "workdir: must be an absolute path"),
    ({"hosts": [{"name": "a", "address": "x", "user": "u", "roles": ["broker"],
                 "key": "/nonexistent/id_ed25519"}]},
     "hosts[0].key: no key file at /nonexistent/id_ed25519"),
    ({"hosts": [{"name": "a", "address": "x", "user": "u", "roles": ["broker"]}],
      "keepalive_count": 1.5}, "keepalive_count: must be an integer >= 1"),
    ({"hosts": [{"name": "a", "address": "x", "user": "u", "roles": ["broker"]}],
      "keepalive_s": 2, "keepalive_count": 5, "watchdog_s": 10},
     "watchdog_s: must exceed keepalive_s x keepalive_count (10 s)"),
])
def test_bad_hosts_files_are_one_line(tmp_path: Path, doc: dict, expected: str) -> None:
    with pytest.raises(UserError) as info:
        load_hosts(_write(tmp_path / "h.yaml", doc))
    assert expected in str(info.value) and "\n" not in str(info.value)



def test_ended_sessions_leave_the_connection_up(hosts: sshd.SshHosts, tmp_path: Path) -> None:
    """A session is ended by its program, not by closing the channel from this side: asyncssh
    fails an assertion when the server's EOF races a local close and drops the connection with
    every session on it (a load worker's "SSH connection closed" mid-run). `cat` exits at once
    at end of input, which makes that race the common case."""
    path = _write(tmp_path / "hosts.yaml", {"known_hosts": None, "hosts": [
        {"name": "h", "address": hosts.addresses[0], "user": "root", "key": str(hosts.key),
         "roles": ["broker"]}]})
    hosts_file = load_hosts(path)

    async def echo_once(conn: Any) -> bytes:
        process = await conn.create_process("cat", encoding=None)
        process.stdin.write(b"ping\n")
        line = await process.stdout.readline()
        await end_session(process)
        return line

    async def sessions() -> tuple[list[bytes], str]:
        conn = await login(hosts_file, hosts_file.hosts[0])
        assert not isinstance(conn, HostStatus), conn.line()
        try:
            lines = []
            for _ in range(8):
                lines += await asyncio.gather(*(echo_once(conn) for _ in range(4)))
            _, rtt = await measure_clock(hosts_file, conn)
            assert rtt > 0
            return lines, str((await conn.run("echo still-up", check=True)).stdout).strip()
        finally:
            conn.close()

    assert asyncio.run(sessions()) == ([b"ping\n"] * 32, "still-up")
