"""The workload key rtt_ms: validation (one line naming the key), cells per round-trip time,
and the shipped sweep files."""

from __future__ import annotations

from typing import Any

import pytest

from harness.driver import plan
from harness.studies.rtt import RTT
from harness.workload import WorkloadError, load_workload, parse_workload


def doc(**extra: Any) -> dict[str, Any]:
    return {"name": "w", "network": "netns",
            "cells": [{"table": "rtt", "msg_sizes": [32], "batches": [20]}], **extra}


def test_each_round_trip_time_is_a_cell_of_its_own() -> None:
    wl = parse_workload(doc(rtt_ms=[0, 0.5, 10], rate=[1000]))
    cells = plan.cells(wl)
    assert [c.cell_id for c in cells] == ["rtt-32B-b20-r1000-rtt0", "rtt-32B-b20-r1000-rtt0.5",
                                          "rtt-32B-b20-r1000-rtt10"]
    assert [c.rtt_ms for c in cells] == [0.0, 0.5, 10.0]
    assert {c.base_id for c in cells} == {"rtt-32B-b20"}
    assert plan.cells(parse_workload(doc()))[0].rtt_ms is None


@pytest.mark.parametrize(("extra", "message"), [
    ({"rtt_ms": [1, -1]}, r"rtt_ms: must be round-trip times in \[0, 1000\] ms, got -1"),
    ({"rtt_ms": "fast"}, "rtt_ms: must be round-trip times"),
    ({"rtt_ms": [True]}, "rtt_ms: must be round-trip times"),
    ({"rtt_ms": [1, 1]}, "rtt_ms: lists 1 twice"),
    ({"rtt_ms": [1], "network": "loopback"}, "rtt_ms: the delay is put between network "
                                             "namespaces: give network: netns"),
    ({"rtt_ms": [1], "rate_search": {"start": 1000}, "duration_s": 5,
      "scenarios": ["streaming"]}, "rtt_ms: applies to the paper's sessions"),
])
def test_bad_round_trip_times_are_one_line(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(WorkloadError, match=message) as exc:
        parse_workload(doc(**extra), "rtt.yaml")
    assert str(exc.value).startswith("rtt.yaml: rtt_ms: ") and "\n" not in str(exc.value)


@pytest.mark.parametrize("name", ["rtt", "rtt-smoke"])
def test_shipped_sweeps_load(name: str) -> None:
    wl = load_workload(name).workload
    rtts = wl.study(RTT)
    assert wl.network == "netns" and rtts and rtts[0] == 0
    assert all(c.cell_id.endswith(f"-rtt{c.rtt_ms:g}") for c in plan.cells(wl))
