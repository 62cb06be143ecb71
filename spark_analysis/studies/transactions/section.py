"""The exactly-once study's report section (Markdown): per architecture, each cell's records/s
in transactions and without, their ratio, what a transaction costs in coordination and how long
its commit takes; and the Summary lines."""

from __future__ import annotations

import pandas as pd

from spark_analysis.archs import DEFAULT, ArchLabel, Archs
from spark_analysis.markdown import fmt, interval, md_table

TRANSACTIONS_INTRO = """\
Exactly-once (`make bench-exactly-once`, docs/transactions.md): each cell moves the same records
in transactions of N batches and, beside it in the same try, without transactions (an
idempotent producer flushed every N batches; consume-transform-produce commits the consumer's
offsets after every batch). `produce`: a producer alone, a read_committed consumer reading its
output; `ctp`: a read_committed consumer and a producer copying a filled topic, the offsets sent
with each transaction. Per side: mean [95% CI] over tries; `with/without` is the ratio of the
records/s means (Fieller 95% interval): below 1 is what transactions cost in throughput. A unit
is a transaction, or without transactions the same batches up to a flush: the coordination per
unit is the architecture's own traffic (ZooKeeper requests, Raft messages, gossip packets) over
the timed part until its output was readable, background traffic included, divided by the
units. Commit: `commit_transaction`'s wall time per transaction (the mean over tries of each
try's percentile).
"""


def _get(st: pd.DataFrame, metric: str, transactional: bool) -> pd.Series | None:
    rows = st[(st["metric"] == metric) & (st["transactional"] == transactional)]
    return None if rows.empty else rows.iloc[0]


def _mean_ci(r: pd.Series | None) -> str:
    if r is None:
        return "-"
    if int(r["n"]) < 2:
        return f"{fmt(float(r['mean']))} (n={int(r['n'])})"
    return f"{fmt(float(r['mean']))} {interval(float(r['ci_lo']), float(r['ci_hi']))}"


def _mean(r: pd.Series | None) -> str:
    return "-" if r is None else fmt(float(r["mean"]))


def _ratio(tp: pd.DataFrame) -> str:
    if tp.empty:
        return "-"
    r = tp.iloc[0]
    if pd.isna(r["ratio_ci_lo"]):
        return fmt(r["ratio"])
    return f"{fmt(r['ratio'])} {interval(r['ratio_ci_lo'], r['ratio_ci_hi'])}"


def arch_rows(st: pd.DataFrame, tp: pd.DataFrame, a: ArchLabel) -> pd.DataFrame:
    """One architecture's table for one workload and batch: a row per shape and size."""
    cost = f"{a.cost_column}_per_unit"
    rows = []
    for (shape, size), g in st.groupby(["shape", "txn_batches"], sort=False):
        ratio = tp[(tp["shape"] == shape) & (tp["txn_batches"] == size)] if not tp.empty \
            else tp
        rows.append({
            "shape": shape, "batches / txn": int(size),
            "records/s in transactions": _mean_ci(_get(g, "rps", True)),
            "records/s without": _mean_ci(_get(g, "rps", False)),
            "with/without": _ratio(ratio),
            f"{a.cost_label} / txn": _mean_ci(_get(g, cost, True)),
            f"{a.cost_label} / unit without": _mean(_get(g, cost, False)),
            "WriteTxnMarkers / txn": _mean(_get(g, "write_txn_markers_per_unit", True)),
            "commit p50 (ms)": _mean(_get(g, "commit_p50_ms", True)),
            "commit p99 (ms)": _mean(_get(g, "commit_p99_ms", True)),
        })
    return pd.DataFrame(rows)


def transactions_md(st: pd.DataFrame, tp: pd.DataFrame, archs: Archs = DEFAULT) -> str:
    if st.empty:
        return ("_No exactly-once sessions among the inputs (`make bench-exactly-once`; "
                "docs/transactions.md)._\n")
    parts = [TRANSACTIONS_INTRO]
    for (workload, size, batch), block in st.groupby(["workload", "msg_size", "batch"],
                                                     sort=False):
        mine_tp = tp[(tp["workload"] == workload) & (tp["msg_size"] == size)
                     & (tp["batch"] == batch)] if not tp.empty else tp
        for a in archs:
            st_a = block[block["arch"] == a.name]
            if st_a.empty:
                continue
            tp_a = mine_tp[mine_tp["arch"] == a.name] if not mine_tp.empty else mine_tp
            parts += [f"**{a.display_name}** (workload `{workload}`, batches of {int(batch)} "
                      f"records of {int(size)} B)\n", md_table(arch_rows(st_a, tp_a, a))]
    parts.append("Every measure, both sides: `transactions_stats.csv` (long, with intervals: "
                 "CPU, reads, the coordinator's own message count); the ratios: "
                 "`transactions_throughput.csv`.\n")
    return "\n".join(parts)


def transactions_headline(tp: pd.DataFrame, archs: Archs = DEFAULT) -> str:
    """Per workload and shape: the with/without ratio at the smallest and the largest
    transaction, every architecture."""
    if tp.empty:
        return ""
    lines = []
    for (workload, shape), g in tp.groupby(["workload", "shape"], sort=False):
        sizes = sorted(int(s) for s in g["txn_batches"].unique())
        ends = [sizes[0], sizes[-1]] if len(sizes) > 1 else sizes
        sides = []
        for a in archs:
            mine = g[g["arch"] == a.name]
            if mine.empty:
                continue
            kept = [fmt(float(mine.loc[mine["txn_batches"] == s, "ratio"].iloc[0]))
                    if (mine["txn_batches"] == s).any() else "-" for s in ends]
            sides.append(f"{a.short_name} {' / '.join(kept)}")
        lines.append(f"- Exactly-once ({workload}, {shape}): transactions of "
                     f"{' / '.join(str(s) for s in ends)} batches keep "
                     + ", ".join(sides) + " of the records/s without. See \"Exactly-once\".")
    return "\n".join(lines) + "\n"
