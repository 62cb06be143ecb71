"""The regression's layers: what each compares between head and base, its band, its verdicts
(pure: no I/O).

A regression run (``make regress``, harness/regression) runs one workload on every arm: each
architecture from this tree (head: ``zk``, ``dsbs``) and from the base (``zk@base``,
``dsbs@base``), interleaved session by session, the tries alternating their order (A B B A).
A head session and its base session of the same cell, scenario and try are a pair: measured
the same way, back to back, on the same machine. If head's code is base's, every pair is an A/A
pair and its difference is noise alone; so the spread of a statistic's pairs in the run is the
A/A spread measured the same way, and each band is built from it. Nothing is carried over from
another machine or another day.

Each statistic belongs to one architecture (head arm against its own base arm), so a slowdown
of the shared core shows on each twin; nothing is judged as a DSBS/ZK ratio.

* **exact**: coordination work per 1,000 records per cell, scenario and counter (counters.csv:
  ZooKeeper requests by type, gossip creations, errors, the brokers' Kafka requests by API,
  fsyncs ...), summed over the tries. Every counter either side reports is compared; one that
  only one side reports (a new request type, a counter gone) fails, unless it stayed 0. The
  tolerance is ``max(FLOOR_PCT of the base, ABS_FLOOR events, k x the sd of the per-try
  differences / sqrt(n))``: counted work is usually exact, and where it follows the machine
  (streaming fetch sizes, group-committed fsyncs) the tries' own spread widens it. Counters
  whose count follows the clock rather than the records are left out, each with its reason
  (``EXCLUDED``).
* **zookeeper**: a cross-check of the brokers' own count of ZooKeeper requests against
  ZooKeeper's (``mntr`` packets_received, summed over the ensemble). ZooKeeper must have
  received at least what the brokers say they sent; what it received beyond that (the client's
  pings, session set-up) per 1,000 records is compared as an exact statistic with an absolute
  floor (``ZK_ABS_FLOOR``: pings follow the clock), so requests the brokers stop counting show
  up here even when their own counter agrees with itself.
* **cost**: CPU seconds of every broker and service process per record (process CPU time), per
  architecture (its cells and scenarios pooled): the geometric mean over the pairs of
  head/base.
* **throughput**: wall-clock records/s per architecture, scenario and role: the geometric mean
  over the pairs of head/base.

Bands (cost, throughput). For a statistic with n pairs, d_i = ln(head_i / base_i). Its change
is exp(mean d) - 1, and it passes when

    |mean d| <= max(k · s_d / sqrt(n), ln(1 + FLOOR_RATIO_PCT / 100))

with s_d the sd of its d_i (the A/A spread: what one pair's difference scatters by) and k the t
quantile at 1 - alpha_layer / (2 m), df n - 1 (Bonferroni over the layer's m statistics). The
layers' alphas add up to ``ALPHA`` (1%): code that did not change fails the whole check in at
most 1% of runs. The floor keeps a statistic whose pairs happen to agree closely from failing
on a change nobody could act on (it is stated, and small).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from scipy import stats as sps

from twinbench_common.labels import base_name, head_of

# Family-wise false-failure rate of the whole check, and its split over the layers.
ALPHA = 0.01
LAYER_ALPHA = {"exact": ALPHA / 4, "zookeeper": ALPHA / 4, "cost": ALPHA / 4,
               "throughput": ALPHA / 4}
LAYERS = ("exact", "zookeeper", "cost", "throughput")

# exact and zookeeper layers: the smallest relative tolerance (percent of the base's count), and
# the absolute floor in events per cell and scenario (summed over tries).
FLOOR_PCT = 1.0
ABS_FLOOR = 2.0
# zookeeper layer: the absolute floor, packets per 1,000 records. What ZooKeeper receives
# beyond the brokers' requests is mostly pings, one per client every third of the session
# timeout: it follows the session's length (the machine's speed), not the records, and moves
# by tens of percent between A/A tries. A request the brokers stop counting costs one per
# request or per partition: at least 200 per 1,000 records at batch 5, far above this floor.
ZK_ABS_FLOOR = 20.0
# cost and throughput layers: the narrowest band, percent.
FLOOR_RATIO_PCT = 1.0

# Counters the exact layer leaves out, and why. A family is named by its prefix with a
# trailing underscore.
EXCLUDED: Mapping[str, str] = {
    "coordination_ops": "an alias: zk_requests (zk) or gossip_packets_out (dsbs)",
    "gossip_packets_out": "SWIM probes, acks and syncs go out every protocol period: per second,"
                          " not per record",
    "gossip_bytes_out": "as gossip_packets_out",
    "gossip_packets_in": "as gossip_packets_out",
    "gossip_bytes_in": "as gossip_packets_out",
    "gossip_offset_batches_out": "offsets go to successors every replication interval, as many"
                                 " batches as intervals",
    "gossip_late_acks": "acks that arrive after their probe timed out: timing",
    "gossip_sync_replies_in": "periodic member-table syncs",
    "gossip_reconnect_syncs": "periodic member-table syncs",
    "gossip_dropped_": "drops follow queue depth and timing, not records",
    "gossip_declared_": "failure detection: timing under load",
    "gossip_refutations": "failure detection: timing under load",
    "zk_request_timeouts": "a symptom of a loaded machine, not coordination work",
    "zk_session_suspended": "session health: timing under load",
    "zk_session_lost": "session health: timing under load",
    "zk_reconnects": "session health: timing under load",
    "zk_direct_connects": "session health: timing under load",
    "zk_direct_disconnects": "session health: timing under load",
    "kafka_requests_heartbeat": "consumers heartbeat every heartbeat.interval.ms: per second,"
                                " not per record",
    "kafka_requests_api_versions": "one per new client connection, and clients reconnect"
                                   " after a timed-out request: follows the machine's speed",
    "cpu_user_s": "CPU time is the cost layer's",
    "cpu_system_s": "CPU time is the cost layer's",
    "zookeeper:": "ZooKeeper's own counters are the zookeeper layer's (pings follow the clock)",
    "delay:": "the delay line's own counters",
}
# The brokers' count of their ZooKeeper requests, and ZooKeeper's count of what it received.
BROKER_ZK_REQUESTS = ("coordinator", "zk_requests")
SERVICE_ZK_PACKETS = ("zookeeper", "packets_received")

SESSION = ["cell_id", "scenario", "try"]


def excluded(source: str, counter: str) -> str | None:
    """Why the exact layer leaves ``source:counter`` out, or None when it checks it."""
    for name in (counter, f"{source}:"):
        if name in EXCLUDED:
            return EXCLUDED[name]
    for name, reason in EXCLUDED.items():
        if name.endswith("_") and counter.startswith(name):
            return reason
    return None


def pairs_of(arms: Sequence[str]) -> list[tuple[str, str]]:
    """(head arm, base arm) for every architecture both arms of which ran."""
    present = set(arms)
    return [(a, base_name(a)) for a in sorted(present)
            if head_of(a) == a and base_name(a) in present]


# --- verdicts -----------------------------------------------------------------------------------

OK, REGRESSION, MISSING = "ok", "REGRESSION", "MISSING"


@dataclass(frozen=True)
class Verdict:
    layer: str
    statistic: str
    base: float
    head: float
    # Allowed |head - base| (exact, zookeeper: in the statistic's unit) or |ln(head/base)|.
    tolerance: float
    status: str
    # The pairs behind the statistic and their spread (cost, throughput: sd of ln ratios;
    # exact: sd of the per-try differences).
    n: int = 0
    spread: float = math.nan
    note: str = ""

    @property
    def change_pct(self) -> float:
        if not (math.isfinite(self.head) and math.isfinite(self.base)) or self.base == 0:
            return math.nan
        return (self.head / self.base - 1) * 100

    @property
    def band_pct(self) -> float:
        """The band's half-width in percent of the base."""
        if self.layer in ("cost", "throughput"):
            return math.expm1(self.tolerance) * 100
        return self.tolerance / self.base * 100 if self.base > 0 else math.inf


def t_multiplier(alpha: float, m: int, n: int) -> float:
    """k of a two-sided interval at family-wise ``alpha`` over ``m`` statistics, df n - 1."""
    if n < 2:
        return math.inf
    return float(sps.t.ppf(1 - alpha / (2 * max(m, 1)), n - 1))


# --- exact and zookeeper: counts per 1,000 records ----------------------------------------------


def per_try_counts(coordination: pd.DataFrame, counters: pd.DataFrame) -> pd.DataFrame:
    """Per (arch, cell_id, scenario, try, source, counter): the increase and the session's
    records (``messages``). A counter with an unknown increase is dropped for that try."""
    keys = ["arch", *SESSION]
    if counters.empty:
        return pd.DataFrame(columns=[*keys, "source", "counter", "increase", "records"])
    summed = (counters.dropna(subset=["increase"])
              .groupby([*keys, "source", "counter"], as_index=False)["increase"].sum())
    records = coordination.groupby(keys, as_index=False)["messages"].sum().rename(
        columns={"messages": "records"})
    out = summed.merge(records, on=keys, how="inner")
    return out[out["records"] > 0].reset_index(drop=True)


@dataclass(frozen=True)
class CountStat:
    """One count per 1,000 records on both sides."""

    name: str
    base: float | None
    head: float | None
    records: float
    # Per-try head - base (per 1,000 records), for the tries both sides have.
    diffs: tuple[float, ...]


def _count_stat(name: str, head: pd.DataFrame, base: pd.DataFrame) -> CountStat:
    """``head``/``base``: rows of one statistic (try, increase, records) on each side."""
    def per_1000(g: pd.DataFrame) -> float | None:
        return float(g["increase"].sum() / g["records"].sum() * 1000) if len(g) else None

    both = head.merge(base, on="try", suffixes=("_h", "_b"))
    diffs = tuple(float(h / rh * 1000 - b / rb * 1000) for h, rh, b, rb in zip(
        both["increase_h"], both["records_h"], both["increase_b"], both["records_b"],
        strict=True))
    records = float(min(head["records"].sum() if len(head) else math.inf,
                        base["records"].sum() if len(base) else math.inf))
    return CountStat(name, per_1000(base), per_1000(head), records, diffs)


def exact_stats(counts: pd.DataFrame, head: str, base: str) -> list[CountStat]:
    """Every counter either arm reports (not excluded), per cell and scenario."""
    counts = counts[[excluded(s, c) is None for s, c in zip(counts["source"], counts["counter"],
                                                             strict=True)]]
    key = ["cell_id", "scenario", "source", "counter"]
    h = counts[counts["arch"] == head]
    b = counts[counts["arch"] == base]
    out = []
    for k in sorted(set(map(tuple, h[key].to_numpy())) | set(map(tuple, b[key].to_numpy()))):
        cell, scenario, source, counter = (str(x) for x in k)
        sel_h = h[(h["cell_id"] == cell) & (h["scenario"] == scenario) & (h["source"] == source)
                  & (h["counter"] == counter)]
        sel_b = b[(b["cell_id"] == cell) & (b["scenario"] == scenario) & (b["source"] == source)
                  & (b["counter"] == counter)]
        name = f"{head} {cell} {scenario} {source}:{counter}"
        out.append(_count_stat(name, sel_h, sel_b))
    return out


def zookeeper_stats(counts: pd.DataFrame, head: str, base: str
                    ) -> tuple[list[CountStat], list[str]]:
    """Per cell and scenario: what ZooKeeper received beyond the brokers' own count, per 1,000
    records; and one line per session where the brokers claim more than ZooKeeper received."""
    stats: list[CountStat] = []
    impossible: list[str] = []
    frames = {}
    for arm in (head, base):
        mine = counts[counts["arch"] == arm]
        brokers = mine[(mine["source"] == BROKER_ZK_REQUESTS[0])
                       & (mine["counter"] == BROKER_ZK_REQUESTS[1])]
        server = mine[(mine["source"] == SERVICE_ZK_PACKETS[0])
                      & (mine["counter"] == SERVICE_ZK_PACKETS[1])]
        if brokers.empty or server.empty:
            return [], []
        joined = brokers.merge(server, on=SESSION, suffixes=("_b", "_s"))
        for cell, scenario, try_no, claimed, received in zip(
                joined["cell_id"], joined["scenario"], joined["try"], joined["increase_b"],
                joined["increase_s"], strict=True):
            if received < claimed:
                impossible.append(f"{arm} {cell} {scenario} try {try_no}: the brokers counted "
                                  f"{claimed:.0f} ZooKeeper requests, ZooKeeper received "
                                  f"{received:.0f} packets")
        frames[arm] = pd.DataFrame({
            "cell_id": joined["cell_id"], "scenario": joined["scenario"], "try": joined["try"],
            "increase": joined["increase_s"] - joined["increase_b"],
            "records": joined["records_b"]})
    for cell, scenario in sorted(set(zip(frames[head]["cell_id"], frames[head]["scenario"],
                                         strict=True))):
        def sel(f: pd.DataFrame, c: str = cell, s: str = scenario) -> pd.DataFrame:
            return f[(f["cell_id"] == c) & (f["scenario"] == s)]
        stats.append(_count_stat(f"{head} {cell} {scenario} zookeeper packets beyond the "
                                 "brokers' requests", sel(frames[head]), sel(frames[base])))
    return stats, impossible


def count_verdict(layer: str, stat: CountStat, k: float) -> Verdict:
    if stat.head is None or stat.base is None:
        present = stat.head if stat.head is not None else stat.base
        # A counter only one side reports, and that stayed 0, says nothing changed.
        if present == 0:
            return Verdict(layer, stat.name, stat.base or 0.0, stat.head or 0.0, 0.0, OK)
        side = "head" if stat.base is None else "base"
        return Verdict(layer, stat.name, stat.base if stat.base is not None else math.nan,
                       stat.head if stat.head is not None else math.nan, 0.0, REGRESSION,
                       note=f"reported by {side} only")
    n = len(stat.diffs)
    sd = float(pd.Series(stat.diffs).std(ddof=1)) if n > 1 else 0.0
    tol = max(abs(stat.base) * FLOOR_PCT / 100, ABS_FLOOR / stat.records * 1000,
              ZK_ABS_FLOOR if layer == "zookeeper" else 0.0,
              k * sd / math.sqrt(n) if n > 1 and math.isfinite(k) else 0.0)
    status = OK if abs(stat.head - stat.base) <= tol else REGRESSION
    return Verdict(layer, stat.name, stat.base, stat.head, tol, status, n, sd)


# --- cost and throughput: paired ratios ---------------------------------------------------------


@dataclass(frozen=True)
class RatioStat:
    name: str
    # ln(head / base) of every pair.
    logs: tuple[float, ...]
    # The values themselves (mean over pairs), for the table.
    base: float
    head: float


def cost_stats(coordination: pd.DataFrame, head: str, base: str) -> list[RatioStat]:
    """One statistic per architecture: CPU seconds (brokers + services) per record, paired by
    cell, scenario and try. The scenarios are pooled: a change of the code's CPU per record
    moves both, and one statistic of every pair halves the Bonferroni count and doubles n."""
    frame = coordination.dropna(subset=["broker_cpu_s"]).copy()
    frame = frame[frame["messages"] > 0]
    frame["cpu"] = (frame["broker_cpu_s"] + frame["service_cpu_s"].fillna(0)) / frame["messages"]
    return _ratio_stats(frame, head, base, [], "cpu",
                        lambda k: f"{head} CPU per 1,000 records", scale=1000.0)


def throughput_stats(records: pd.DataFrame, head: str, base: str) -> list[RatioStat]:
    """Per scenario and role: records/s, paired by cell and try."""
    frame = records[records["rps"] > 0]
    return _ratio_stats(frame, head, base, ["scenario", "role"], "rps",
                        lambda k: f"{head} {k[0]}/{k[1]} records/s")


def _ratio_stats(frame: pd.DataFrame, head: str, base: str, group: list[str], value: str,
                 name: Callable[[tuple[Any, ...]], str], scale: float = 1.0
                 ) -> list[RatioStat]:
    keys = [*group, *(k for k in ("scenario", "cell_id", "try") if k not in group)]
    h = frame[frame["arch"] == head].set_index(keys)[value]
    b = frame[frame["arch"] == base].set_index(keys)[value]
    joined = pd.concat([h.rename("h"), b.rename("b")], axis=1, join="inner").dropna()
    joined = joined[(joined["h"] > 0) & (joined["b"] > 0)].reset_index()
    out = []
    groups = joined.groupby(group) if group else [((), joined)]
    for k, g in groups:
        k = k if isinstance(k, tuple) else (k,)
        logs = tuple(math.log(x / y) for x, y in zip(g["h"], g["b"], strict=True))
        out.append(RatioStat(name(k), logs, float(g["b"].mean()) * scale,
                             float(g["h"].mean()) * scale))
    return out


def ratio_verdict(layer: str, stat: RatioStat, k: float) -> Verdict:
    n = len(stat.logs)
    mean = sum(stat.logs) / n if n else math.nan
    sd = float(pd.Series(stat.logs).std(ddof=1)) if n > 1 else math.nan
    half = max(k * sd / math.sqrt(n) if n > 1 else math.inf, math.log1p(FLOOR_RATIO_PCT / 100))
    if n < 2 or not math.isfinite(mean):
        return Verdict(layer, stat.name, stat.base, stat.head, half, MISSING, n, sd,
                       note="fewer than 2 pairs")
    # Shown as the base's mean and the base's mean moved by the pairs' geometric mean ratio,
    # so the change is exactly that ratio.
    status = OK if abs(mean) <= half else REGRESSION
    return Verdict(layer, stat.name, stat.base, stat.base * math.exp(mean), half, status, n, sd)
