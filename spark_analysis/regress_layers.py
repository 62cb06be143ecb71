"""The CI regression's layers: what each measures, its band, its verdicts (pure: no I/O).

One regression run is one ``twinbench run --arch both --workload regress``: every session of
the workload on ZooKeeper and on DSBS, interleaved (odd tries zk first, even tries dsbs first:
A B B A). Its sessions are matched by (cell, scenario, try); each layer reduces the run to a few
statistics, and the baseline holds each statistic's value from K calibration runs and the band
that their run-to-run spread sets.

* **exact**: coordination work per 1,000 records, per architecture, cell, scenario and counter
  of the counters contract (``counters.csv``: ZooKeeper requests by type, gossip creations,
  errors; the brokers' Kafka requests by API and fsyncs ...). Counted, not timed, so it does not
  depend on the machine's speed: each statistic has its own tolerance, ``max(FLOOR_PCT, HEADROOM
  x the largest calibration deviation)`` (plus ``ABS_FLOOR`` events per cell, for counters that
  are normally 0), and leaving it fails with a line naming the counter. Counters whose count
  follows the clock rather than the records are left out, each with its reason (``EXCLUDED``).
* **cost**: CPU seconds of every broker and ZooKeeper process per 1,000 records (process CPU
  time, not wall clock), as the DSBS/ZK ratio per scenario (sum over the scenario's sessions of
  each side's CPU, over the sum of its records). Measured side by side in one run, so the
  machine's absolute speed cancels; the absolute CPU per 1,000 records is shown, not judged.
* **throughput**: the DSBS/ZK wall-clock rps ratio per scenario and role, pooled over cells and
  tries as the geometric mean of the paired sessions' ratios, so more pairs make it steadier.

Bands (cost, throughput). For a layer with m statistics and K calibration runs, x_jk = ln of
statistic j in run k. The baseline is x̄_j; the pooled run-to-run variance is
s² = Σ_jk (x_jk - x̄_j)² / (m (K - 1)), df = m (K - 1). A new run is a new draw, so
x_now - x̄_j has variance s² (1 + 1/K) (a prediction interval), and the check is

    |x_now - x̄_j| <= k · s · sqrt(1 + 1/K) + ln(1 + allowance)

with k the t quantile at 1 - alpha_layer / (2 m) (Bonferroni over the layer's statistics). The
layers' alphas add up to the family's (``ALPHA``: 1%): an unchanged system fails the whole
check in at most 1% of CI runs, up to the allowance, a fixed margin for a CI machine that is not
the one the baseline was measured on (a different CPU shifts the ratios a little even with
speed cancelled; the calibration cannot measure that, so it is stated, not estimated). The
margin is small for another VM of the same kind (same CPU model and count, tuned alike:
``same_machine``) and larger for a foreign one (``FOREIGN_ALLOWANCE_PCT``); the baseline
records both bands.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
from scipy import stats as sps

# Family-wise false-failure rate of the whole check, and its split over the layers whose
# statistics are random (the exact layer's tolerances come from the calibration's extremes).
ALPHA = 0.01
LAYER_ALPHA = {"cost": ALPHA / 2, "throughput": ALPHA / 2}
# Fixed margins for a machine other than the baseline's (see the module docstring), in percent:
# another VM of the same CPU model, tuned alike (``same_machine``), or a foreign one (another
# CPU model, CPU count or tuning state). How much the ratios move between CPU models cannot be
# calibrated on one machine; the foreign margin is stated from what moved between the two
# development VMs (an Intel and an AMD one): up to 15% in the cost ratios and 20% in the
# throughput ratios, with the tuning state and the load also differing.
ALLOWANCE_PCT = {"cost": 5.0, "throughput": 8.0}
FOREIGN_ALLOWANCE_PCT = {"cost": 15.0, "throughput": 25.0}
LAYERS = ("exact", "cost", "throughput")

# exact layer: the smallest relative tolerance, the factor on the calibration's largest
# deviation, and the absolute floor in events per cell and scenario (summed over tries).
FLOOR_PCT = 1.0
# In streaming the consumer fetches while the producer writes, so how many records one Fetch
# returns (and with it the fetches, their per_request checks and every_fetch commits per record)
# follows how far the consumer trails: the speed of the machine, not the code. Calibration on
# one machine cannot see that; a faster or slower CI machine can move these counts by tens of
# percent. The floor stays below what a planted extra round trip per produce moves (+50%).
SCENARIO_FLOOR_PCT = {"streaming": 25.0}
# Counters whose count follows the machine as well as the code get a floor of their own.
# fsyncs: the DSBS offset writer's group commit lets commits that arrive during an fsync share
# the next one, so how many share depends on the disk's speed; at most every commit gets its
# own (from the ~720 per 1,000 records measured at batch 1 to 1,000: +40%). A planted extra
# fsync per commit or per produce moves it by more than that.
COUNTER_FLOOR_PCT = {"fsyncs": 40.0}
HEADROOM = 2.0
ABS_FLOOR = 2.0

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
}


def excluded(counter: str) -> str | None:
    """Why the exact layer leaves ``counter`` out, or None when it checks it."""
    if counter in EXCLUDED:
        return EXCLUDED[counter]
    for name, reason in EXCLUDED.items():
        if name.endswith("_") and counter.startswith(name):
            return reason
    return None


# --- statistics of one regression run ----------------------------------------------------------

SESSION = ["cell_id", "scenario", "try"]


def exact_stats(coordination: pd.DataFrame, counters: pd.DataFrame) -> pd.DataFrame:
    """Per (arch, cell_id, scenario, counter): increase per 1,000 records (``per_1000``), over
    every try, with ``records`` the records those tries produced. ``coordination``: arch,
    cell_id, scenario, try, messages; ``counters``: arch, cell_id, scenario, try, counter,
    increase (counters.csv). A counter with an unknown increase in any try is left out."""
    keys = ["arch", "cell_id", "scenario"]
    if counters.empty:
        return pd.DataFrame(columns=[*keys, "counter", "per_1000", "records"])
    kept = counters[counters["counter"].map(lambda c: excluded(str(c)) is None)]
    unknown = kept.groupby([*keys, "counter"])["increase"].apply(lambda s: s.isna().any())
    sums = kept.groupby([*keys, "counter"])["increase"].sum().rename("total").reset_index()
    sums = sums[~unknown.reindex(pd.MultiIndex.from_frame(sums[[*keys, "counter"]])).to_numpy()]
    records = coordination.groupby(keys)["messages"].sum().rename("records").reset_index()
    out = sums.merge(records, on=keys, how="inner")
    out = out[out["records"] > 0]
    out["per_1000"] = out["total"] / out["records"] * 1000
    return out[[*keys, "counter", "per_1000", "records"]].reset_index(drop=True)


def _pairs(frame: pd.DataFrame, base: str, other: str, keys: list[str], value: str
           ) -> pd.DataFrame:
    a = frame[frame["arch"] == base].set_index(keys)[value]
    b = frame[frame["arch"] == other].set_index(keys)[value]
    joined = pd.concat([a.rename("base"), b.rename("other")], axis=1, join="inner")
    return joined.reset_index()


def cost_stats(coordination: pd.DataFrame, base: str, other: str) -> dict[str, float]:
    """Per scenario: other/base ratio of CPU seconds (brokers + services) per 1,000 records,
    over the sessions both architectures ran."""
    frame = coordination.copy()
    frame["cpu_s"] = frame["broker_cpu_s"].fillna(0) + frame["service_cpu_s"].fillna(0)
    frame.loc[frame["broker_cpu_s"].isna(), "cpu_s"] = math.nan
    cpu = _pairs(frame, base, other, SESSION, "cpu_s").dropna()
    msgs = _pairs(frame, base, other, SESSION, "messages").dropna()
    both = cpu.merge(msgs, on=SESSION, suffixes=("_cpu", "_msgs"))
    out = {}
    for scenario, g in both.groupby("scenario"):
        per_base = g["base_cpu"].sum() / g["base_msgs"].sum()
        per_other = g["other_cpu"].sum() / g["other_msgs"].sum()
        if per_base > 0 and per_other > 0:
            out[str(scenario)] = float(per_other / per_base)
    return out


def cpu_per_1000(coordination: pd.DataFrame) -> dict[str, float]:
    """Per ``arch/scenario``: CPU seconds (brokers + services) per 1,000 records (shown, not
    judged: it depends on the machine's speed)."""
    frame = coordination.dropna(subset=["broker_cpu_s"]).copy()
    frame["cpu_s"] = frame["broker_cpu_s"] + frame["service_cpu_s"].fillna(0)
    out = {}
    for (arch, scenario), g in frame.groupby(["arch", "scenario"]):
        if g["messages"].sum() > 0:
            out[f"{arch}/{scenario}"] = float(g["cpu_s"].sum() / g["messages"].sum() * 1000)
    return out


def throughput_stats(records: pd.DataFrame, base: str, other: str) -> dict[str, float]:
    """Per ``scenario/role``: the geometric mean over the paired sessions (cell x try) of
    other/base rps."""
    pairs = _pairs(records, base, other, [*SESSION, "role"], "rps").dropna()
    pairs = pairs[(pairs["base"] > 0) & (pairs["other"] > 0)]
    out = {}
    for (scenario, role), g in pairs.groupby(["scenario", "role"]):
        out[f"{scenario}/{role}"] = float(math.exp((g["other"] / g["base"]).map(math.log)
                                                   .mean()))
    return out


def throughput_noise(runs: Sequence[pd.DataFrame], base: str, other: str) -> pd.DataFrame:
    """Where the throughput layer's run-to-run spread comes from, per ``scenario/role``, from
    the records of K >= 2 runs: ``pair_sd``, the scatter of one paired session's ln(ratio)
    around its run and cell's mean (pooled); ``implied_sd``, what that scatter alone makes of a
    run's mean over its ``pairs``; ``run_sd``, the observed sd of the runs' means. ``run_sd``
    well above ``implied_sd`` means something shared by a run's sessions varies between runs
    (its fresh clusters), which more tries per run cannot average away."""
    frames = []
    for i, records in enumerate(runs):
        pairs = _pairs(records, base, other, [*SESSION, "role"], "rps").dropna()
        pairs = pairs[(pairs["base"] > 0) & (pairs["other"] > 0)].copy()
        pairs["run"] = i
        pairs["lr"] = (pairs["other"] / pairs["base"]).map(math.log)
        frames.append(pairs)
    every = pd.concat(frames, ignore_index=True)
    rows = []
    for (scenario, role), g in every.groupby(["scenario", "role"]):
        cells = g.groupby(["run", "cell_id"])["lr"]
        residual = g["lr"] - cells.transform("mean")
        dof = len(g) - cells.ngroups
        means = g.groupby("run")["lr"].mean()
        if dof < 1 or len(means) < 2:
            continue
        pair_sd = math.sqrt(float((residual ** 2).sum()) / dof)
        per_run = len(g) / len(means)
        rows.append({"statistic": f"{scenario}/{role}", "runs": len(means),
                     "pairs": per_run, "pair_sd": pair_sd,
                     "implied_sd": pair_sd / math.sqrt(per_run),
                     "run_sd": float(means.std(ddof=1))})
    return pd.DataFrame(rows, columns=["statistic", "runs", "pairs", "pair_sd", "implied_sd",
                                       "run_sd"])


# --- bands --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Band:
    """A layer's band from K calibration runs (module docstring)."""

    sigma_log: float   # s: pooled run-to-run sd of ln(statistic)
    k: float           # t multiplier
    df: int
    runs: int          # K
    statistics: int    # m
    alpha: float
    allowance_pct: float

    @property
    def half_width_log(self) -> float:
        return (self.k * self.sigma_log * math.sqrt(1 + 1 / self.runs)
                + math.log1p(self.allowance_pct / 100))

    @property
    def half_width_pct(self) -> float:
        return math.expm1(self.half_width_log) * 100

    def with_allowance(self, allowance_pct: float) -> Band:
        return dataclasses.replace(self, allowance_pct=allowance_pct)


def same_machine(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    """Whether two manifests' ``host`` describe the same kind of machine for the bands: CPU
    model and count, and (when both say) the tuning state (harness/conditions.py)."""
    if (a.get("cpu_model"), a.get("cpu_count")) != (b.get("cpu_model"), b.get("cpu_count")):
        return False
    ca, cb = a.get("conditions"), b.get("conditions")
    ta = ca.get("tuned") if isinstance(ca, Mapping) else None
    tb = cb.get("tuned") if isinstance(cb, Mapping) else None
    return ta is None or tb is None or ta == tb


def baseline_values(runs: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Geometric mean over the calibration runs of every statistic all of them have."""
    names = [n for n in runs[0] if all(n in r and r[n] > 0 for r in runs)] if runs else []
    return {n: math.exp(sum(math.log(r[n]) for r in runs) / len(runs)) for n in names}


def derive_band(runs: Sequence[Mapping[str, float]], alpha: float, allowance_pct: float
                ) -> Band:
    """The band of a layer whose statistics took the values ``runs`` (one mapping per
    calibration run). At least two runs: one run has no spread to measure."""
    if len(runs) < 2:
        raise ValueError("a band needs at least two calibration runs")
    base = baseline_values(runs)
    if not base:
        raise ValueError("no statistic is present in every calibration run")
    squares = sum((math.log(r[n]) - math.log(v)) ** 2 for n, v in base.items() for r in runs)
    df = len(base) * (len(runs) - 1)
    sigma = math.sqrt(squares / df)
    k = float(sps.t.ppf(1 - alpha / (2 * len(base)), df))
    return Band(sigma_log=sigma, k=k, df=df, runs=len(runs), statistics=len(base),
                alpha=alpha, allowance_pct=allowance_pct)


@dataclass(frozen=True)
class Tolerance:
    """One exact-layer statistic's baseline and tolerance (per 1,000 records)."""

    per_1000: float
    tol: float

    @property
    def tol_pct(self) -> float:
        return self.tol / self.per_1000 * 100 if self.per_1000 > 0 else math.inf


def exact_tolerances(runs: Sequence[pd.DataFrame]) -> dict[tuple[str, str, str, str], Tolerance]:
    """Per (arch, cell_id, scenario, counter) present in every calibration run: the mean per
    1,000 records and its tolerance (module docstring)."""
    keys = ["arch", "cell_id", "scenario", "counter"]
    frames = [r.set_index(keys) for r in runs]
    common = frames[0].index
    for f in frames[1:]:
        common = common.intersection(f.index)
    out: dict[tuple[str, str, str, str], Tolerance] = {}
    for key in common:
        values = [float(f.loc[key, "per_1000"]) for f in frames]
        records = min(float(f.loc[key, "records"]) for f in frames)
        mean = sum(values) / len(values)
        spread = max(abs(v - mean) for v in values)
        floor_pct = max(SCENARIO_FLOOR_PCT.get(str(key[2]), FLOOR_PCT),
                        COUNTER_FLOOR_PCT.get(str(key[3]), 0.0))
        tol = max(mean * floor_pct / 100, HEADROOM * spread, ABS_FLOOR / records * 1000)
        arch, cell_id, scenario, counter = (str(k) for k in key)
        out[arch, cell_id, scenario, counter] = Tolerance(mean, tol)
    return out


# --- verdicts -----------------------------------------------------------------------------------

OK, REGRESSION, MISSING = "ok", "REGRESSION", "MISSING"


@dataclass(frozen=True)
class Verdict:
    layer: str
    statistic: str
    baseline: float
    now: float
    # The band as (lo, hi) around the baseline, in the statistic's own unit.
    lo: float
    hi: float
    status: str

    @property
    def change_pct(self) -> float:
        if not math.isfinite(self.now) or self.baseline == 0:
            return math.nan
        return (self.now / self.baseline - 1) * 100


def ratio_verdict(layer: str, statistic: str, baseline: float, now: float | None,
                  half_width_log: float) -> Verdict:
    lo, hi = baseline * math.exp(-half_width_log), baseline * math.exp(half_width_log)
    if now is None or not math.isfinite(now) or now <= 0:
        return Verdict(layer, statistic, baseline, math.nan, lo, hi, MISSING)
    inside = abs(math.log(now) - math.log(baseline)) <= half_width_log
    return Verdict(layer, statistic, baseline, now, lo, hi, OK if inside else REGRESSION)


def exact_verdict(statistic: str, tol: Tolerance, now: float | None) -> Verdict:
    lo, hi = tol.per_1000 - tol.tol, tol.per_1000 + tol.tol
    if now is None or not math.isfinite(now):
        return Verdict("exact", statistic, tol.per_1000, math.nan, lo, hi, MISSING)
    inside = abs(now - tol.per_1000) <= tol.tol
    return Verdict("exact", statistic, tol.per_1000, now, lo, hi, OK if inside else REGRESSION)


def exact_name(arch: str, cell_id: str, scenario: str, counter: str) -> str:
    """How an exact-layer statistic is named in tables and failure lines."""
    return f"{arch} {cell_id} {scenario} {counter}"
