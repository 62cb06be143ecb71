"""The regression's layers, head against base: statistics, bands and verdicts on hand-made
frames of the four arms (no Spark, no processes); reading a run from hand-written run
directories."""

from __future__ import annotations

import json
import math
import random
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
from twinbench_common.labels import head_of

CELLS = ("batch_sweep-32B-b1", "batch_sweep-32B-b5")
SCENARIOS = ("split", "streaming")
ROLES = ("production", "consumption")
ARMS = ("zk", "zk@base", "dsbs", "dsbs@base")


def frames(*, tries: int = 6, head: dict[str, float] | None = None, noise: float = 0.02,
           reads: dict[str, float] | None = None, extra_counter: str | None = None,
           zk_packets_extra: float = 300.0, seed: int = 1, messages: int = 2000,
           arms: tuple[str, ...] = ARMS) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """records, coordination and counters of one regression run. Every value of a head arm is
    its base's times ``head[arm]`` (default 1: unchanged), each session with a lognormal
    ``noise``; zk_reads per session per arm (``reads``); ZooKeeper's packets are the brokers'
    requests plus ``zk_packets_extra``."""
    rng = random.Random(seed)
    head = head or {}
    reads = reads or {}
    records, coordination, counters = [], [], []
    for arm in arms:
        arch = head_of(arm).split("+")[0]  # "dsbs+slow-append" is a dsbs arm
        factor = head.get(arm, 1.0)
        for cell in CELLS:
            for scenario in SCENARIOS:
                for t in range(1, tries + 1):
                    key = {"arch": arm, "cell_id": cell, "scenario": scenario, "try": t}
                    base_rps = 1000.0 if arch == "zk" else 3000.0
                    for role in ROLES:
                        records.append({**key, "role": role, "status": "ok",
                                        "rps": base_rps / factor
                                        * math.exp(rng.gauss(0, noise))})
                    cpu = (2.0 if arch == "zk" else 0.7) * factor * math.exp(rng.gauss(0, noise))
                    coordination.append({**key, "messages": messages,
                                         "broker_cpu_s": cpu * 0.6,
                                         "service_cpu_s": cpu * 0.4 if arch == "zk" else None})
                    requests = reads.get(arm, 4000.0 if arch == "zk" else 0.0)
                    rows = [("coordinator", "zk_reads", requests),
                            ("coordinator", "gossip_packets_out", 7.0 * t),
                            ("coordinator", "zk_multi", 0.0)]
                    if arch == "zk":
                        rows += [("coordinator", "zk_requests", requests),
                                 ("zookeeper", "packets_received",
                                  requests + zk_packets_extra)]
                    if extra_counter and arm == extra_counter.split(":")[0]:
                        rows.append(("broker", extra_counter.split(":")[1], 50.0))
                    for source, counter, value in rows:
                        counters.append({**key, "source": source, "counter": counter,
                                         "increase": value})
    return pd.DataFrame(records), pd.DataFrame(coordination), pd.DataFrame(counters)


def regression_run(**kw: object) -> regress.RegressionRun:
    rec, coord, cnt = frames(**kw)  # type: ignore[arg-type]
    return regress.RegressionRun("regress", list(ARMS), ["r"], rec, coord, cnt)


def failing(result: regress.CheckResult) -> set[tuple[str, str]]:
    return {(v.layer, v.statistic) for v in result.verdicts if v.status != L.OK}


# --- pairs and statistics ------------------------------------------------------------------------


def test_each_architecture_is_paired_with_its_base_arm() -> None:
    assert L.pairs_of(ARMS) == [("dsbs", "dsbs@base"), ("zk", "zk@base")]
    assert L.pairs_of(["zk", "dsbs@base"]) == []
    assert head_of("zk@base") == "zk" and head_of("zk") == "zk"


def test_every_exclusion_has_a_reason_and_families_and_sources_match() -> None:
    assert all(reason for reason in L.EXCLUDED.values())
    assert L.excluded("coordinator", "gossip_dropped_full") is not None
    assert L.excluded("zookeeper", "packets_received") is not None  # the zookeeper layer's
    assert L.excluded("coordinator", "zk_reads") is None


def test_an_unchanged_run_passes_every_layer() -> None:
    result = regress.check(regression_run())
    assert result.ok, failing(result)
    layers = {v.layer for v in result.verdicts}
    assert layers == {"exact", "zookeeper", "cost", "throughput"}
    # Each twin judged on its own (no DSBS/ZK ratio anywhere).
    cost = {v.statistic for v in result.layer("cost")}
    assert cost == {f"{a} CPU per 1,000 records" for a in ("zk", "dsbs")}
    assert all(v.n == len(CELLS) * len(SCENARIOS) * 6 for v in result.layer("cost"))


def test_a_slower_shared_core_fails_each_twin_on_its_own() -> None:
    """+10% CPU and -10% records/s on both twins: a DSBS/ZK ratio would not move; each twin's
    own cost and throughput do."""
    result = regress.check(regression_run(head={"zk": 1.10, "dsbs": 1.10}))
    bad = failing(result)
    for arch in ("zk", "dsbs"):
        assert ("cost", f"{arch} CPU per 1,000 records") in bad
        assert any(layer == "throughput" and name.startswith(f"{arch} ")
                   for layer, name in bad)
    assert not any(layer == "exact" for layer, _ in bad)


def test_an_extra_request_per_record_fails_the_exact_layer_naming_the_counter() -> None:
    result = regress.check(regression_run(reads={"zk": 4400.0}))
    assert ("exact", "zk batch_sweep-32B-b1 split coordinator:zk_reads") in failing(result)
    v = next(v for v in result.layer("exact")
             if v.statistic == "zk batch_sweep-32B-b1 split coordinator:zk_reads")
    assert v.change_pct == pytest.approx(10.0)


def test_a_counter_only_one_side_reports_fails_unless_it_stayed_zero() -> None:
    result = regress.check(regression_run(extra_counter="dsbs:kafka_requests_new_api"))
    bad = [v for v in result.layer("exact") if v.status != L.OK]
    assert bad and all("kafka_requests_new_api" in v.statistic for v in bad)
    assert bad[0].note == "reported by head only"
    gone = L.count_verdict("exact", L.CountStat("x", 0.0, None, 100.0, ()), 3.0)
    assert gone.status == L.OK


def test_requests_the_brokers_stop_counting_show_in_the_zookeeper_layer() -> None:
    """The brokers' own counter says 4000 reads on both sides, but ZooKeeper received 400 more
    per session on head: uncounted requests."""
    rec, coord, cnt = frames()
    more = (cnt["arch"] == "zk") & (cnt["source"] == "zookeeper")
    cnt.loc[more, "increase"] += 400
    result = regress.check(regress.RegressionRun("regress", list(ARMS), ["r"], rec, coord,
                                                 cnt))
    assert result.failed("zookeeper") and not result.failed("exact")
    # And a broker claiming more than ZooKeeper received is impossible, whatever the base.
    claim = (cnt["arch"] == "zk") & (cnt["counter"] == "zk_requests")
    cnt.loc[claim, "increase"] += 10_000
    result = regress.check(regress.RegressionRun("regress", list(ARMS), ["r"], rec, coord,
                                                 cnt))
    assert result.impossible and result.failed("zookeeper")


def test_pings_moving_with_the_clock_stay_inside_the_zookeeper_floor() -> None:
    """ZooKeeper's packets beyond the brokers' requests are mostly pings: 15 more per 1,000
    records on head (30 per 2,000-record session) is the clock, not the code."""
    rec, coord, cnt = frames()
    more = (cnt["arch"] == "zk") & (cnt["source"] == "zookeeper")
    cnt.loc[more, "increase"] += 30
    result = regress.check(regress.RegressionRun("regress", list(ARMS), ["r"], rec, coord,
                                                 cnt))
    assert not result.failed("zookeeper")


# --- positive controls ---------------------------------------------------------------------------

CONTROL = "dsbs+slow-append"


def control_run(factor: float, expect: tuple[str, ...] = ("cost",),
                what: str = "a slower storage append") -> regress.RegressionRun:
    """The four arms and a dsbs control whose values are head's times ``factor``."""
    arms = (*ARMS, CONTROL)
    rec, coord, cnt = frames(arms=arms, head={CONTROL: factor})
    about = {"controls": [{"arm": CONTROL, "against": "dsbs", "expect": list(expect),
                           "what": what}]}
    return regress.RegressionRun("regress", list(arms), ["r"], rec, coord, cnt, about=about)


def test_a_control_is_judged_against_head_and_must_be_caught() -> None:
    run = control_run(1.5)
    assert run.pairs == [("dsbs", "dsbs@base"), ("zk", "zk@base")]  # not a pair of the check
    result = regress.check(run)
    assert result.ok and not result.regressed
    (c,) = result.controls
    assert c.caught and "cost" in c.failed_layers
    # Its bands are the check's: the Bonferroni count of two architectures, not of one.
    cost = next(v for v in c.verdicts if v.layer == "cost")
    k2 = L.t_multiplier(L.LAYER_ALPHA["cost"], 2, cost.n)
    assert cost.tolerance == pytest.approx(max(k2 * cost.spread / math.sqrt(cost.n),
                                               math.log1p(L.FLOOR_RATIO_PCT / 100)))
    assert "every control caught" in regress.summarize(result, run)


def test_a_control_not_caught_makes_the_run_inconclusive_not_green() -> None:
    run = control_run(1.0)
    result = regress.check(run)
    assert not result.regressed and not result.ok
    assert [c.control.arm for c in result.blind] == [CONTROL]
    text = regress.summarize(result, run)
    assert "INCONCLUSIVE" in text and f"{CONTROL}: a slower storage append" in text
    assert "NOT CAUGHT" in text
    frame = regress.verdict_frame(result)
    assert set(frame["judged"]) == {"head", CONTROL}


# --- bands ---------------------------------------------------------------------------------------


def test_a_ratio_band_is_a_t_interval_of_the_pairs_with_a_floor() -> None:
    logs = (0.01, -0.02, 0.03, 0.0, -0.01, 0.02)
    stat = L.RatioStat("s", logs, 1.0, 1.0)
    k = L.t_multiplier(0.0025, 4, len(logs))
    assert k == pytest.approx(float(sps.t.ppf(1 - 0.0025 / 8, 5)))
    v = L.ratio_verdict("cost", stat, k)
    sd = float(pd.Series(logs).std(ddof=1))
    assert v.tolerance == pytest.approx(k * sd / math.sqrt(6))
    assert v.spread == pytest.approx(sd) and v.n == 6
    assert v.change_pct == pytest.approx((math.exp(sum(logs) / 6) - 1) * 100)
    tight = L.ratio_verdict("cost", L.RatioStat("s", (0.0,) * 6, 1.0, 1.0), k)
    assert tight.tolerance == pytest.approx(math.log1p(L.FLOOR_RATIO_PCT / 100))
    assert L.ratio_verdict("cost", L.RatioStat("s", (0.1,), 1.0, 1.0), k).status == L.MISSING


def test_a_count_tolerance_is_the_largest_of_floor_spread_and_absolute_floor() -> None:
    exact = L.CountStat("c", 1000.0, 1005.0, 12_000.0, (5.0,) * 6)
    assert L.count_verdict("exact", exact, 4.0).tolerance == pytest.approx(10.0)  # 1% floor
    few = L.CountStat("c", 10.0, 10.0, 100.0, (0.0,) * 6)
    assert L.count_verdict("exact", few, 4.0).tolerance == pytest.approx(20.0)  # 2 events
    noisy = L.CountStat("c", 1000.0, 1000.0, 12_000.0, (30.0, -30.0) * 3)
    sd = float(pd.Series((30.0, -30.0) * 3).std(ddof=1))
    assert L.count_verdict("exact", noisy, 4.0).tolerance == pytest.approx(
        4.0 * sd / math.sqrt(6))


def test_an_aa_run_with_realistic_noise_rarely_fails() -> None:
    """Twenty A/A runs (head = base, 3% noise per session): at a family-wise 1% a failure
    among them would be a surprise; the bands are what that noise sets."""
    failures = sum(not regress.check(regression_run(noise=0.03, seed=s)).ok
                   for s in range(20))
    assert failures <= 1


def test_a_change_twice_the_band_is_caught() -> None:
    base = regress.check(regression_run(noise=0.03, seed=7))
    band = max(v.band_pct for v in base.layer("cost") if v.statistic.startswith("dsbs "))
    moved = regress.check(regression_run(noise=0.03, seed=7,
                                         head={"dsbs": 1 + 2 * band / 100}))
    assert any(v.layer == "cost" and v.statistic.startswith("dsbs ") and v.status != L.OK
               for v in moved.verdicts)


# --- reading runs ---------------------------------------------------------------------------------


def _write_arm(root: Path, arm: str, index: int, rec: pd.DataFrame, coord: pd.DataFrame,
               cnt: pd.DataFrame) -> None:
    """One arm's run directory of a regression run, in the documented format (format 2)."""
    run_id = synth.run_id_for(arm, "regress", index)
    d = root / run_id
    d.mkdir(parents=True)
    manifest = synth.manifest(run_id, arm, "", "regress", seed=7, format_version=2)
    # Every arm of one invocation shares its start time and seed.
    manifest["started_at"] = "2026-01-01T00:00:00Z"
    (d / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    for name, columns in (("faults.csv", FAULTS_COLUMNS),
                          ("fault_events.csv", FAULT_EVENTS_COLUMNS),
                          ("timeline.csv", TIMELINE_COLUMNS)):
        (d / name).write_text(",".join(columns) + "\n", encoding="utf-8")
    for name, frame, columns in (("records.csv", rec, RECORDS_COLUMNS_V1),
                                 ("coordination.csv", coord, COORDINATION_COLUMNS_V1),
                                 ("counters.csv", cnt, COUNTER_COLUMNS)):
        rows = frame[frame["arch"] == arm].assign(run_id=run_id, label="")
        rows.reindex(columns=list(columns)).to_csv(d / name, index=False)


@pytest.mark.filesystem
def test_a_run_read_from_its_directories_checks_as_the_frames_do(tmp_path: Path) -> None:
    rec, coord, cnt = frames()
    rec = rec.assign(table="batch_sweep", msg_size=32, batch=1, clients=1, records=2000,
                     payload_bytes=64000, offset_commit="every_fetch",
                     metadata_check="per_request", wall_s=2.0, kbps=1.0)
    for i, arm in enumerate(ARMS):
        _write_arm(tmp_path, arm, i, rec, coord, cnt)
    (tmp_path / "regression.json").write_text(json.dumps(
        {"pairs": [["zk", "zk@base"], ["dsbs", "dsbs@base"]],
         "base": {"given": "abc", "commit": "abc"}, "head": {"commit": "def"}}))
    (run,) = regress.read_runs([tmp_path])
    assert run.arms == sorted(ARMS) and run.pairs == [("zk", "zk@base"), ("dsbs", "dsbs@base")]
    ok, text = regress.run_check([tmp_path])
    assert ok, text
    assert "head def against base abc" in text


@pytest.mark.filesystem
def test_runs_without_a_base_arm_are_refused_with_one_line(tmp_path: Path) -> None:
    rec, coord, cnt = frames()
    rec = rec.assign(table="batch_sweep", msg_size=32, batch=1, clients=1, records=2000,
                     payload_bytes=64000, offset_commit="every_fetch",
                     metadata_check="per_request", wall_s=2.0, kbps=1.0)
    for i, arm in enumerate(("zk", "dsbs")):
        _write_arm(tmp_path, arm, i, rec, coord, cnt)
    with pytest.raises(UserError, match="no architecture ran as both head and base"):
        regress.read_runs([tmp_path])


def test_the_accepted_base_names_a_commit_and_why() -> None:
    doc = json.loads((Path(__file__).resolve().parents[3] / "results" / "baseline"
                      / "base.json").read_text())
    assert doc["kind"] == "twinbench.regress-base" and len(doc["commit"]) == 40
    assert doc["reason"].strip()


def test_a_reported_plant_never_fails_the_run_and_says_what_moved() -> None:
    result = regress.check(control_run(1.002, expect=(), what="a copy per fetch"))
    assert result.ok and not result.blind
    text = "\n".join(regress.control_lines(result))
    assert "reported, not required: not caught" in text and "cost: dsbs+slow-append" in text


def _verdict(layer: str, statistic: str, status: str) -> L.Verdict:
    return L.Verdict(layer, statistic, 1.0, 1.2, 0.1, status)


def test_a_confirming_run_fails_only_on_a_statistic_that_failed_before() -> None:
    bad, good = "REGRESSION", L.OK
    first = regress.CheckResult([_verdict("throughput", "zk split/production", bad),
                                 _verdict("cost", "dsbs CPU", good)])
    earlier = regress.failed_statistics(first)
    assert earlier == {"throughput: zk split/production"}
    # Noise: the second run fails another statistic. Not a regression.
    other = regress.CheckResult([_verdict("throughput", "zk split/production", good),
                                 _verdict("cost", "dsbs CPU", bad)])
    ok, said = regress.confirmed(other, earlier)
    assert ok and said.startswith("not confirmed") and "cost: dsbs CPU" in said
    # A change of the code: the same statistic again.
    same = regress.CheckResult([_verdict("throughput", "zk split/production", bad)])
    ok, said = regress.confirmed(same, earlier)
    assert not ok and "throughput: zk split/production" in said
    # A control the confirming run did not catch still fails it.
    blind = regress.CheckResult([], controls=[regress.ControlResult(
        regress.Control("zk+x", "zk", ("exact",), "planted"), [])])
    assert regress.confirmed(blind, earlier)[0] is False
