"""The study registry (harness/studies/): every entry is complete, no two own a key or a
run-log table, and a further study is one entry away: one defined here reads its own key of a
workload file, refuses what it cannot do, and reaches the manifest, with nothing else edited."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

import twinbench_common.runlog as fmt
from brokers.core.errors import UserError
from harness import studies
from harness.driver import runner
from harness.schema import Ctx
from harness.studies.study import Study
from harness.workload import Workload, WorkloadError, parse_workload

MINIMAL = {"name": "t", "cells": [{"table": "size_grid", "msg_sizes": [32], "batches": [20]}]}
# The tables every session writes (the paper's core); every other belongs to one study.
CORE_TABLES = {t.name for t in (fmt.RECORDS, fmt.COORDINATION, fmt.LATENCY, fmt.COUNTERS,
                                fmt.SERIES)}


def test_every_entry_is_complete_and_owns_its_keys_alone() -> None:
    core = {f.name for f in dataclasses.fields(Workload)} | {"policies"}
    seen: dict[str, str] = {}
    for name in studies.REGISTRY:
        entry = studies.get(name)
        assert entry.name == name and entry.keys and entry.summary
        for key in entry.keys:
            assert key not in core, (name, key)
            assert key not in seen, (name, key, seen.get(key))
            seen[key] = name
        # Without its keys a workload does not use it, and the manifest still names them.
        assert entry.parse(Ctx("t.yaml"), MINIMAL, {}) is None
        assert set(entry.manifest(None)) >= set(entry.keys) - {"metrics_interval_s"}


def test_every_table_is_the_cores_or_one_studys() -> None:
    owners: dict[str, str] = {}
    for entry in studies.entries():
        for table in entry.tables:
            assert table.name not in owners, (table.name, owners.get(table.name))
            owners[table.name] = entry.name
    assert {t.name for t in fmt.TABLES} == CORE_TABLES | set(owners)


# --- a further study is one entry ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Notes:
    text: str


def _parse(ctx: Ctx, data: Mapping[str, Any], core: Mapping[str, Any]) -> Notes | None:
    if "notes" not in data:
        return None
    if not isinstance(data["notes"], str):
        raise ctx.fail("notes", "must be text")
    return Notes(data["notes"])


NOTES: Study[Notes] = Study(
    name="notes", summary="free text beside a run (a test's study)", keys=("notes",),
    parse=_parse, manifest=lambda n: {"notes": None if n is None else n.text},
    refuse_external=lambda n: "notes are for clusters twinbench starts",
    broker_args=lambda n: ("--log-level", "DEBUG"))


def test_a_new_study_reads_its_key_and_reaches_the_manifest() -> None:
    with pytest.raises(WorkloadError, match=r"t.yaml: notes: unknown key"):
        parse_workload({**MINIMAL, "notes": "x"}, "t.yaml")
    with studies.registered(NOTES):
        wl = parse_workload({**MINIMAL, "notes": "hello"}, "t.yaml")
        assert wl.study(NOTES) == Notes("hello")
        assert wl.as_dict()["notes"] == "hello"
        assert runner.broker_settings(wl) == ("--log-level", "DEBUG")
        with pytest.raises(UserError, match=r"workload t: notes are for clusters twinbench"):
            runner._check_external(wl)
        with pytest.raises(WorkloadError, match=r"t.yaml: notes: must be text"):
            parse_workload({**MINIMAL, "notes": 3}, "t.yaml")
        assert parse_workload(MINIMAL, "t.yaml").as_dict()["notes"] is None
    assert "notes" not in {e.name for e in studies.entries()}
