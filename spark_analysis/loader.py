"""Find run directories, validate them, and load their logs into Spark with explicit schemas.

Everything a user can get wrong (an empty directory, a file from a newer twinbench, a corrupt
manifest, a CSV with the wrong columns) becomes one ``UserError`` line naming the file, checked in
plain Python before Spark starts reading: Spark's own errors for these cases are pages of JVM
stack trace that do not say which run was at fault.

Nothing here knows a table by heart: every run's manifest says which version of each table it
wrote (twinbench_common/runlog/manifest.py), each file is checked against that version's header
and read with that version's schema, and files of older versions are brought to the current
columns (a column added later is empty; a column that replaced older ones takes their value).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_analysis import archs
from spark_analysis.schema import AA_LABELS, MANIFEST_KIND, SUPPORTED_FORMAT_VERSIONS, spark_schema
from spark_analysis.storage import HadoopPath, location
from twinbench_common import runlog
from twinbench_common.errors import UserError
from twinbench_common.runlog import Table
from twinbench_common.runlog.manifest import table_versions

# A run-log location: a local path, or a URI read through Spark's Hadoop file systems.
Where = Path | HadoopPath

MANIFEST = "manifest.json"
RECORDS = runlog.RECORDS.file
COORDINATION = runlog.COORDINATION.file
# The tables Spark reads (counters.csv is read as plain CSV by the regression, regress.py).
SPARK_TABLES: tuple[Table, ...] = tuple(t for t in runlog.TABLES if t is not runlog.COUNTERS)
_KNOWN = frozenset(t.name for t in runlog.TABLES)
# Read even with a header alone: the paper's tables are computed from these whatever the
# workload, and an empty table keeps its columns. Every other table's header-only files are
# left out, so a workload that did not use it starts no Spark job for it.
ALWAYS_READ: tuple[Table, ...] = (runlog.RECORDS, runlog.COORDINATION)


@dataclass(frozen=True)
class RunInfo:
    """One run directory and what its manifest says about it."""

    path: Where
    run_id: str
    arch: str
    label: str
    workload: str
    format_version: int
    # Each table's version in this run; a table its format did not have is absent.
    tables: dict[str, int] = field(default_factory=dict, compare=False)
    incomplete: bool = False
    failed_cells: tuple[str, ...] = ()
    manifest: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def security(self) -> str:
        """The brokers' listener security (manifest ``policies.security``; runs written before
        that key were all plaintext)."""
        return str((self.manifest.get("policies") or {}).get("security") or "none")

    @property
    def client(self) -> str:
        """The side's load client (manifest ``client.name``; runs written before that key
        were all loaded by ours)."""
        return str((self.manifest.get("client") or {}).get("name") or "twinbench")


@dataclass
class RunLogs:
    """The loaded logs, one DataFrame per table (None: no run has a row of it, and the
    analysis starts no Spark job for it). Every frame of a table with an ``arch`` column
    carries four derived columns: ``workload``, ``security`` and ``client`` (from the
    manifest; records.csv's own ``client`` column says the same) and ``side`` (``"A"``/``"B"``
    for A/A calibration runs, ``"*"`` for everything else)."""

    runs: list[RunInfo]
    frames: dict[str, DataFrame | None]
    notes: list[str] = field(default_factory=list)

    def table(self, name: str) -> DataFrame | None:
        return self.frames.get(name)

    @property
    def records(self) -> DataFrame:
        df = self.frames[runlog.RECORDS.name]
        assert df is not None  # every run has a records.csv (validate_runs checked)
        return df

    @property
    def coordination(self) -> DataFrame | None:
        return self.frames.get(runlog.COORDINATION.name)

    @property
    def latency(self) -> DataFrame | None:
        return self.frames.get(runlog.LATENCY.name)

    @property
    def faults(self) -> DataFrame | None:
        return self.frames.get(runlog.FAULTS.name)

    @property
    def fault_events(self) -> DataFrame | None:
        return self.frames.get(runlog.FAULT_EVENTS.name)

    @property
    def fault_partitions(self) -> DataFrame | None:
        return self.frames.get(runlog.FAULT_PARTITIONS.name)

    @property
    def timeline(self) -> DataFrame | None:
        return self.frames.get(runlog.TIMELINE.name)

    @property
    def series(self) -> DataFrame | None:
        return self.frames.get(runlog.SERIES.name)

    @property
    def rate_search(self) -> DataFrame | None:
        return self.frames.get(runlog.RATE_SEARCH.name)

    @property
    def max_rate(self) -> DataFrame | None:
        return self.frames.get(runlog.MAX_RATE.name)

    @property
    def metadata(self) -> DataFrame | None:
        return self.frames.get(runlog.METADATA.name)

    @property
    def metrics(self) -> DataFrame | None:
        return self.frames.get(runlog.METRICS.name)


def discover_runs(paths: Sequence[str | Path], spark: SparkSession | None = None
                  ) -> list[Where]:
    """Run directories named by ``paths``: each path is a run directory or holds some; a URI
    (``hdfs://``, ``s3a://``, ``file://``) is listed through Spark's Hadoop file systems."""
    found: list[Where] = []
    for given in paths:
        path = location(given, spark)
        if not path.exists():
            raise UserError(f"{path}: no such directory")
        if not path.is_dir():
            raise UserError(f"{path}: not a directory (give a run directory or one holding runs)")
        if (path / MANIFEST).is_file():
            found.append(path)
            continue
        children: list[Where] = sorted((p for p in path.iterdir() if (p / MANIFEST).is_file()),
                                       key=str)
        if not children:
            raise UserError(f"{path}: no run directories here (a run directory holds {MANIFEST}"
                            f" and {RECORDS}; run 'twinbench run' first)")
        found.extend(children)
    # The same run named twice (a directory and its parent) must not count twice.
    unique = list(dict.fromkeys(p.resolve() for p in found))
    return unique


def read_manifest(run_dir: Where) -> RunInfo:
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
    try:
        tables = table_versions(data, runlog.TABLES)
    except ValueError as exc:
        raise UserError(f"{path}: {exc}") from None
    unknown = sorted(f"{n} v{v}" for n, v in tables.items()
                     if n not in _KNOWN or not 1 <= v <= runlog.by_name(n).version)
    if unknown:
        raise UserError(f"{path}: this analysis does not read {', '.join(unknown)} - use the "
                        "twinbench that wrote the run")
    failed = data.get("failed_cells") or []
    return RunInfo(
        path=run_dir, run_id=data["run_id"], arch=data["arch"], label=str(data.get("label") or ""),
        workload=data["workload_name"], format_version=version, tables=tables,
        incomplete=bool(data.get("incomplete")), failed_cells=tuple(str(c) for c in failed),
        manifest=data,
    )


def _versions() -> str:
    return " or ".join(str(v) for v in sorted(SUPPORTED_FORMAT_VERSIONS))


def read_manifests(run_dirs: Sequence[Where]) -> list[RunInfo]:
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
    seen: dict[str, Where] = {}
    for info in infos:
        if info.run_id in seen:
            raise UserError(
                f"run_id {info.run_id} appears twice ({seen[info.run_id]}, {info.path})")
        seen[info.run_id] = info.path
    return infos


def check_header(path: Where, expected: Sequence[str], what: str = "the run-log format"
                 ) -> bool:
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
        raise UserError(f"{path}: header does not match {what} ({'; '.join(detail)})")
    return True


def has_rows(path: Where) -> bool:
    """True when a CSV whose header check_header accepted has a data row after the header.

    Reads at most the first non-blank line after the header: deciding "header only" must not
    scan a large file, and must not cost a Spark job."""
    try:
        with path.open("r", encoding="utf-8", newline="") as fh:
            fh.readline()
            return any(line.strip() for line in fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: unreadable ({exc})") from None


@dataclass
class RunFiles:
    """What validate_runs found: per table and version, the files Spark will read (files with
    a header and no row left out), and notes on the inputs."""

    runs: list[RunInfo]
    # table name -> version -> files of that version, in run order.
    files: dict[str, dict[int, list[Where]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def paths(self, table: str, version: int | None = None) -> list[Where]:
        """The files of ``table``: of one ``version``, or of every version."""
        by_version = self.files.get(table, {})
        if version is not None:
            return list(by_version.get(version, []))
        return [p for v in sorted(by_version) for p in by_version[v]]


def validate_runs(paths: Sequence[str | Path], spark: SparkSession | None = None
                  ) -> RunFiles:
    """Find and check every run named by ``paths`` in plain Python: manifests, the files each
    run's table versions say it has, and every header. Raises a one-line UserError on the first
    problem; reads no data row beyond the first of each file."""
    run_dirs = discover_runs(paths, spark)
    found = RunFiles(runs=read_manifests(run_dirs))
    notes = found.notes
    for run in found.runs:
        for table in SPARK_TABLES:
            version = run.tables.get(table.name)
            if version is not None and (path := _table_file(run, table, version, notes)):
                found.files.setdefault(table.name, {}).setdefault(version, []).append(path)
        if run.incomplete:
            notes.append(f"run {run.run_id} is marked incomplete (interrupted or a cell could not"
                         " run); its finished rows are used")
        if run.failed_cells:
            notes.append(f"run {run.run_id}: verification failed in {', '.join(run.failed_cells)};"
                         " those rows are excluded from the statistics")
    return found


def _table_file(run: RunInfo, table: Table, version: int, notes: list[str]
                ) -> Where | None:
    """The run's file of ``table``, its header checked; None when it has no row to read (an
    optional file the run lacks, a file with a header alone)."""
    path = run.path / table.file
    if not path.is_file():
        if table is runlog.RECORDS:
            raise UserError(f"{path}: missing (every run directory has one)")
        if table is runlog.COORDINATION:
            notes.append(f"run {run.run_id} has no {table.file}; its coordination cost is absent")
        if table.optional:
            return None
        raise UserError(f"{path}: missing (every format_version {run.format_version} run "
                        "directory has one, header-only when the workload does not use it)")
    if table.kind == "jsonl":
        return path if path.stat().st_size > 0 else None
    check_header(path, table.names(version), f"{table.file} version {version}")
    return path if table in ALWAYS_READ or has_rows(path) else None


def load_runs(spark: SparkSession, paths: Sequence[str | Path]) -> RunLogs:
    """Validate every run named by ``paths`` and return lazily-read Spark DataFrames."""
    found = validate_runs(paths, spark)
    runs = found.runs
    runs_df = spark.createDataFrame(
        [(r.run_id, r.workload, r.security, r.client) for r in runs],
        "run_id string, workload string, security string, run_client string")

    def read(table: Table) -> DataFrame | None:
        frames = [_current(_read_files(spark, table, version, files), table, version)
                  for version, files in sorted(found.files.get(table.name, {}).items())]
        if not frames:
            return None
        df = frames[0]
        for other in frames[1:]:
            df = df.unionByName(other)
        if "arch" not in df.columns:
            return df
        own = [F.col("client")] if "client" in df.columns else []
        return (
            df
            .withColumn("label", F.coalesce(F.col("label"), F.lit("")))
            .join(F.broadcast(runs_df), "run_id", "left")
            .withColumn("workload", F.coalesce(F.col("workload"), F.lit("?")))
            .withColumn("security", F.coalesce(F.col("security"), F.lit("none")))
            .withColumn("client", F.coalesce(*own, F.col("run_client"), F.lit("twinbench")))
            .drop("run_client")
            .withColumn("side", F.when(F.col("label").isin(*AA_LABELS), F.col("label"))
                        .otherwise(F.lit("*")))
        )

    return RunLogs(runs=runs, frames={t.name: read(t) for t in SPARK_TABLES},
                   notes=found.notes)


def _read_files(spark: SparkSession, table: Table, version: int, files: list[Where]
                ) -> DataFrame:
    schema = spark_schema(table, version)
    if table.kind == "jsonl":
        return spark.read.option("mode", "FAILFAST").schema(schema).json([str(f) for f in files])
    return (
        spark.read.option("header", "true")
        # FAILFAST: a row that does not fit the schema is an error, never a silent null.
        .option("mode", "FAILFAST")
        .option("enforceSchema", "true")
        .schema(schema)
        .csv([str(f) for f in files])
    )


def _current(df: DataFrame, table: Table, version: int) -> DataFrame:
    """A frame of ``version`` with the current version's columns, in their order: a column
    added later is empty, one that replaced older columns takes the first non-empty of them,
    and a column dropped since is left out."""
    if version == table.version:
        return df
    out: list[Column] = []
    for c in table.columns_at():
        if c.at(version):
            out.append(F.col(c.name))
        elif c.was:
            out.append(F.coalesce(*(F.col(w) for w in c.was)).cast(
                spark_schema(table)[c.name].dataType).alias(c.name))
        else:
            out.append(F.lit(None).cast(spark_schema(table)[c.name].dataType).alias(c.name))
    return df.select(*out)


def read_pandas(run: RunInfo, table: Table) -> pd.DataFrame:
    """One run's file of ``table`` as pandas, with the current version's columns (as
    ``load_runs`` gives Spark's): for readers that need no Spark (the regression)."""
    version = run.tables.get(table.name)
    path = run.path / table.file
    if version is None or not path.is_file():
        raise UserError(f"{path}: missing (the regression reads it; runs written before it "
                        "existed cannot be checked)")
    check_header(path, table.names(version), f"{table.file} version {version}")
    try:
        df = pd.read_csv(path, keep_default_na=True)
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: unreadable ({exc})") from None
    out = pd.DataFrame(index=df.index)
    for c in table.columns_at():
        if c.at(version):
            out[c.name] = df[c.name]
        elif c.was:
            out[c.name] = df[list(c.was)].bfill(axis=1).iloc[:, 0]
        else:
            out[c.name] = pd.Series(pd.NA, index=df.index, dtype="object")
    return out


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
