"""Dedicated Raft controllers (harness/services/raft_controllers.py) and the raft-dc entry:
the membership the service plans, the endpoint that carries it, the brokers' command lines,
and the coordination columns summed over brokers and controllers. No process starts here."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from brokers.core.errors import UserError
from harness.architectures.entry import Launch
from harness.architectures.raft import RAFT_DC
from harness.cluster.spec import ClusterSpec
from harness.driver.counters import pick
from harness.services import raft_controllers as rc
from harness.services.api import ServicePlace


def test_a_sum_of_sources_is_known_only_when_every_term_is() -> None:
    parts: dict[str, dict[str, int | float | None]] = {
        "coordinator": {"raft_messages_out": 10}, rc.NAME: {"raft_messages_out": 90}}
    assert pick("coordinator:raft_messages_out", parts) == 10
    assert pick(RAFT_DC.coordination.messages, parts) == 100
    parts[rc.NAME]["raft_messages_out"] = None  # a controller restarted during the session
    assert pick(RAFT_DC.coordination.messages, parts) is None
    assert pick(f"coordinator:raft_messages_out+{rc.NAME}:nothing", parts) is None


@pytest.mark.filesystem
@pytest.mark.parametrize("netns", [False, True])
def test_the_service_plans_every_members_address_and_a_private_key(
        tmp_path: Path, netns: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = iter(range(40000, 40100))
    monkeypatch.setattr(rc, "free_ports", lambda n, host="127.0.0.1": [next(taken)
                                                                       for _ in range(n)])
    brokers = ("198.18.1.10", "198.18.1.11", "198.18.1.12") if netns else ("127.0.0.1",) * 3
    place = ServicePlace(tmp_path, host="198.18.0.1" if netns else None, brokers=brokers)
    m = rc.plan(rc.RaftControllersOptions(nodes=3), place)
    assert list(m.controllers) == [1000, 1001, 1002]
    assert {h for h, _ in m.controllers.values()} == {"198.18.0.1" if netns else "127.0.0.1"}
    assert list(m.brokers) == [0, 1, 2]
    assert [h for h, _ in m.brokers.values()] == list(brokers)
    ports = [p for _, p in m.brokers.values()]
    if netns:
        assert ports == [rc.NETNS_RAFT_PORT] * 3  # each namespace has its own address
    else:
        assert len(set(ports) | {p for _, p in m.controllers.values()}) == 6
    assert stat.S_IMODE(m.key_file.stat().st_mode) == 0o600
    assert len(m.key_file.read_text()) == 64
    assert rc.decode_endpoint(rc.encode_endpoint(m)) == m
    assert m.voters == "1000,1001,1002"
    assert m.peers.startswith("1000=") and ",0=" in m.peers


@pytest.mark.filesystem
def test_raft_dc_brokers_are_learners_of_the_services_quorum(tmp_path: Path) -> None:
    # Real free ports of this machine (loopback): the one bind this module does.
    place = ServicePlace(tmp_path, brokers=("127.0.0.1",) * 3)
    m = rc.plan(rc.RaftControllersOptions(nodes=3), place)
    spec = ClusterSpec("raft-dc", brokers=3, flush="os")
    launch = Launch(spec.settings(), spec.arch_options(), tmp_path, ("127.0.0.1",) * 3, False,
                    {rc.NAME: rc.encode_endpoint(m)})
    from harness.architectures.entry import Node

    command = RAFT_DC.command(launch)
    for node_id in range(3):
        process = command(Node(node_id, "127.0.0.1", 0, tmp_path / f"b{node_id}", "python",
                               None))
        argv = list(process.argv)
        assert argv[argv.index("--raft") + 1] == "{}:{}".format(*m.brokers[node_id])
        assert argv[argv.index("--voters") + 1] == "1000,1001,1002"
        assert argv[argv.index("--raft-peers") + 1] == m.peers
        key = Path(argv[argv.index("--raft-key-file") + 1])
        assert key.read_text() == m.key_file.read_text()
        assert not process.voter
    assert RAFT_DC.services == (rc.NAME,) and not RAFT_DC.compared and not RAFT_DC.quorum


def test_dedicated_controllers_refuse_remote_hosts() -> None:
    with pytest.raises(UserError, match="this machine only"):
        rc.RAFT_CONTROLLERS.check(rc.RaftControllersOptions(), "loopback", True)
    with pytest.raises(UserError, match=r"raft-controllers\.nodes"):
        rc.RaftControllersOptions.parse({"nodes": 2}, "raft-controllers")


def test_controller_faults_go_through_the_service_on_raft_dc() -> None:
    from harness.driver import kinds, plan
    from harness.workload import parse_workload

    def case(name: str, opener: dict[str, object], closer: dict[str, object]
             ) -> dict[str, object]:
        return {"name": name, "schedule": [{"at_s": 2, **opener}, {"at_s": 4, **closer}]}

    wl = parse_workload({
        "name": "f", "network": "netns",
        "cells": [{"table": "faults", "msg_sizes": [32], "batches": [20]}],
        "faults": {"rate": 1000, "duration_s": 10, "cases": [
            case("leader", {"action": "kill", "broker": "leader:0"},
                 {"action": "restart", "broker": "leader:0"}),
            case("controller", {"action": "kill", "broker": "controller"},
                 {"action": "restart", "broker": "controller"}),
            case("voter", {"action": "kill", "broker": "voter"},
                 {"action": "restart", "broker": "voter"}),
            case("quorum", {"action": "kill-raft-controller"},
                 {"action": "start-raft-controller"})]}}, "f.yaml")
    (epoch,) = kinds.schedule(wl, plan.sides(wl, arches=("raft", "raft-dc")))
    ran = {(s.side.arch, s.case.name) for s in epoch.sessions if s.case is not None}
    assert ran == {("raft", "leader"), ("raft", "controller"), ("raft", "voter"),
                   ("raft-dc", "leader"), ("raft-dc", "quorum")}
