"""Synthetic run directories in the documented format (docs/result-format.md, versions 1, 2).

Three users: the committed test fixtures (exact, hand-computable values), the scale benchmark
(millions of noisy rows), and regression tests (perturbed ratios). Writing them through one
module keeps every synthetic run honest to the contract: if the format changes, this is the one
writer to update, and the loader's header checks catch a mismatch.

``write_run`` writes format 1 (the committed fixtures) or format 2 (then with header-only fault
files, as a workload without faults leaves them); ``write_fault_run`` writes a format-2 fault
workload's run: records.csv rows of scenario ``faults`` and the three fault files, from
``FaultCase`` schedules and a value function (``fault_fixture_value`` gives round numbers).
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from hdrh.histogram import HdrHistogram

from spark_analysis.archs import BUILTIN
from spark_analysis.schema import MANIFEST_KIND
from twinbench_common import runlog as fmt
from twinbench_common.runlog import Table
from twinbench_common.runlog.manifest import FORMAT_VERSION, current_versions


def names(table: Table, format_version: int) -> tuple[str, ...]:
    """The header of ``table`` in a run of ``format_version`` (from 9 on: the current one)."""
    return table.names(table.by_format.get(format_version, table.version)
                       if format_version < FORMAT_VERSION else None)


# The current headers, and the oldest ones (format 1) some writers below produce.
RECORDS_COLUMNS = fmt.RECORDS.names()
RECORDS_COLUMNS_V1 = fmt.RECORDS.names(1)
COORDINATION_COLUMNS = fmt.COORDINATION.names()
COORDINATION_COLUMNS_V1 = fmt.COORDINATION.names(1)
COUNTER_COLUMNS = fmt.COUNTERS.names()
FAULTS_COLUMNS = fmt.FAULTS.names()
FAULT_EVENTS_COLUMNS = fmt.FAULT_EVENTS.names()
TIMELINE_COLUMNS = fmt.TIMELINE.names()
SERIES_COLUMNS = fmt.SERIES.names()
RATE_SEARCH_COLUMNS = fmt.RATE_SEARCH.names()
MAX_RATE_COLUMNS = fmt.MAX_RATE.names()
METADATA_COLUMNS = fmt.METADATA.names()

# The two twins the synthetic runs stand for (the paper's pair; the harness's registry has
# them): ZK, the baseline, with its ZooKeeper; DSBS, gossip only.
ZK, DSBS = (a.name for a in BUILTIN)
SCENARIOS = ("split", "streaming")
ROLES = ("production", "consumption")


@dataclass(frozen=True)
class Cell:
    table: str
    msg_size: int
    batch: int
    offset_commit: str = "every_fetch"
    metadata_check: str = "per_request"

    @property
    def cell_id(self) -> str:
        base = f"{self.table}-{self.msg_size}B-b{self.batch}"
        if self.table == "policy":
            # The policy sweep repeats size and batch; the policy makes the cell distinct.
            return f"{base}-{self.offset_commit}-{self.metadata_check}"
        return base


PAPER_CELLS: tuple[Cell, ...] = (
    *(Cell("size_grid", s, 20) for s in (8, 16, 32, 64, 128)),
    *(Cell("batch_sweep", 32, b) for b in (1, 20, 50)),
)
KB_CELLS: tuple[Cell, ...] = tuple(Cell("kb_grid", 1024 << i, 20) for i in range(8))
POLICY_CELLS: tuple[Cell, ...] = tuple(
    Cell("policy", 32, 20, oc, mc)
    for oc in ("every_fetch", "interval_ms:1000", "none")
    for mc in ("per_request", "cached")
)

# rps for (arch, label, cell, scenario, role, try)
ValueFn = Callable[[str, str, Cell, str, str, int], float]


def run_id_for(arch: str, workload: str, index: int, hour: int = 9) -> str:
    return f"20261121T{hour:02d}0000Z-{arch}-{workload}-{index:06x}"


def manifest(run_id: str, arch: str, label: str, workload: str, *, seed: int = 1,
             incomplete: bool = False, failed_cells: Iterable[str] = (),
             format_version: int = 1, labels: bool = False) -> dict[str, object]:
    """``labels``: with the ``architectures`` key (format 2 since the harness's registry wrote
    it; without, a format-2 run written before)."""
    kind = arch.partition("@")[0]  # a regression's base arm ("zk@base") is its architecture
    data: dict[str, object] = {
        "format_version": format_version, "kind": MANIFEST_KIND, "run_id": run_id,
        "arch": arch,
        "label": label, "workload_name": workload, "workload": {"name": workload},
        "workload_text": f"name: {workload}\n",
        "policies": {"offset_commit": "every_fetch", "metadata_check": "per_request",
                     "flush": "os"},
        "cluster": {"brokers": 3, "partitions": 3, "zk_nodes": 1 if kind == ZK else None,
                    "gossip_preset": "lan" if kind == DSBS else None, "start_seconds": 1.0},
        "versions": {"twinbench": "0.1.0", "python": "3.11", "uvloop": "0.23.0",
                     "kazoo": "2.11.0", "zookeeper": "3.8" if kind == ZK else None},
        "host": {"cpu_model": "synthetic", "cpu_count": 2, "platform": "linux",
                 "placement": None},
        "git": {"commit": None, "dirty": False},
        "seed": seed, "started_at": "2026-11-21T09:00:00Z", "finished_at": "2026-11-21T09:10:00Z",
        "incomplete": incomplete, "failed_cells": list(failed_cells),
    }
    if format_version >= FORMAT_VERSION:
        data["tables"] = current_versions(fmt.TABLES)
    if format_version >= 2:
        cluster = data["cluster"]
        assert isinstance(cluster, dict)
        cluster.update(network="loopback", zk_session_timeout_ms=None)
        data["run_arches"] = [arch]
        if labels:
            data["architectures"] = {
                a.name: {k: v for k, v in dataclasses.asdict(a).items() if k != "name"}
                for a in BUILTIN if a.name == arch}
    return data


def _fmt(v: float) -> str:
    # Four decimals (as a driver rounding to 0.1 ms would), integers without ".0": the fixtures
    # stay readable and free of binary-float noise such as 880.0000000000001.
    v = round(float(v), 4)
    return str(int(v)) if v == int(v) else repr(v)


def records_line(run_id: str, arch: str, label: str, cell: Cell, scenario: str, role: str,
                 try_: int, rps: float, *, messages: int = 30_000, status: str = "ok") -> str:
    """One records.csv row of formats 1 and 2 (no newline) for a try that moved ``messages``
    records at ``rps``."""
    wall = messages / rps
    kbps = rps * cell.msg_size / 1000
    # Latency of one request of `batch` records when clients keep one request in flight each:
    # a simple, monotone model so percentiles look like percentiles.
    base = 1e6 * cell.batch / rps
    lat = (base, base * 1.5, base * 3, base * 6, base * 10)
    consumption = role == "consumption"
    e2e = (_fmt(base * 4), _fmt(base * 20)) if consumption else ("", "")
    fields = [
        run_id, arch, label, cell.cell_id, cell.table, scenario, role, str(cell.msg_size),
        str(cell.batch), str(try_), "2", str(messages), str(messages * cell.msg_size),
        _fmt(wall), _fmt(rps), _fmt(kbps), *(_fmt(x) for x in lat), *e2e,
        "0" if consumption else "", "0" if consumption else "", "0" if consumption else "", "0",
        cell.offset_commit, cell.metadata_check, status,
    ]
    return ",".join(fields)


def coordination_line(run_id: str, arch: str, label: str, cell: Cell, scenario: str, try_: int,
                      *, messages: int = 30_000, per_1000: float = 5.0,
                      broker_cpu: float = 1.0) -> str:
    zk = arch.partition("@")[0] == ZK  # a base arm ("zk@base") too
    ops = round(messages / 1000 * per_1000)
    fields = [
        run_id, arch, label, cell.cell_id, cell.table, scenario, str(cell.msg_size),
        str(cell.batch), str(try_), str(messages),
        str(ops) if zk else "", "" if zk else str(ops), str(ops),
        _fmt(broker_cpu), _fmt(broker_cpu / 4) if zk else "",
    ]
    return ",".join(fields)


def latency_histogram(median_us: float, n: int = 200, seed: int = 0) -> str:
    """An encoded HDR histogram of ``n`` log-normal samples around ``median_us``."""
    rng = random.Random(seed)
    hist = HdrHistogram(1, 60_000_000, 3)
    for _ in range(n):
        hist.record_value(max(1, min(60_000_000, int(median_us * math.exp(rng.gauss(0, 0.5))))))
    return hist.encode().decode("ascii")


FAULT_FILES = (("faults.csv", FAULTS_COLUMNS), ("fault_events.csv", FAULT_EVENTS_COLUMNS),
               ("timeline.csv", TIMELINE_COLUMNS))


def _write_fault_files(run_dir: Path, rows: dict[str, list[str]] | None = None) -> None:
    """The three format-2 fault files: a header, then ``rows[name]`` (header-only without)."""
    for name, columns in FAULT_FILES:
        lines = [",".join(columns), *(rows or {}).get(name, [])]
        (run_dir / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_run(root: Path, *, arch: str, label: str, workload: str, index: int,
              cells: Iterable[Cell], tries: int, value: ValueFn, hour: int = 9,
              latency_tries: int | None = None, messages: int = 30_000,
              coordination_per_1000: Callable[[str, Cell, str], float] | None = None,
              format_version: int = 1, labels: bool = False, counters: bool = False) -> Path:
    """Write one complete run directory and return its path (format 2: header-only fault
    files, as a run of a workload without faults). ``counters``: with counters.csv too (the
    optional file the regression's exact layer reads): per session, the coordination count
    under the twin's counter name (zk_requests, gossip_packets_out) and coordination_ops."""
    cells = tuple(cells)
    run_id = run_id_for(arch, workload, index, hour)
    run_dir = root / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "manifest.json").write_text(
        json.dumps(manifest(run_id, arch, label, workload, seed=index,
                            format_version=format_version, labels=labels), indent=2) + "\n",
        encoding="utf-8")
    if format_version >= 2:
        _write_fault_files(run_dir)
    # A regression run's base arm ("zk@base") counts as its architecture does.
    kind = arch.partition("@")[0]
    per_1000 = coordination_per_1000 or (lambda a, c, s: 20.0 if a.partition("@")[0] == ZK
                                         else 2.0)
    with (run_dir / "records.csv").open("w", encoding="utf-8", newline="") as rec, \
            (run_dir / "coordination.csv").open("w", encoding="utf-8", newline="") as coord:
        # Formats 1 and 2 end at `status`; the later formats' extra columns stay empty here.
        columns = names(fmt.RECORDS, format_version)
        rec.write(",".join(columns) + "\n")
        pad = "," * (len(columns) - len(RECORDS_COLUMNS_V1))
        coord_columns = names(fmt.COORDINATION, format_version)
        coord.write(",".join(coord_columns) + "\n")
        coord_pad = "," * (len(coord_columns) - len(COORDINATION_COLUMNS_V1))
        lines: list[str] = []
        clines: list[str] = []
        tlines: list[str] = []
        for try_ in range(1, tries + 1):
            for cell in cells:
                for scenario in SCENARIOS:
                    for role in ROLES:
                        rps = value(arch, label, cell, scenario, role, try_)
                        lines.append(records_line(run_id, arch, label, cell, scenario, role,
                                                  try_, rps, messages=messages) + pad)
                    clines.append(coordination_line(
                        run_id, arch, label, cell, scenario, try_, messages=messages,
                        per_1000=per_1000(arch, cell, scenario)) + coord_pad)
                    if counters:
                        ops = round(messages / 1000 * per_1000(arch, cell, scenario))
                        name = "zk_requests" if kind == ZK else "gossip_packets_out"
                        key = f"{run_id},{arch},{label},{cell.cell_id},{scenario},{try_}"
                        tlines.extend(f"{key},coordinator,{n},{ops}"
                                      for n in (name, "coordination_ops"))
            if len(lines) >= 50_000:  # bounded memory for the scale benchmark
                rec.write("\n".join(lines) + "\n")
                coord.write("\n".join(clines) + "\n")
                lines.clear()
                clines.clear()
        if lines:
            rec.write("\n".join(lines) + "\n")
        if clines:
            coord.write("\n".join(clines) + "\n")
    if counters:
        (run_dir / "counters.csv").write_text(
            ",".join(COUNTER_COLUMNS) + "\n" + "".join(f"{t}\n" for t in tlines),
            encoding="utf-8")
    with (run_dir / "latency.jsonl").open("w", encoding="utf-8") as lat:
        for try_ in range(1, min(tries, latency_tries or tries) + 1):
            for cell in cells:
                for scenario in SCENARIOS:
                    for role in ROLES:
                        rps = value(arch, label, cell, scenario, role, try_)
                        tag = f"{arch}{label}{cell.cell_id}{scenario}{role}{try_}"
                        seed = zlib.crc32(tag.encode())
                        obj = {"run_id": run_id, "cell_id": cell.cell_id, "scenario": scenario,
                               "role": role, "try": try_, "kind": "request", "unit": "us",
                               "count": 200,
                               "histogram": latency_histogram(1e6 * cell.batch / rps, seed=seed)}
                        lat.write(json.dumps(obj) + "\n")
    return run_dir


# --- fault sessions (format 2) ------------------------------------------------------------------


@dataclass(frozen=True)
class FaultCase:
    """A fault workload's case: one opener and its closer, on one target."""

    name: str
    opener: str          # kill, pause, partition, stop-zookeeper
    closer: str          # restart, resume, heal, start-zookeeper
    target: str          # as the schedule writes it: leader:0, broker:1, zookeeper
    opener_s: float = 3.0
    closer_s: float = 6.0
    zk_only: bool = False

    @property
    def broker(self) -> bool:
        return not self.opener.endswith("zookeeper")


FAULT_CASES: tuple[FaultCase, ...] = (
    FaultCase("kill-leader", "kill", "restart", "leader:0"),
    FaultCase("pause-broker", "pause", "resume", "broker:1"),
    FaultCase("stop-zookeeper", "stop-zookeeper", "start-zookeeper", "zookeeper", zk_only=True),
)
FAULT_CELL = Cell("faults", 32, 20)
# Sessions: production phase length (s), target rate (records/s), timeline bucket width (s).
FAULT_DURATION_S = 10.0
FAULT_RATE = 1000.0
FAULT_BUCKET_S = 0.1
FAULT_PARTITIONS = 3

# (arch, case, try) -> faults.csv values that vary (durations, counters); None = empty field.
FaultValueFn = Callable[[str, FaultCase, int], dict[str, float | int | None]]


def fault_fixture_value(arch: str, case: FaultCase, try_: int) -> dict[str, float | int | None]:
    """Round numbers a test can check by hand. Broker faults: ZK detects in 1.0, 1.5, 2.0 s
    (mean 1.5, sd 0.5) and DSBS in twice that; rejoin 0.5 s + 0.1 s per try on both;
    unavailability = the outage (closer - opener = 3 s) plus detection on the partition the
    target led; group recovery 0 for a pause (the probe group never noticed) and 4 s for a kill.
    ZooKeeper faults: no detection (no broker was hit), unavailability 0.2 s, no group upset.
    Nothing lost, no duplicates."""
    k = try_ - 1
    if not case.broker:
        return {"detection_s": None, "rejoin_s": 0.5, "produce_gap_s": 0.2,
                "consume_gap_s": 0.25, "commit_gap_s": 0.3, "group_recovery_s": 0.0,
                "lost": 0, "duplicates": 0, "unreachable": 0, "produce_errors": 0}
    detection = (1.0 + 0.5 * k) * (2 if arch == DSBS else 1)
    outage = case.closer_s - case.opener_s
    return {"detection_s": detection, "rejoin_s": 0.5 + 0.1 * k,
            "produce_gap_s": outage + detection, "consume_gap_s": outage + detection + 0.1,
            "commit_gap_s": outage + 0.2, "group_recovery_s": 0.0 if case.opener == "pause"
            else 4.0, "lost": 0, "duplicates": 0, "unreachable": 0, "produce_errors": 0}


def _field(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "True" if v else "False"  # what the run log writer's csv module writes
    if isinstance(v, float):
        return _fmt(v)
    return str(v)


def fault_session_rows(run_id: str, arch: str, label: str, case: FaultCase, try_: int,
                       values: dict[str, float | int | None]) -> dict[str, list[str]]:
    """One session's lines for faults.csv, fault_events.csv and timeline.csv.

    The timeline is what such a session looks like: FAULT_RATE records/s spread over
    FAULT_PARTITIONS partitions; a broker fault silences the target's partition from the fault
    until the closer plus rejoin (no replication), consumption follows one bucket later; one
    commit per bucket except while the group recovers."""
    cell = FAULT_CELL
    jitter = 0.01 * try_  # the injector is never exactly on time
    opener_at = case.opener_s + jitter
    closer_at = case.closer_s + 2 * jitter
    session = [run_id, arch, label, cell.cell_id, case.name, str(try_)]
    target_node = 0 if case.broker else None
    sent = int(FAULT_RATE * FAULT_DURATION_S)
    buckets = round(FAULT_DURATION_S / FAULT_BUCKET_S)
    per_bucket = FAULT_RATE * FAULT_BUCKET_S
    back_at = closer_at + float(values.get("rejoin_s") or 0.0)
    recovery = float(values.get("group_recovery_s") or 0.0)
    produced: list[int] = []
    for b in range(buckets):
        t = b * FAULT_BUCKET_S
        silent = case.broker and opener_at <= t < back_at
        produced.append(round(per_bucket * (FAULT_PARTITIONS - 1) / FAULT_PARTITIONS)
                        if silent else round(per_bucket))
    acked = sum(produced)
    lost = int(values.get("lost") or 0)
    dup = int(values.get("duplicates") or 0)
    consumed = acked - lost + dup
    timeline = []
    for b in range(buckets):
        t = b * FAULT_BUCKET_S
        cons = produced[b - 1] if b else 0
        if b == buckets - 1:
            cons += produced[b] - lost + dup  # the consumers catch up at the end
        commits = 0 if opener_at <= t < opener_at + recovery else 1
        timeline.append(",".join([*session, _fmt(t), _fmt(FAULT_BUCKET_S), str(produced[b]),
                                  str(cons), str(commits)]))
    row: dict[str, object] = {
        "target_node": target_node, "target_role": case.target if case.broker else "zookeeper",
        "was_controller": False if case.broker else None,
        "was_coordinator": (case.opener == "kill") if case.broker else None,
        "fault_at_s": opener_at, "closer_at_s": closer_at,
        "produce_gap_partition": 0 if case.broker else 1,
        "group_unstable_s": values.get("group_recovery_s"),
        "group_rebalances": 1 if float(values.get("group_recovery_s") or 0) > 0 else 0,
        "rate": FAULT_RATE, "duration_s": FAULT_DURATION_S, "sent": sent, "acked": acked,
        "consumed": consumed, "offset_commit": cell.offset_commit,
        "metadata_check": cell.metadata_check, "status": "failed" if lost else "ok",
        **values,
    }
    faults_line = ",".join([*session, *(_field(row.get(c)) for c in FAULTS_COLUMNS[6:])])
    events = []
    for step, (action, planned, at) in enumerate(((case.opener, case.opener_s, opener_at),
                                                  (case.closer, case.closer_s, closer_at))):
        node = _field(target_node)
        took = 0.4 if action == "restart" else 0.001
        events.append(",".join([*session, str(step), action, case.target, node, _fmt(planned),
                                _fmt(at), _fmt(took), "ok"]))
    return {"faults.csv": [faults_line], "fault_events.csv": events, "timeline.csv": timeline}


def write_fault_run(root: Path, *, arch: str, workload: str = "faults", index: int,
                    tries: int, cases: Iterable[FaultCase] = FAULT_CASES,
                    value: FaultValueFn = fault_fixture_value, label: str = "",
                    hour: int = 9, labels: bool = False) -> Path:
    """A format-2 run of a fault workload: per try and case one session (cases marked zk_only
    are skipped on DSBS, as the driver skips them), its faults-scenario records.csv rows, a
    coordination.csv row and request-latency histograms, and the three fault files."""
    run_id = run_id_for(arch, workload, index, hour)
    run_dir = root / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "manifest.json").write_text(
        json.dumps(manifest(run_id, arch, label, workload, seed=index, format_version=2,
                            labels=labels), indent=2) + "\n", encoding="utf-8")
    cell = FAULT_CELL
    files: dict[str, list[str]] = {name: [] for name, _ in FAULT_FILES}
    records, coord, latency = [], [], []
    for try_ in range(1, tries + 1):
        for case in cases:
            if case.zk_only and arch != ZK:
                continue
            session = fault_session_rows(run_id, arch, label, case, try_,
                                         value(arch, case, try_))
            for name, lines in session.items():
                files[name] += lines
            acked = int(session["faults.csv"][0].split(",")[FAULTS_COLUMNS.index("acked")])
            rps = acked / FAULT_DURATION_S
            for role in ROLES:
                records.append(records_line(run_id, arch, label, cell, "faults", role, try_,
                                            rps, messages=acked))
                latency.append(json.dumps({
                    "run_id": run_id, "cell_id": cell.cell_id, "scenario": "faults",
                    "role": role, "try": try_, "kind": "request", "unit": "us", "count": 200,
                    "histogram": latency_histogram(5000.0, seed=try_)}))
            coord.append(coordination_line(run_id, arch, label, cell, "faults", try_,
                                           messages=acked))
    (run_dir / "records.csv").write_text(
        "\n".join([",".join(RECORDS_COLUMNS_V1), *records]) + "\n", encoding="utf-8")
    (run_dir / "coordination.csv").write_text(
        "\n".join([",".join(COORDINATION_COLUMNS_V1), *coord]) + "\n", encoding="utf-8")
    (run_dir / "latency.jsonl").write_text("".join(f"{x}\n" for x in latency), encoding="utf-8")
    _write_fault_files(run_dir, files)
    return run_dir


def _new_run(root: Path, arch: str, workload: str, index: int, hour: int, *,
             format_version: int) -> tuple[str, Path]:
    """A run directory with its manifest and header-only fault files: (run id, path)."""
    run_id = run_id_for(arch, workload, index, hour)
    run_dir = root / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "manifest.json").write_text(
        json.dumps(manifest(run_id, arch, "", workload, seed=index,
                            format_version=format_version), indent=2) + "\n", encoding="utf-8")
    _write_fault_files(run_dir)
    return run_id, run_dir


def write_metadata_run(root: Path, *, arch: str, workload: str = "metadata", index: int,
                       tries: int, sizes: Iterable[int] = (1, 10, 100), hour: int = 9
                       ) -> Path:
    """A format-5 run of a metadata workload: one topic-storm case at ``sizes``, one session
    per size and try (metadata.csv; every other file header-only, as the driver writes them).
    Convergence grows linearly with the size on zk and as its square root on dsbs; the
    coordination messages 50 (zk) and 8 (dsbs) per topic; tries scatter by 10%."""
    run_id, run_dir = _new_run(root, arch, workload, index, hour, format_version=5)
    for name, columns in (("records.csv", names(fmt.RECORDS, 5)),
                          ("coordination.csv", names(fmt.COORDINATION, 5)),
                          ("series.csv", SERIES_COLUMNS), ("rate_search.csv", RATE_SEARCH_COLUMNS),
                          ("max_rate.csv", names(fmt.MAX_RATE, 5))):
        (run_dir / name).write_text(",".join(columns) + "\n", encoding="utf-8")
    (run_dir / "latency.jsonl").write_text("", encoding="utf-8")
    columns = names(fmt.METADATA, 5)
    lines = [",".join(columns)]
    for n in sizes:
        for try_ in range(1, tries + 1):
            k = 1 + 0.1 * (try_ - (tries + 1) / 2)
            converge = (0.2 * n if arch == ZK else 0.02 * n ** 0.5) * k
            ops = (50 if arch == ZK else 8) * n
            row: dict[str, object] = dict.fromkeys(columns)
            row.update(run_id=run_id, arch=arch, label="", cell_id=f"topic-storm-n{n}",
                       case="topic-storm", kind="topic-storm", n=n, topics=n, partitions=3,
                       brokers=3, create_s=converge * 0.9, converge_s=converge,
                       metadata_p50_ms=0.5 * k, coordination_ops=ops,
                       rss_max_bytes=30_000_000 + 1000 * n, idle_s=5.0,
                       idle_ops_per_s=0.0 if arch == ZK else 3.0, status="ok",
                       **{"try": try_},
                       **({"zk_requests": ops + 1} if arch == ZK else {"gossip_packets": ops}))
            lines.append(",".join(_field(row[c]) for c in columns))
    (run_dir / "metadata.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run_dir


# Round-trip-time sweeps (format 6): work at rtt 0 (s), coordination round trips per data
# request, and the delay line's lateness (ms) of the synthetic runs.
RTT_WORK_S = {ZK: 4.0, DSBS: 1.5}
RTT_COORD = {ZK: 1.0, DSBS: 0.0}
RTT_LATE_MS = 0.2


def write_rtt_run(root: Path, *, arch: str, index: int, rtts: Iterable[float] = (0, 1, 10),
                  tries: int = 2, records: int = 15_000, clients: int = 3, batch: int = 20,
                  hour: int = 9) -> Path:
    """A format-6 run of a round-trip-time sweep (split only, one 32 B cell per rtt) whose
    sessions follow the analysis's model exactly (studies/rtt/tables.py): each role's wall time
    is its work plus its round trips (Produce, or Fetch + OffsetCommit, each behind ``RTT_COORD``
    ZooKeeper requests) x the time held, held being rtt plus ``RTT_LATE_MS``; tries differ by
    10 ms. counters.csv has the counters the model reads, every other file its header."""
    run_id, run_dir = _new_run(root, arch, "rtt", index, hour, format_version=7)
    coordination_columns = names(fmt.COORDINATION, 7)
    records_columns = names(fmt.RECORDS, 7)
    for name, columns in (("series.csv", SERIES_COLUMNS), ("rate_search.csv", RATE_SEARCH_COLUMNS),
                          ("max_rate.csv", names(fmt.MAX_RATE, 7)),
                          ("metadata.csv", names(fmt.METADATA, 7))):
        (run_dir / name).write_text(",".join(columns) + "\n", encoding="utf-8")
    (run_dir / "latency.jsonl").write_text("", encoding="utf-8")
    requests = records // batch
    rec, coord, counters = [], [], []
    for rtt in rtts:
        cell_id = f"rtt-32B-b{batch}-rtt{rtt:g}"
        held = rtt + RTT_LATE_MS
        for try_ in range(1, tries + 1):
            for role, per_request in (("production", 1), ("consumption", 2)):
                trips = requests * per_request * (1 + RTT_COORD[arch]) / clients
                wall = (RTT_WORK_S[arch] * per_request + trips * rtt / 1000
                        + 0.01 * (try_ - 1))
                row: dict[str, object] = dict.fromkeys(records_columns, "")
                row.update(run_id=run_id, arch=arch, cell_id=cell_id, table="rtt",
                           scenario="split", role=role, msg_size=32, batch=batch, clients=clients,
                           records=records, wall_s=wall, rps=records / wall,
                           offset_commit="every_fetch", metadata_check="per_request",
                           status="ok", rtt_ms=float(rtt), **{"try": try_})
                rec.append(",".join(_field(row[c]) for c in records_columns))
            c: dict[str, object] = dict.fromkeys(coordination_columns, "")
            c.update(run_id=run_id, arch=arch, cell_id=cell_id, table="rtt", scenario="split",
                     msg_size=32, batch=batch, messages=records, rtt_ms=float(rtt),
                     rtt_measured_ms=held, delayed_packets=4 * requests, delay_cpu_s=0.1,
                     **{"try": try_})
            coord.append(",".join(_field(c[k]) for k in coordination_columns))
            key = f"{run_id},{arch},,{cell_id},split,{try_}"
            counts = {"kafka_requests_produce": requests, "kafka_requests_fetch": requests,
                      "kafka_requests_offset_commit": requests}
            counters += [f"{key},broker,{n},{v}" for n, v in counts.items()]
            if arch == ZK:  # a leadership check per Produce and Fetch, a write per commit
                counters += [f"{key},coordinator,zk_requests,{3 * requests}",
                             f"{key},coordinator,zk_direct_requests,{3 * requests}",
                             f"{key},coordinator,zk_writes,{requests}"]
    for name, columns, lines in (("records.csv", records_columns, rec),
                                 ("coordination.csv", coordination_columns, coord),
                                 ("counters.csv", COUNTER_COLUMNS, counters)):
        (run_dir / name).write_text("\n".join([",".join(columns), *lines]) + "\n",
                                    encoding="utf-8")
    return run_dir


# --- the committed test fixtures (tests/fixtures/runs) -----------------------------------------

FIXTURE_WORKLOAD = "tiny"
FIXTURE_CELLS: tuple[Cell, ...] = (
    Cell("size_grid", 8, 20), Cell("size_grid", 16, 20),
    Cell("batch_sweep", 32, 1), Cell("batch_sweep", 32, 20),
    Cell("policy", 32, 20, "every_fetch", "per_request"), Cell("policy", 32, 20, "none", "cached"),
)


def fixture_value(arch: str, label: str, cell: Cell, scenario: str, role: str, try_: int
                  ) -> float:
    """Round, hand-computable numbers. split production of a batch-20 cell: ZK 1000, 1100, 1200,
    1300 (mean 1150) and DSBS twice that, so every DSBS/ZK ratio is exactly 2 - except the
    policy cell without coordination on the data path, where ZK runs at 1600 (ratio 1.25).
    Streaming halves, consumption takes 80%, batch 1 a tenth. A/A side B: +2% production,
    -2% consumption."""
    base = 1000.0 if arch == ZK else 2000.0
    if arch == ZK and cell.table == "policy" and cell.offset_commit == "none":
        base = 1600.0
    if cell.batch == 1:
        base /= 10
    scale = (1.0 if scenario == "split" else 0.5) * (1.0 if role == "production" else 0.8)
    aa = 1.0
    if label == "B":
        aa = 1.02 if role == "production" else 0.98
    return base * scale * aa * (1 + 0.1 * (try_ - 1))


def write_fixtures(root: Path) -> list[Path]:
    """The six fixture runs: ZK and DSBS, and an A/A pair (labels A and B) of each."""
    runs = [(ZK, "", 1), (DSBS, "", 2), (ZK, "A", 3), (ZK, "B", 4), (DSBS, "A", 5),
            (DSBS, "B", 6)]
    return [write_run(root, arch=a, label=lbl, workload=FIXTURE_WORKLOAD, index=i,
                      cells=FIXTURE_CELLS, tries=4, value=fixture_value, hour=9 + i)
            for a, lbl, i in runs]


if __name__ == "__main__":
    import sys

    # python -m spark_analysis.synth DIR: (re)write the committed fixtures into DIR.
    for path in write_fixtures(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/runs")):
        print(path)
