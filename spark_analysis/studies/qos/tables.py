"""The Kafka + Prometheus paper's QoS table (its Table II) from the brokers' sampled metrics.

Input: metrics.csv (format 8) reduced by Spark to each session's first and last sample, and
largest value, of every series a QoS measure reads (aggregate.metric_spans; ``SERIES``).
Brokers are the nodes >= 0, ZooKeeper servers the nodes < 0 (read by the harness at every
scrape). A counter series that first appears after a node's first scrape of the session (a
topic's, an API's or an error code's first occurrence) started at 0 within the session. Per
session (one try of one case on one side):

* the window: from the session's first scrape (just before its producers start) to its last
  (just after its consumers finish), on the harness's clock;
* ``cpu_mcores``: the brokers' CPU seconds over the window, all brokers, in millicores (the
  paper's "m core"); ``service_cpu_mcores`` the same for the services' servers (ZooKeeper's;
  zk only);
* ``memory_mb``: the largest resident set of a broker during the session, mean over brokers;
* ``disk_free_gb``: free space on the data directories' filesystem at the end; ``disk_used_mb``:
  the brokers' data directories at the end, all brokers;
* ``bytes_in_per_s`` / ``bytes_out_per_s`` / ``messages_in_per_s``: the session topic's
  record-batch bytes appended / fetched by consumers, and records appended, over the window,
  all brokers (Kafka's BytesInPerSec, BytesOutPerSec, MessagesInPerSec);
* ``produce_time_ms`` / ``fetch_time_ms``: mean time to answer a Produce / Fetch request during
  the session (Kafka's TotalTimeMs; a Fetch's includes its long-poll wait);
* ``errors_per_s``: error codes in responses over the window (Kafka's ErrorsPerSec without
  NONE).

Then mean, sd and the 95% t interval over tries per case x architecture x security level, and
the paper's layout: a row per measure and side, a column per case (its message count), the
paper's printed value on the first row of each measure (``paper_qos.csv``; the paper's "Total
Time" beside our Produce time).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from spark_analysis import stats
from spark_analysis.archs import DEFAULT, Archs
from spark_analysis.markdown import fmt

# Package data of spark_analysis itself (pyproject.toml ships spark_analysis/*.csv).
PAPER_QOS_CSV = Path(__file__).resolve().parents[2] / "paper_qos.csv"
# The series of metrics.csv a measure reads (aggregate.metric_spans keeps these only).
SERIES = (
    "process_cpu_seconds_total", "process_resident_memory_bytes", "twinbench_log_dir_bytes",
    "twinbench_log_dir_free_bytes", "twinbench_topic_bytes_in_total",
    "twinbench_topic_bytes_out_total", "twinbench_topic_messages_in_total",
    "twinbench_request_time_seconds_sum", "twinbench_request_time_seconds_count",
    "twinbench_response_errors_total",
)
# measure -> (row title, the paper's metric it stands beside, or None)
MEASURES: dict[str, tuple[str, str | None]] = {
    "cpu_mcores": ("CPU usage (m core), brokers", "cpu_mcores"),
    "service_cpu_mcores": ("CPU usage (m core), services (ZooKeeper)", None),
    "memory_mb": ("Memory usage (MB), per broker", "memory_mb"),
    "disk_free_gb": ("Disk available (GB)", "disk_free_gb"),
    "disk_used_mb": ("Disk used by the logs (MB)", None),
    "bytes_in_per_s": ("Bytes in per sec", "bytes_in_per_s"),
    "bytes_out_per_s": ("Bytes out per sec", "bytes_out_per_s"),
    "messages_in_per_s": ("Messages in per sec", None),
    "produce_time_ms": ("Total time (ms), Produce", "total_time_ms"),
    "fetch_time_ms": ("Total time (ms), Fetch", None),
    "errors_per_s": ("Error per sec", "errors_per_s"),
}
SESSION = ["run_id", "workload", "security", "side", "arch", "label", "cell_id", "scenario",
           "try"]
_MESSAGES = re.compile(r"-m(\d+)(?:-r[0-9.e+]+)?$")


def load_paper(path: Path = PAPER_QOS_CSV) -> pd.DataFrame:
    """metric, messages, value: Table II as printed."""
    return pd.read_csv(path, comment="#")


def messages_of(cell_id: str) -> float:
    """The case's message count from its cell id (-m<count>), else nan."""
    m = _MESSAGES.search(cell_id)
    return float(m.group(1)) if m else math.nan


def _series(spans: pd.DataFrame, metric: str, labels: str | None = None) -> pd.DataFrame:
    sub = spans[spans["metric"] == metric]
    if labels is not None:
        sub = sub[sub["labels"] == labels]
    return sub


def _per_session(spans: pd.DataFrame, metric: str, how: str, labels: str | None = None
                 ) -> pd.Series:
    """One number per session from a series: the increase summed over brokers and labels
    (``delta``), the largest value's mean over brokers (``max_mean``), the last value summed
    (``last_sum``) or its minimum (``last_min``)."""
    sub = _series(spans, metric, labels)
    if sub.empty:
        return pd.Series(dtype="float64")
    if how == "delta":
        return (sub["last"] - sub["first"]).groupby([sub[k] for k in SESSION]).sum()
    if how == "max_mean":
        return sub.groupby(SESSION)["max"].mean()
    if how == "last_sum":
        return sub.groupby(SESSION)["last"].sum()
    return sub.groupby(SESSION)["last"].min()


def _born_in_session(spans: pd.DataFrame) -> pd.DataFrame:
    """Counters first seen after their node's first scrape of the session started at 0."""
    node_t0 = spans.groupby([*SESSION, "node_id"])["t_first"].transform("min")
    counter = spans["metric"].str.endswith(("_total", "_sum", "_count"))
    born = counter & (spans["t_first"] > node_t0)
    return spans.assign(first=spans["first"].where(~born, 0.0))


def sessions(spans: pd.DataFrame) -> pd.DataFrame:
    """One row per session with every measure of MEASURES (see the module docstring)."""
    if spans.empty:
        return pd.DataFrame()
    spans = _born_in_session(spans.assign(labels=spans["labels"].fillna("")))
    grouped = spans.groupby(SESSION)
    out = pd.DataFrame({"window_s": grouped["t_last"].max() - grouped["t_first"].min()})
    window = out["window_s"].where(out["window_s"] > 0)
    service = spans[spans["node_id"] < 0]
    spans = spans[spans["node_id"] >= 0]
    out["cpu_mcores"] = _per_session(spans, "process_cpu_seconds_total", "delta") / window * 1e3
    service_cpu = _per_session(service, "process_cpu_seconds_total", "delta")
    out["service_cpu_mcores"] = service_cpu.reindex(out.index) / window * 1e3
    out["memory_mb"] = _per_session(spans, "process_resident_memory_bytes", "max_mean") / 1e6
    out["disk_free_gb"] = _per_session(spans, "twinbench_log_dir_free_bytes", "last_min") / 1e9
    out["disk_used_mb"] = _per_session(spans, "twinbench_log_dir_bytes", "last_sum") / 1e6
    for measure, metric in (("bytes_in_per_s", "twinbench_topic_bytes_in_total"),
                            ("bytes_out_per_s", "twinbench_topic_bytes_out_total"),
                            ("messages_in_per_s", "twinbench_topic_messages_in_total")):
        out[measure] = _per_session(spans, metric, "delta") / window
    for measure, api in (("produce_time_ms", "Produce"), ("fetch_time_ms", "Fetch")):
        total = _per_session(spans, "twinbench_request_time_seconds_sum", "delta", f"api={api}")
        count = _per_session(spans, "twinbench_request_time_seconds_count", "delta",
                             f"api={api}")
        out[measure] = total / count.where(count > 0) * 1e3
    errors = _per_session(spans, "twinbench_response_errors_total", "delta")
    # A session without a single error code has no such series at all: 0 errors, not unknown.
    out["errors_per_s"] = errors.reindex(out.index).fillna(0.0) / window
    out = out.reset_index()
    out["messages"] = [messages_of(c) for c in out["cell_id"]]
    return out


def stats_long(per_session: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """Per workload x cell x scenario x arch x security x measure: n, mean, sd, 95% CI over
    the tries (A/A sides left out), in the architectures' order."""
    cols = ["workload", "cell_id", "messages", "scenario", "arch", "security", "measure", "n",
            "mean", "sd", "ci_lo", "ci_hi"]
    if per_session.empty:
        return pd.DataFrame(columns=cols)
    mine = per_session[per_session["side"] == "*"]
    long = mine.melt(id_vars=["workload", "cell_id", "messages", "scenario", "arch",
                              "security"], value_vars=list(MEASURES), var_name="measure")
    rows = []
    keys = ["workload", "cell_id", "messages", "scenario", "arch", "security", "measure"]
    for key, grp in long.groupby(keys, sort=False, dropna=False):
        v = grp["value"].dropna()
        n = len(v)
        if n == 0:
            continue
        mean, sd = float(v.mean()), float(v.std(ddof=1)) if n > 1 else math.nan
        lo, hi = stats.t_interval(mean, sd, n)
        rows.append({**dict(zip(keys, key, strict=True)), "n": n, "mean": mean, "sd": sd,
                     "ci_lo": lo, "ci_hi": hi})
    out = pd.DataFrame(rows, columns=cols)
    order = {a.name: a.order for a in archs}
    out = out.assign(_a=out["arch"].map(order).fillna(99), _s=out["security"] != "none",
                     _m=out["measure"].map(list(MEASURES).index))
    return out.sort_values(["workload", "scenario", "_m", "_a", "_s", "messages"],
                           kind="stable").drop(columns=["_a", "_s", "_m"]).reset_index(drop=True)


def side_name(arch: str, security: str, archs: Archs = DEFAULT) -> str:
    shown = archs[arch].display_name if arch in archs.names else arch
    return f"{shown}, {'plaintext' if security == 'none' else security.upper()}"


def table_ii(long: pd.DataFrame, paper: pd.DataFrame, archs: Archs = DEFAULT) -> pd.DataFrame:
    """The paper's layout for each workload and scenario: rows measure x side (the paper's own
    values first), columns one per case (messages), cells "mean [95% CI]" or the paper's
    value. Cases without a message count (cells without -m) are columns by cell id."""
    if long.empty:
        return pd.DataFrame()
    frames = []
    for (workload, scenario), block in long.groupby(["workload", "scenario"], sort=False):
        cases = sorted({(m if math.isfinite(m) else math.inf, c)
                        for m, c in zip(block["messages"], block["cell_id"], strict=True)})
        columns = {c: (f"{int(m):,} messages" if math.isfinite(m) else c) for m, c in cases}
        rows = []
        for measure, (title, paper_metric) in MEASURES.items():
            mine = block[block["measure"] == measure]
            if mine.empty:
                continue
            if paper_metric is not None:
                printed = paper[paper["metric"] == paper_metric].set_index("messages")["value"]
                row: dict[str, object] = {"metric": title, "side": "paper (Kafka, SASL+SSL)"}
                for m, c in cases:
                    row[columns[c]] = (printed.get(int(m), math.nan) if math.isfinite(m)
                                       else math.nan)
                rows.append(row)
            for (arch, security), g in mine.groupby(["arch", "security"], sort=False):
                row = {"metric": title, "side": side_name(str(arch), str(security), archs)}
                for _, r in g.iterrows():
                    row[columns[r["cell_id"]]] = _mean_ci(r)
                rows.append(row)
        t = pd.DataFrame(rows, columns=["metric", "side", *columns.values()])
        t.insert(0, "scenario", scenario)
        t.insert(0, "workload", workload)
        frames.append(t)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _mean_ci(r: pd.Series) -> str:
    if r["n"] < 2 or not math.isfinite(r["ci_lo"]):
        return f"{fmt(r['mean'])} (n={int(r['n'])})"
    return f"{fmt(r['mean'])} [{fmt(r['ci_lo'])}, {fmt(r['ci_hi'])}]"
