"""The workload keys of the security and QoS measurements: ``security`` (swept like a policy,
one cluster per architecture and level, interleaved), ``metrics`` and a cell group's own
``messages``; and the plan that follows from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cluster.certs import (
    SECURITY_LEVELS,
    THROWAWAY_MECHANISMS,
    RunSecurity,
    cluster_settings,
)
from harness.driver import kinds, plan
from harness.studies import security
from harness.studies.qos import QOS, Sampling
from harness.studies.security import SECURITY
from harness.workload import WorkloadError, parse_workload

MINIMAL = {"name": "t", "cells": [{"table": "qos", "msg_sizes": [100], "batches": [1]}]}


def with_(**changes: object) -> dict[str, object]:
    return {**MINIMAL, **changes}


def test_defaults_are_plaintext_without_metrics():
    wl = parse_workload(MINIMAL)
    assert wl.study(SECURITY) is None and wl.study(QOS) is None
    assert security.levels(wl.study(SECURITY)) == ("none",)
    assert [s.security for s in plan.sides(wl, arches=("zk", "dsbs"))] == ["none", "none"]


def test_a_security_sweep_interleaves_every_cluster_in_one_epoch():
    wl = parse_workload(with_(security=["none", "sasl_ssl"], tries=2, scenarios=["split"]))
    sides = plan.sides(wl, arches=("zk", "dsbs"))
    assert [(s.arch, s.security) for s in sides] == [
        ("zk", "none"), ("dsbs", "none"), ("zk", "sasl_ssl"), ("dsbs", "sasl_ssl")]
    assert [s.label for s in sides] == ["security=none"] * 2 + ["security=sasl_ssl"] * 2
    (epoch,) = kinds.schedule(wl, sides)
    assert [str(k) for k in epoch.clusters] == ["zk", "dsbs", "zk (sasl_ssl)", "dsbs (sasl_ssl)"]
    assert epoch.arches == ("zk", "dsbs")
    order = [(s.try_no, s.side.index) for s in epoch.sessions]
    # A B C D on the first try, D C B A on the second.
    assert order == [(1, 0), (1, 1), (1, 2), (1, 3), (2, 3), (2, 2), (2, 1), (2, 0)]


def test_one_security_level_is_not_a_sweep():
    wl = parse_workload(with_(security="tls"))
    (side,) = plan.sides(wl)
    assert (side.security, side.label, str(side.cluster)) == ("tls", "", "zk (tls)")


def test_a_cell_groups_messages_are_cells_of_their_own():
    wl = parse_workload(with_(producers=1, consumers=1, partitions=1, cells=[
        {"table": "qos", "msg_sizes": [100], "batches": [1], "messages": [100, 10_000]},
        {"table": "other", "msg_sizes": [32], "batches": [20]}]))
    cells = plan.cells(wl)
    assert [c.cell_id for c in cells] == ["qos-100B-b1-m100", "qos-100B-b1-m10000",
                                          "other-32B-b20"]
    assert [c.messages for c in cells] == [100, 10_000, None]
    # With a rate too, the rate stays last: the analysis tells open-loop cells by it.
    rated = parse_workload(with_(rate=50, cells=[
        {"table": "qos", "msg_sizes": [100], "batches": [1], "messages": [300]}]))
    assert [c.cell_id for c in plan.cells(rated)] == ["qos-100B-b1-m300-r50"]


def test_metrics_parse():
    wl = parse_workload(with_(metrics=True, metrics_interval_s=0.5))
    assert wl.study(QOS) == Sampling(0.5)


FAULTS = {"rate": 100, "duration_s": 4,
          "cases": [{"name": "k", "schedule": [{"at_s": 1, "action": "kill", "broker": 0}]}]}


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (with_(security="ssl"), "security: must be one of none, tls, sasl_ssl, got 'ssl'"),
        (with_(security=["none", "none"]), "security: lists 'none' twice"),
        (with_(security="tls", faults=FAULTS),
         "security: fault sessions connect in plaintext"),
        (with_(metrics="yes"), "metrics: must be true or false, got 'yes'"),
        (with_(metrics_interval_s=2), "metrics_interval_s: only applies with metrics: true"),
        (with_(metrics=True, metrics_interval_s=0.001),
         "metrics_interval_s: must be between 0.05 and 60 s"),
        (with_(metrics=True, faults=FAULTS), "metrics: sampled during split and streaming"),
        (with_(cells=[{"table": "q", "msg_sizes": [8], "batches": [1], "messages": [2]}]),
         "cells[0].messages: 2 messages cannot feed 3 producers"),
        (with_(cells=[{"table": "q", "msg_sizes": [8], "batches": [1], "messages": [0]}]),
         "cells[0].messages: must be an integer between 1 and 100000000, got 0"),
        (with_(rate=10, scenarios=["streaming"], duration_s=5,
               cells=[{"table": "q", "msg_sizes": [8], "batches": [1], "messages": [100]}]),
         "cells[0].messages: a cell group's messages do not apply here: time-bounded"),
    ],
)
def test_bad_keys_give_one_clear_line(doc, expected):
    with pytest.raises(WorkloadError) as info:
        parse_workload(doc, "t.yaml")
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_every_level_maps_to_a_listener_protocol():
    root = Path("/run/twinbench-test")  # never touched: the settings only name the files
    files = RunSecurity(root / "s.pem", root / "ca.pem", root / "users")
    assert cluster_settings("none", None) == {}
    assert {lvl: cluster_settings(lvl, files).get("security_protocol", "PLAINTEXT")
            for lvl in SECURITY_LEVELS} == SECURITY_LEVELS
    sasl = cluster_settings("sasl_ssl", files)
    assert sasl["sasl_mechanisms"] == THROWAWAY_MECHANISMS
    assert sasl["sasl_mechanisms"][0] == "SCRAM-SHA-512"
    assert (sasl["ssl_ca_location"], sasl["sasl_credentials_file"]) == (files.ca_pem,
                                                                        files.credentials)
