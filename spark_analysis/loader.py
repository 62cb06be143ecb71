"""Find run directories, validate them, and load their logs into Spark with explicit schemas.

Everything a user can get wrong (an empty directory, a file from a newer twinbench, a corrupt
manifest, a CSV with the wrong columns) becomes one ``UserError`` line naming the file, checked in
plain Python before Spark starts reading: Spark's own errors for these cases are pages of JVM
stack trace that do not say which run was at fault.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_analysis import archs
from spark_analysis.schema import (
    AA_LABELS,
    COORDINATION_COLUMNS,
    COORDINATION_COLUMNS_V5,
    COORDINATION_COLUMNS_V6,
    COORDINATION_SCHEMA,
    COORDINATION_SCHEMA_V5,
    COORDINATION_SCHEMA_V6,
    FAULT_EVENTS_COLUMNS,
    FAULT_EVENTS_SCHEMA,
    FAULT_FILES_SINCE,
    FAULTS_COLUMNS,
    FAULTS_SCHEMA,
    LATENCY_SCHEMA,
    MACHINE_COLUMNS_SINCE,
    MANIFEST_KIND,
    MAX_RATE_COLUMNS,
    MAX_RATE_SCHEMA,
    METADATA_COLUMNS,
    METADATA_FILE_SINCE,
    METADATA_SCHEMA,
    METRICS_COLUMNS,
    METRICS_FILE_SINCE,
    METRICS_SCHEMA,
    OPEN_LOOP_COLUMNS_SINCE,
    OPEN_LOOP_FILES_SINCE,
    RATE_SEARCH_COLUMNS,
    RATE_SEARCH_SCHEMA,
    RECORDS_COLUMNS,
    RECORDS_COLUMNS_V2,
    RECORDS_COLUMNS_V5,
    RECORDS_SCHEMA,
    RECORDS_SCHEMA_V2,
    RECORDS_SCHEMA_V5,
    RTT_COLUMNS_SINCE,
    SERIES_COLUMNS,
    SERIES_SCHEMA,
    SUPPORTED_FORMAT_VERSIONS,
    TIMELINE_COLUMNS,
    TIMELINE_SCHEMA,
)
from twinbench_common.errors import UserError

MANIFEST = "manifest.json"
RECORDS = "records.csv"
COORDINATION = "coordination.csv"
LATENCY = "latency.jsonl"
FAULTS = "faults.csv"
FAULT_EVENTS = "fault_events.csv"
TIMELINE = "timeline.csv"
METADATA = "metadata.csv"
METRICS = "metrics.csv"
# The fault files (format 2) with the columns their header must have.
FAULT_FILES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (FAULTS, FAULTS_COLUMNS), (FAULT_EVENTS, FAULT_EVENTS_COLUMNS), (TIMELINE, TIMELINE_COLUMNS))
SERIES = "series.csv"
RATE_SEARCH = "rate_search.csv"
MAX_RATE = "max_rate.csv"
# The open-loop files (format 4) with their columns.
OPEN_LOOP_FILES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (SERIES, SERIES_COLUMNS), (RATE_SEARCH, RATE_SEARCH_COLUMNS), (MAX_RATE, MAX_RATE_COLUMNS))


@dataclass(frozen=True)
class RunInfo:
    """One run directory and what its manifest says about it."""

    path: Path
    run_id: str
    arch: str
    label: str
    workload: str
    format_version: int
    incomplete: bool = False
    failed_cells: tuple[str, ...] = ()
    manifest: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def security(self) -> str:
        """The brokers' listener security (manifest ``policies.security``; runs written before
        that key were all plaintext)."""
        return str((self.manifest.get("policies") or {}).get("security") or "none")


@dataclass
class RunLogs:
    """The loaded logs. ``records`` carries three derived columns: ``workload`` and
    ``security`` (from the manifest) and ``side`` (``"A"``/``"B"`` for A/A calibration runs,
    ``"*"`` for everything else); so do ``coordination`` and the three fault frames. A fault
    frame is None when no run has a row of it (format 1, or header-only files): then the
    analysis starts no Spark job for it."""

    runs: list[RunInfo]
    records: DataFrame
    coordination: DataFrame | None
    latency: DataFrame | None
    notes: list[str] = field(default_factory=list)
    faults: DataFrame | None = None
    fault_events: DataFrame | None = None
    timeline: DataFrame | None = None
    # The open-loop files (format 4); None without rows, like the fault frames.
    series: DataFrame | None = None
    rate_search: DataFrame | None = None
    max_rate: DataFrame | None = None
    # metadata.csv rows (format 5); None when no run has a metadata session.
    metadata: DataFrame | None = None
    # metrics.csv rows (format 8); None when no run sampled the brokers' metrics.
    metrics: DataFrame | None = None


def discover_runs(paths: Sequence[Path]) -> list[Path]:
    """Run directories named by ``paths``: each path is a run directory or holds some."""
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise UserError(f"{path}: no such directory")
        if not path.is_dir():
            raise UserError(f"{path}: not a directory (give a run directory or one holding runs)")
        if (path / MANIFEST).is_file():
            found.append(path)
            continue
        children = sorted(p for p in path.iterdir() if (p / MANIFEST).is_file())
        if not children:
            raise UserError(f"{path}: no run directories here (a run directory holds {MANIFEST}"
                            f" and {RECORDS}; run 'twinbench run' first)")
        found.extend(children)
    # The same run named twice (a directory and its parent) must not count twice.
    unique = list(dict.fromkeys(p.resolve() for p in found))
    return unique


def read_manifest(run_dir: Path) -> RunInfo:
    path = run_dir / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: unreadable manifest ({exc})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: the manifest is not a JSON object")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise UserError(f"{path}: no integer format_version; not a twinbench run log")
    if version not in SUPPORTED_FORMAT_VERSIONS:
        raise UserError(
            f"{path}: format_version {version} is not supported; this analysis reads "
            f"format_version {_versions()} (docs/result-format.md) - use the twinbench that "
            "wrote the run")
    if data.get("kind") != MANIFEST_KIND:
        raise UserError(f"{path}: kind is {data.get('kind')!r}, expected {MANIFEST_KIND!r}")
    missing = [k for k in ("run_id", "arch", "workload_name") if not isinstance(data.get(k), str)]
    if missing:
        raise UserError(f"{path}: manifest lacks {', '.join(missing)}")
    if "architectures" in data:  # optional: absent in runs written before it existed
        archs.validate(data["architectures"], str(path))
    failed = data.get("failed_cells") or []
    return RunInfo(
        path=run_dir, run_id=data["run_id"], arch=data["arch"], label=str(data.get("label") or ""),
        workload=data["workload_name"], format_version=version,
        incomplete=bool(data.get("incomplete")), failed_cells=tuple(str(c) for c in failed),
        manifest=data,
    )


def _versions() -> str:
    return " or ".join(str(v) for v in sorted(SUPPORTED_FORMAT_VERSIONS))


def read_manifests(run_dirs: Sequence[Path]) -> list[RunInfo]:
    """Every manifest; a mixture of versions is fine when this analysis reads them all (format 1
    and 2 runs together: the format-1 runs simply have no fault rows), and refused by name
    otherwise."""
    # Look at the raw versions first so that a mixture is reported as a mixture (which runs have
    # which version) rather than as whichever bad run happens to sort first.
    versions: dict[Any, list[str]] = {}
    for run_dir in run_dirs:
        try:
            raw = json.loads((run_dir / MANIFEST).read_text(encoding="utf-8"))
            version = raw.get("format_version") if isinstance(raw, dict) else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue  # read_manifest below reports it properly
        versions.setdefault(version, []).append(run_dir.name)
    if len(versions) > 1 and not set(versions) <= SUPPORTED_FORMAT_VERSIONS:
        parts = "; ".join(f"format_version {v}: {', '.join(sorted(names)[:3])}"
                          + (" ..." if len(names) > 3 else "")
                          for v, names in sorted(versions.items(), key=lambda kv: str(kv[0])))
        raise UserError(f"mixed run log format versions ({parts}); this analysis reads "
                        f"format_version {_versions()} - analyse each version with the twinbench"
                        " that wrote it")
    infos = [read_manifest(d) for d in run_dirs]
    seen: dict[str, Path] = {}
    for info in infos:
        if info.run_id in seen:
            raise UserError(
                f"run_id {info.run_id} appears twice ({seen[info.run_id]}, {info.path})")
        seen[info.run_id] = info.path
    return infos


def check_header(path: Path, expected: Sequence[str]) -> bool:
    """True when ``path`` has a header and data may follow; raises on a wrong header."""
    try:
        with path.open("r", encoding="utf-8", newline="") as fh:
            first = fh.readline()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: unreadable ({exc})") from None
    if not first.strip():
        raise UserError(f"{path}: empty file (no header row); the run was cut off before writing")
    header = [c.strip() for c in first.strip().split(",")]
    if header != list(expected):
        missing = [c for c in expected if c not in header]
        extra = [c for c in header if c not in expected]
        detail = []
        if missing:
            detail.append(f"missing {', '.join(missing)}")
        if extra:
            detail.append(f"unexpected {', '.join(extra)}")
        if not detail:
            detail.append("columns out of order")
        raise UserError(f"{path}: header does not match format_version {_versions()}"
                        f" ({'; '.join(detail)})")
    return True


def has_rows(path: Path) -> bool:
    """True when a CSV whose header check_header accepted has a data row after the header.

    Reads at most the first non-blank line after the header: deciding "header only" must not
    scan a large file, and must not cost a Spark job."""
    try:
        with path.open("r", encoding="utf-8", newline="") as fh:
            fh.readline()
            return any(line.strip() for line in fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: unreadable ({exc})") from None


def _read_csv(spark: SparkSession, files: list[Path], schema: Any) -> DataFrame:
    return (
        spark.read.option("header", "true")
        # FAILFAST: a row that does not fit the schema is an error, never a silent null.
        .option("mode", "FAILFAST")
        .option("enforceSchema", "true")
        .schema(schema)
        .csv([str(f) for f in files])
    )


@dataclass
class RunFiles:
    """What validate_runs found: the files Spark will read (header-only fault files left out)
    and notes on the inputs."""

    runs: list[RunInfo]
    records: list[Path] = field(default_factory=list)
    # records.csv of formats 1 and 2 (without the format-3 columns), of 3 to 5 (without the
    # format-6 ones).
    records_v2: list[Path] = field(default_factory=list)
    records_v5: list[Path] = field(default_factory=list)
    coordination: list[Path] = field(default_factory=list)
    # coordination.csv of formats 1 to 5 (without the delay line's columns).
    coordination_v5: list[Path] = field(default_factory=list)
    coordination_v6: list[Path] = field(default_factory=list)
    latency: list[Path] = field(default_factory=list)
    faults: dict[str, list[Path]] = field(
        default_factory=lambda: {name: [] for name, _ in FAULT_FILES})
    open_loop: dict[str, list[Path]] = field(
        default_factory=lambda: {name: [] for name, _ in OPEN_LOOP_FILES})
    metadata: list[Path] = field(default_factory=list)
    metrics: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def validate_runs(paths: Sequence[Path]) -> RunFiles:
    """Find and check every run named by ``paths`` in plain Python: manifests, the files each
    format version must have, and every header. Raises a one-line UserError on the first
    problem; reads no data row beyond the first of each fault file."""
    run_dirs = discover_runs(paths)
    found = RunFiles(runs=read_manifests(run_dirs))
    notes = found.notes
    for run in found.runs:
        records = run.path / RECORDS
        if not records.is_file():
            raise UserError(f"{records}: missing (every run directory has one)")
        rtt = run.format_version >= RTT_COLUMNS_SINCE
        if rtt:
            check_header(records, RECORDS_COLUMNS)
            found.records.append(records)
        elif run.format_version >= OPEN_LOOP_COLUMNS_SINCE:
            check_header(records, RECORDS_COLUMNS_V5)
            found.records_v5.append(records)
        else:
            check_header(records, RECORDS_COLUMNS_V2)
            found.records_v2.append(records)
        coord = run.path / COORDINATION
        if coord.is_file():
            if run.format_version >= MACHINE_COLUMNS_SINCE:
                columns, into = COORDINATION_COLUMNS, found.coordination
            elif rtt:
                columns, into = COORDINATION_COLUMNS_V6, found.coordination_v6
            else:
                columns, into = COORDINATION_COLUMNS_V5, found.coordination_v5
            check_header(coord, columns)
            into.append(coord)
        else:
            notes.append(f"run {run.run_id} has no {COORDINATION}; its coordination cost is absent")
        latency = run.path / LATENCY
        if latency.is_file() and latency.stat().st_size > 0:
            found.latency.append(latency)
        if run.format_version >= FAULT_FILES_SINCE:
            _optional_files(run, FAULT_FILES, found.faults, "injects no faults")
        if run.format_version >= OPEN_LOOP_FILES_SINCE:
            _optional_files(run, OPEN_LOOP_FILES, found.open_loop, "is closed-loop")
        if run.format_version >= METADATA_FILE_SINCE:
            _optional_files(run, ((METADATA, METADATA_COLUMNS),), {METADATA: found.metadata},
                            "runs no metadata scenarios")
        if run.format_version >= METRICS_FILE_SINCE:
            _optional_files(run, ((METRICS, METRICS_COLUMNS),), {METRICS: found.metrics},
                            "samples no metrics")
        if run.incomplete:
            notes.append(f"run {run.run_id} is marked incomplete (interrupted or a cell could not"
                         " run); its finished rows are used")
        if run.failed_cells:
            notes.append(f"run {run.run_id}: verification failed in {', '.join(run.failed_cells)};"
                         " those rows are excluded from the statistics")
    return found


def _optional_files(run: RunInfo, files: tuple[tuple[str, tuple[str, ...]], ...],
                    into: dict[str, list[Path]], when_empty: str) -> None:
    """Files every run of its version has, header-only when its workload did not use them:
    check each header, keep the ones with rows."""
    for name, columns in files:
        path = run.path / name
        if not path.is_file():
            raise UserError(f"{path}: missing (every format_version {run.format_version} run "
                            f"directory has one, header-only when the workload {when_empty})")
        check_header(path, columns)
        if has_rows(path):
            into[name].append(path)


def load_runs(spark: SparkSession, paths: Sequence[Path]) -> RunLogs:
    """Validate every run named by ``paths`` and return lazily-read Spark DataFrames."""
    found = validate_runs(paths)
    runs = found.runs

    runs_df = spark.createDataFrame(
        [(r.run_id, r.workload, r.security) for r in runs],
        "run_id string, workload string, security string")

    def read(files: list[Path], schema: Any, *older: tuple[list[Path], Any]
             ) -> DataFrame | None:
        """The files with the derived columns ``workload``, ``security`` and ``side``; None
        without files. ``older``: files of older formats with fewer columns, each read with
        its own schema and given the missing ones as nulls."""
        frames = []
        if files:
            frames.append(_read_csv(spark, files, schema))
        for old_files, old_schema in older:
            if not old_files:
                continue
            df = _read_csv(spark, old_files, old_schema)
            for f in schema.fields[len(old_schema.fields):]:
                df = df.withColumn(f.name, F.lit(None).cast(f.dataType))
            frames.append(df)
        if not frames:
            return None
        df = frames[0]
        for other in frames[1:]:
            df = df.unionByName(other)
        return (
            df
            .withColumn("label", F.coalesce(F.col("label"), F.lit("")))
            .join(F.broadcast(runs_df), "run_id", "left")
            .withColumn("workload", F.coalesce(F.col("workload"), F.lit("?")))
            .withColumn("security", F.coalesce(F.col("security"), F.lit("none")))
            .withColumn("side", F.when(F.col("label").isin(*AA_LABELS), F.col("label"))
                        .otherwise(F.lit("*")))
        )

    records_df = read(found.records, RECORDS_SCHEMA, (found.records_v2, RECORDS_SCHEMA_V2),
                      (found.records_v5, RECORDS_SCHEMA_V5))
    assert records_df is not None  # every run has a records.csv (validate_runs checked)
    latency_df = None
    if found.latency:
        latency_df = (spark.read.option("mode", "FAILFAST").schema(LATENCY_SCHEMA)
                      .json([str(f) for f in found.latency]))
    faults = found.faults
    return RunLogs(runs=runs, records=records_df,
                   coordination=read(found.coordination, COORDINATION_SCHEMA,
                                     (found.coordination_v5, COORDINATION_SCHEMA_V5),
                                     (found.coordination_v6, COORDINATION_SCHEMA_V6)),
                   latency=latency_df, notes=found.notes,
                   faults=read(faults[FAULTS], FAULTS_SCHEMA),
                   fault_events=read(faults[FAULT_EVENTS], FAULT_EVENTS_SCHEMA),
                   timeline=read(faults[TIMELINE], TIMELINE_SCHEMA),
                   series=read(found.open_loop[SERIES], SERIES_SCHEMA),
                   rate_search=read(found.open_loop[RATE_SEARCH], RATE_SEARCH_SCHEMA),
                   max_rate=read(found.open_loop[MAX_RATE], MAX_RATE_SCHEMA),
                   metadata=read(found.metadata, METADATA_SCHEMA),
                   metrics=read(found.metrics, METRICS_SCHEMA))


@contextmanager
def spark_input_errors() -> Iterator[None]:
    """Turn Spark's parse failures (FAILFAST on a malformed row) into one-line UserErrors."""
    try:
        yield
    except Exception as exc:  # pyspark wraps JVM errors in several classes; match on the text
        text = str(exc)
        if "Malformed" in text or "MALFORMED" in text or "FAILFAST" in text:
            raise UserError(f"malformed row in the run logs: {_first_useful_line(text)}") from None
        raise


def _first_useful_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and ("Malformed" in line or "MALFORMED" in line or "record" in line.lower()):
            return line[:300]
    return text.strip().splitlines()[0][:300] if text.strip() else "unknown parse error"
