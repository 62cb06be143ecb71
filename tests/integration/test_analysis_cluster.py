"""The analysis on a real Spark standalone cluster, and run logs given as URIs.

`twinbench analyze --master spark://...` against a master and a worker started from pyspark's
own launcher (tests/support/spark_cluster.py), on recorded smoke runs given as a ``file://``
URI (listed and read through Hadoop's FileSystem API, as ``hdfs://`` or ``s3a://`` would be):
its tables must be the tables of the same analysis in local mode on plain paths.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from pyspark.sql import SparkSession

from spark_analysis import job, loader
from spark_analysis.session import SPARK_PANDAS_WARNINGS
from spark_analysis.storage import HadoopPath
from tests.support import spark_cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              *(pytest.mark.filterwarnings(f"ignore:{m}") for m in SPARK_PANDAS_WARNINGS)]

FORMAT8 = Path(__file__).resolve().parents[1] / "fixtures" / "format8"
# A paper-style smoke run and a fault run: the paper's study and the faults study both run.
WORKLOADS = ("smoke", "faults-smoke")


def _tables(directory: Path) -> dict[str, pd.DataFrame]:
    out = {}
    for path in sorted(directory.glob("*.csv")):
        text = path.read_text("utf-8")
        out[path.stem] = (pd.read_csv(path, dtype=str, keep_default_na=False)
                          if text.strip() else pd.DataFrame())
    return out


def _same(name: str, a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal tables, rows in any order, numbers to 1e-9 (a sum may add in another order when
    the cluster partitions the data differently)."""
    assert list(a.columns) == list(b.columns), name
    assert len(a) == len(b), name
    if not len(a.columns):
        return
    a = a.sort_values(list(a.columns), ignore_index=True)
    b = b.sort_values(list(b.columns), ignore_index=True)
    for column in a.columns:
        for x, y in zip(a[column], b[column], strict=True):
            if x == y:
                continue
            fx, fy = float(x), float(y)  # anything else differing is a real difference
            assert math.isclose(fx, fy, rel_tol=1e-9, abs_tol=1e-12), (name, column, x, y)


def test_uris_read_through_hadoop_give_the_same_tables(spark: SparkSession,
                                                       tmp_path: Path) -> None:
    runs = [FORMAT8 / w / "runs" for w in WORKLOADS]
    local = job.compute(spark, runs)
    uris = [p.as_uri() for p in runs]
    assert all(u.startswith("file:///") for u in uris)
    found = loader.validate_runs(uris, spark)
    assert all(isinstance(r.path, HadoopPath) for r in found.runs)
    assert len(found.runs) == len(loader.validate_runs(runs).runs)
    through = job.compute(spark, uris)
    job.write_tables(local, tmp_path / "local")
    job.write_tables(through, tmp_path / "uri")
    a, b = _tables(tmp_path / "local"), _tables(tmp_path / "uri")
    assert sorted(a) == sorted(b)
    for name in a:
        if name != "runs":  # it names each run's directory, as given
            _same(name, a[name], b[name])


def test_a_uri_that_names_nothing_is_one_clear_error(spark: SparkSession, tmp_path: Path
                                                     ) -> None:
    from brokers.core.errors import UserError

    with pytest.raises(UserError, match="no such directory"):
        loader.validate_runs([(tmp_path / "nothing").as_uri()], spark)


def test_the_analysis_on_a_standalone_cluster_matches_local_mode(spark: SparkSession,
                                                                  tmp_path: Path) -> None:
    runs = [FORMAT8 / w / "runs" for w in WORKLOADS]
    job.write_tables(job.compute(spark, runs), tmp_path / "local")
    with spark_cluster.standalone(tmp_path / "spark") as cluster:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "analyze", *(p.as_uri() for p in runs),
             "--master", cluster.master_url, "--out", str(tmp_path / "cluster"),
             "--no-figures"],
            env=spark_cluster.env(), capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        state = cluster.status()
    # The job ran on the cluster: the master saw the application come and finish.
    apps = [a for a in state.get("completedapps", []) + state.get("activeapps", [])
            if a.get("name") == "twinbench-analyze"]
    assert apps, state
    a, b = _tables(tmp_path / "local"), _tables(tmp_path / "cluster")
    assert sorted(a) == sorted(b)
    for name in a:
        if name != "runs":
            _same(name, a[name], b[name])
