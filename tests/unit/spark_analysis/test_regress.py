"""The CI regression's layers: statistics, band arithmetic and verdicts on hand-made frames
(no Spark, no processes); the baseline file's round trip on hand-written run directories."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats as sps

from brokers.core.errors import UserError
from spark_analysis import regress, synth
from spark_analysis import regress_layers as L
from spark_analysis.schema import (
    COUNTER_COLUMNS,
    FAULT_EVENTS_COLUMNS,
    FAULTS_COLUMNS,
    TIMELINE_COLUMNS,
)
from spark_analysis.synth import COORDINATION_COLUMNS_V1, RECORDS_COLUMNS_V1

CELLS = ("batch_sweep-32B-b1", "batch_sweep-32B-b5")
SCENARIOS = ("split", "streaming")
ROLES = ("production", "consumption")


def frames(*, tries: int = 4, rps: dict[str, float] | None = None,
           cpu: dict[str, float] | None = None, reads: dict[str, float] | None = None,
           jitter: float = 0.0, messages: int = 2000
           ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """records, coordination and counters of one regression run: ``rps`` and ``cpu`` (seconds
    per session) per arch, zk_reads per session per arch; ``jitter`` multiplies every rps by
    1 + jitter on odd tries and 1 - jitter on even ones (dsbs only)."""
    rps = rps or {"zk": 1000.0, "dsbs": 3000.0}
    cpu = cpu or {"zk": 2.0, "dsbs": 0.7}
    reads = reads or {"zk": 4000.0, "dsbs": 0.0}
    records, coordination, counters = [], [], []
    for arch in ("zk", "dsbs"):
        for cell in CELLS:
            for scenario in SCENARIOS:
                for t in range(1, tries + 1):
                    key = {"arch": arch, "cell_id": cell, "scenario": scenario, "try": t}
                    f = 1 + (jitter if t % 2 else -jitter) if arch == "dsbs" else 1
                    for role in ROLES:
                        records.append({**key, "role": role, "rps": rps[arch] * f,
                                        "status": "ok"})
                    coordination.append({**key, "messages": messages,
                                         "broker_cpu_s": cpu[arch] * (0.6 if arch == "zk"
                                                                      else 1.0),
                                         "service_cpu_s": (cpu[arch] * 0.4 if arch == "zk"
                                                           else None)})
                    for counter, value in (("zk_reads", reads[arch]),
                                           ("gossip_packets_out", 7.0 * t),
                                           ("zk_multi", 0.0)):
                        counters.append({**key, "source": "coordinator", "counter": counter,
                                         "increase": value})
    return pd.DataFrame(records), pd.DataFrame(coordination), pd.DataFrame(counters)


def regression_run(**kw: object) -> regress.RegressionRun:
    rec, coord, cnt = frames(**kw)  # type: ignore[arg-type]
    return regress.RegressionRun("regress", "zk", "dsbs", ["r"], rec, coord, cnt)


# --- statistics ---------------------------------------------------------------------------------


def test_exact_statistics_are_counts_per_1000_records_without_the_clock_driven_ones() -> None:
    _rec, coord, cnt = frames()
    stats = L.exact_stats(coord, cnt)
    assert set(stats["counter"]) == {"zk_reads", "zk_multi"}
    row = stats[(stats["arch"] == "zk") & (stats["counter"] == "zk_reads")].iloc[0]
    assert row["per_1000"] == pytest.approx(4000 / 2000 * 1000)
    assert row["records"] == 4 * 2000


def test_every_exclusion_has_a_reason_and_families_match_by_prefix() -> None:
    assert L.excluded("gossip_packets_out")
    assert L.excluded("gossip_dropped_replayed") == L.EXCLUDED["gossip_dropped_"]
    assert L.excluded("zk_reads") is None and L.excluded("zk_writes") is None
    assert all(reason.strip() for reason in L.EXCLUDED.values())


def test_an_unknown_increase_leaves_the_counter_out() -> None:
    _, coord, cnt = frames()
    cnt.loc[(cnt["counter"] == "zk_reads") & (cnt["try"] == 2), "increase"] = math.nan
    stats = L.exact_stats(coord, cnt)
    assert "zk_reads" not in set(stats["counter"])


def test_cost_and_throughput_are_paired_ratios() -> None:
    rec, coord, _ = frames(jitter=0.1)
    cost = L.cost_stats(coord, "zk", "dsbs")
    assert cost == {"split": pytest.approx(0.35), "streaming": pytest.approx(0.35)}
    tput = L.throughput_stats(rec, "zk", "dsbs")
    # Geometric mean of 3.3 and 2.7, tries alternating.
    assert tput["split/production"] == pytest.approx(3 * math.sqrt(1.1 * 0.9))
    assert set(tput) == {f"{s}/{r}" for s in SCENARIOS for r in ROLES}


def test_a_session_only_one_architecture_ran_is_not_paired() -> None:
    rec, _coord, _ = frames()
    rec = rec[~((rec["arch"] == "dsbs") & (rec["try"] == 1))]
    rec.loc[(rec["arch"] == "zk") & (rec["try"] == 1), "rps"] = 1.0  # would halve the mean
    assert L.throughput_stats(rec, "zk", "dsbs")["split/production"] == pytest.approx(3.0)


# --- bands --------------------------------------------------------------------------------------


def test_throughput_noise_separates_the_pairs_scatter_from_a_shift_between_runs() -> None:
    jitter = 0.1
    d = (math.log(1 + jitter) - math.log(1 - jitter)) / 2  # each pair's distance from its mean
    steady = [frames(jitter=jitter)[0] for _ in range(3)]
    noise = L.throughput_noise(steady, "zk", "dsbs").set_index("statistic")
    assert set(noise.index) == {f"{s}/{r}" for s in SCENARIOS for r in ROLES}
    # 4 tries per cell: 3 degrees of freedom per cell mean.
    assert noise["pair_sd"].tolist() == pytest.approx([d * math.sqrt(4 / 3)] * len(noise))
    assert noise["pairs"].tolist() == [4 * len(CELLS)] * len(noise)
    assert noise["implied_sd"].tolist() == pytest.approx(
        (noise["pair_sd"] / math.sqrt(4 * len(CELLS))).tolist())
    assert noise["run_sd"].tolist() == pytest.approx([0.0] * len(noise), abs=1e-12)
    # The same scatter, and one run 20% faster on dsbs throughout: only run_sd moves.
    shifted = [frames(jitter=jitter)[0], frames(jitter=jitter,
                                                rps={"zk": 1000.0, "dsbs": 3600.0})[0]]
    moved = L.throughput_noise(shifted, "zk", "dsbs").set_index("statistic")
    assert moved["pair_sd"].tolist() == pytest.approx(noise["pair_sd"].tolist())
    assert moved["run_sd"].tolist() == pytest.approx([math.log(1.2) / math.sqrt(2)] * len(moved))


def test_the_noise_table_needs_two_runs() -> None:
    with pytest.raises(UserError, match="at least 2"):
        regress.noise_table([regression_run()])
    assert "split/production" in regress.noise_table([regression_run(), regression_run()])


def test_band_is_a_prediction_interval_from_the_pooled_run_to_run_spread() -> None:
    runs = [{"a": 2.0 * math.exp(d), "b": 3.0 * math.exp(-d)} for d in (0.1, -0.1, 0.0)]
    band = L.derive_band(runs, alpha=0.005, allowance_pct=5.0)
    # Each statistic's logs deviate 0.1, -0.1, 0: squares 0.02 per statistic, df 2 x 2.
    assert band.df == 4 and band.statistics == 2 and band.runs == 3
    assert band.sigma_log == pytest.approx(math.sqrt(0.04 / 4))
    assert band.k == pytest.approx(sps.t.ppf(1 - 0.005 / 4, 4))
    assert band.half_width_log == pytest.approx(
        band.k * band.sigma_log * math.sqrt(1 + 1 / 3) + math.log(1.05))
    assert band.half_width_pct == pytest.approx(math.expm1(band.half_width_log) * 100)


def test_band_shrinks_with_runs_and_needs_two() -> None:
    with pytest.raises(ValueError, match="at least two"):
        L.derive_band([{"a": 1.0}], 0.01, 0.0)
    few = L.derive_band([{"a": 1.1}, {"a": 0.9}], 0.01, 0.0)
    many = L.derive_band([{"a": 1.1}, {"a": 0.9}] * 4, 0.01, 0.0)
    assert many.half_width_log < few.half_width_log


def test_baseline_values_are_geometric_means_of_the_statistics_every_run_has() -> None:
    assert L.baseline_values([{"a": 2.0, "b": 1.0}, {"a": 8.0}]) == {"a": pytest.approx(4.0)}


def test_exact_tolerance_takes_the_largest_of_floor_spread_and_absolute_floor() -> None:
    def stats(value: float, counter: str = "zk_reads") -> pd.DataFrame:
        return pd.DataFrame([{"arch": "zk", "cell_id": "c", "scenario": "split",
                              "counter": counter, "per_1000": value, "records": 8000}])
    tol = L.exact_tolerances([stats(1000.0), stats(1000.0)])[("zk", "c", "split", "zk_reads")]
    assert tol.tol == pytest.approx(1000 * L.FLOOR_PCT / 100)
    tol = L.exact_tolerances([stats(990.0), stats(1010.0)])[("zk", "c", "split", "zk_reads")]
    assert tol.tol == pytest.approx(L.HEADROOM * 10)
    zero = L.exact_tolerances([stats(0.0), stats(0.0)])[("zk", "c", "split", "zk_reads")]
    assert zero.tol == pytest.approx(L.ABS_FLOOR / 8000 * 1000)


def test_fsyncs_have_a_floor_of_their_own_for_group_commit() -> None:
    def stats(value: float) -> pd.DataFrame:
        return pd.DataFrame([{"arch": "dsbs", "cell_id": "c", "scenario": "split",
                              "counter": "fsyncs", "per_1000": value, "records": 8000}])
    tol = L.exact_tolerances([stats(700.0), stats(702.0)])[("dsbs", "c", "split", "fsyncs")]
    assert tol.tol == pytest.approx(700.5 * L.COUNTER_FLOOR_PCT["fsyncs"] / 100, rel=1e-3)
    # Below one extra fsync per commit at batch 1 (+1000 per 1,000 records).
    assert tol.tol < 1000


def test_same_machine_is_cpu_model_count_and_tuning() -> None:
    host = {"cpu_model": "AMD EPYC", "cpu_count": 2, "conditions": {"tuned": True}}
    assert L.same_machine(host, dict(host))
    assert L.same_machine(host, {"cpu_model": "AMD EPYC", "cpu_count": 2})  # older manifest
    assert not L.same_machine(host, {**host, "cpu_model": "Intel Xeon"})
    assert not L.same_machine(host, {**host, "cpu_count": 4})
    assert not L.same_machine(host, {**host, "conditions": {"tuned": False}})


# --- verdicts -----------------------------------------------------------------------------------


def test_ratio_verdicts() -> None:
    h = math.log(1.2)
    assert L.ratio_verdict("cost", "split", 2.0, 2.3, h).status == L.OK
    v = L.ratio_verdict("cost", "split", 2.0, 2.5, h)
    assert v.status == L.REGRESSION and v.change_pct == pytest.approx(25.0)
    assert (v.lo, v.hi) == (pytest.approx(2.0 / 1.2), pytest.approx(2.4))
    assert L.ratio_verdict("cost", "split", 2.0, 1.6, h).status == L.REGRESSION
    assert L.ratio_verdict("cost", "split", 2.0, None, h).status == L.MISSING


def test_exact_verdicts_name_the_counter() -> None:
    tol = L.Tolerance(2000.0, 20.0)
    name = L.exact_name("zk", "batch_sweep-32B-b1", "split", "zk_reads")
    assert L.exact_verdict(name, tol, 2015.0).status == L.OK
    v = L.exact_verdict(name, tol, 3000.0)
    assert v.status == L.REGRESSION and "zk_reads" in v.statistic
    assert L.exact_verdict(name, tol, None).status == L.MISSING


def calibration(n: int = 4) -> list[regress.RegressionRun]:
    return [regression_run(jitter=0.02 * (i % 3), cpu={"zk": 2.0, "dsbs": 0.7 + 0.01 * i})
            for i in range(n)]


def test_check_passes_an_unchanged_run_and_fails_the_layer_a_change_moves() -> None:
    base = regress.build_baseline(calibration())
    assert set(base["layers"]) == set(L.LAYERS)
    for layer in L.LAYERS:
        assert base["layers"][layer]["half_width_pct"] >= 0
    same = regress.check(regression_run(), base)
    assert same.ok
    extra = regress.check(regression_run(reads={"zk": 6000.0, "dsbs": 0.0}), base)
    assert extra.failed("exact") and not extra.failed("cost") and not extra.failed("throughput")
    assert any("zk_reads" in v.statistic for v in extra.layer("exact") if v.status != L.OK)
    slow = regress.check(regression_run(rps={"zk": 1000.0, "dsbs": 1500.0},
                                        cpu={"zk": 2.0, "dsbs": 1.6}), base)
    assert slow.failed("cost") and slow.failed("throughput") and not slow.failed("exact")
    text = regress.summarize(slow)
    assert "REGRESSION in cost, throughput" in text and "split/production" in text


def test_a_run_on_another_kind_of_machine_gets_the_wider_band() -> None:
    base = regress.build_baseline(calibration())
    base["host"] = {"cpu_model": "AMD EPYC", "cpu_count": 2}
    for layer in ("cost", "throughput"):
        info = base["layers"][layer]
        assert info["foreign_half_width_pct"] > info["half_width_pct"]
    # Throughput 20% above the baseline: beyond the same-machine band, within the foreign one.
    moved = regression_run(rps={"zk": 1000.0, "dsbs": 3600.0})
    moved.host = {"cpu_model": "AMD EPYC", "cpu_count": 2}
    assert regress.check(moved, base).failed("throughput")
    moved.host = {"cpu_model": "Intel Xeon", "cpu_count": 2}
    foreign = regress.check(moved, base)
    assert not foreign.same_machine and not foreign.failed("throughput")
    assert "another kind of machine" in regress.summarize(foreign, moved)


def test_a_new_family_label_absent_now_counts_as_zero_not_missing() -> None:
    base = regress.build_baseline(calibration())
    run = regression_run()
    run.counters = run.counters[run.counters["counter"] != "zk_multi"]
    assert regress.check(run, base).ok


def test_one_calibration_run_is_refused() -> None:
    with pytest.raises(UserError, match="at least two"):
        regress.build_baseline(calibration(1))


# --- the baseline file and run directories -----------------------------------------------------


def write_regression_run(root: Path, index: int, run: regress.RegressionRun) -> None:
    """Two run directories (zk, dsbs) of one invocation, in the documented format."""
    for arch in ("zk", "dsbs"):
        run_id = synth.run_id_for(arch, "regress", index)
        d = root / run_id
        d.mkdir(parents=True)
        manifest = synth.manifest(run_id, arch, "", "regress", seed=index, format_version=2)
        manifest["run_arches"] = ["zk", "dsbs"]
        (d / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        for name, columns in (("faults.csv", FAULTS_COLUMNS),
                              ("fault_events.csv", FAULT_EVENTS_COLUMNS),
                              ("timeline.csv", TIMELINE_COLUMNS)):
            (d / name).write_text(",".join(columns) + "\n", encoding="utf-8")
        for name, frame, columns in (("records.csv", run.records, RECORDS_COLUMNS_V1),
                                     ("coordination.csv", run.coordination,
                                      COORDINATION_COLUMNS_V1),
                                     ("counters.csv", run.counters, COUNTER_COLUMNS)):
            rows = frame[frame["arch"] == arch].assign(run_id=run_id)
            rows.reindex(columns=list(columns)).to_csv(d / name, index=False)


@pytest.mark.filesystem
def test_baseline_round_trip_through_run_directories(tmp_path: Path) -> None:
    cal = tmp_path / "cal"
    for i, run in enumerate(calibration(3), start=1):
        write_regression_run(cal, i, run)
    runs = regress.read_runs([cal])
    assert len(runs) == 3 and runs[0].base == "zk" and runs[0].other == "dsbs"
    path = regress.write_baseline(runs, tmp_path / "baseline")
    data = json.loads(path.read_text())
    assert data["version"] == regress.BASELINE_VERSION
    assert {"exact", "cost", "throughput"} <= set(data["layers"])
    now = tmp_path / "now"
    write_regression_run(now, 9, regression_run())
    ok, text = regress.run_check([now], tmp_path / "baseline", tmp_path / "out")
    assert ok, text
    assert (tmp_path / "out" / "regression.csv").is_file()


@pytest.mark.filesystem
def test_old_or_foreign_baselines_fail_with_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no baseline here"):
        regress.load_baseline(tmp_path)
    (tmp_path / "baseline.json").write_text(json.dumps(
        {"kind": regress.BASELINE_KIND, "version": 1}))
    with pytest.raises(UserError, match=r"baseline version 1 .* rewrite it with 'make baseline'"):
        regress.load_baseline(tmp_path)
    (tmp_path / "baseline.json").write_text("{}")
    with pytest.raises(UserError, match="not a twinbench regression baseline"):
        regress.load_baseline(tmp_path)


def test_the_committed_baseline_is_of_the_current_version() -> None:
    root = Path(__file__).resolve().parents[3]
    data = regress.load_baseline(root / "results" / "baseline")
    assert data["workload"] == "regress"
    for layer in L.LAYERS:
        assert 0 <= data["layers"][layer]["half_width_pct"] < math.inf
    assert len(data["layers"]["cost"]["calibration"]) >= 2
