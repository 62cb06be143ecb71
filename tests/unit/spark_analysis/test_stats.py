"""Statistics of the analysis against known values: scipy on raw inputs, hand-computed intervals,
and the paper's own appendix."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as sps

from spark_analysis import stats
from spark_analysis.studies.paper import printed as paper

ZK = [1000.0, 1100.0, 1200.0, 1300.0]
DSBS = [2000.0, 2200.0, 2400.0, 2600.0]


def summary(xs: list[float]) -> tuple[float, float, int]:
    return statistics.fmean(xs), statistics.stdev(xs), len(xs)


def test_t_interval_matches_hand_computation() -> None:
    # mean 1150, sd sqrt(50000/3) = 129.0994..., t(0.975, 3) = 3.182446305284263 (tables).
    lo, hi = stats.t_interval(*summary(ZK))
    half = 3.182446305284263 * math.sqrt(50000 / 3) / 2
    assert lo == pytest.approx(1150 - half, rel=1e-12)
    assert hi == pytest.approx(1150 + half, rel=1e-12)
    assert half == pytest.approx(205.426, abs=1e-3)


def test_t_interval_needs_two_samples() -> None:
    assert all(math.isnan(v) for v in stats.t_interval(5.0, math.nan, 1))


@pytest.mark.parametrize("a, b", [
    (DSBS, ZK),
    ([212328, 142201, 127572, 231343], [67391, 86592, 95384, 85635]),  # paper, 8 B split prod.
    ([1.0, 2.0, 3.0], [1.5, 2.5, 2.0, 2.2, 9.0]),
])
def test_welch_from_summaries_equals_scipy_on_raw_tries(a: list[float], b: list[float]) -> None:
    w = stats.welch(*summary(a), *summary(b))
    ref = sps.ttest_ind(a, b, equal_var=False)
    assert w.t == pytest.approx(ref.statistic, rel=1e-10)
    assert w.p == pytest.approx(ref.pvalue, rel=1e-9)


def test_welch_degrees_of_freedom_by_hand() -> None:
    # v1 = 66666.67/4, v2 = 16666.67/4: df = (v1+v2)^2 / (v1^2/3 + v2^2/3) = 4.4118 (by hand).
    w = stats.welch(*summary(DSBS), *summary(ZK))
    assert w.df == pytest.approx(4.41176, abs=1e-4)
    assert w.t == pytest.approx(1150 / math.sqrt(20833.3333), rel=1e-6)


def test_welch_is_undefined_without_variation_or_samples() -> None:
    assert math.isnan(stats.welch(1.0, 0.0, 4, 2.0, 0.0, 4).p)
    assert math.isnan(stats.welch(1.0, 1.0, 1, 2.0, 1.0, 4).p)


def test_fieller_by_hand() -> None:
    a, sa, na = summary(DSBS)
    b, sb, nb = summary(ZK)
    lo, hi = stats.fieller(a, sa, na, b, sb, nb)
    # By hand: va = 66666.67/4, vb = 16666.67/4, ratio 2; Welch-Satterthwaite df of
    # va + 4 vb is exactly 6 here, t(0.975, 6) = 2.4469118511449692.
    va, vb, t = sa**2 / 4, sb**2 / 4, 2.4469118511449692
    q = b * b - t * t * vb
    root = t * math.sqrt(a * a * vb + b * b * va - t * t * va * vb)
    assert lo == pytest.approx((a * b - root) / q, rel=1e-9)
    assert hi == pytest.approx((a * b + root) / q, rel=1e-9)
    assert (lo, hi) == pytest.approx((1.6444, 2.4325), abs=1e-4)
    # The endpoints solve Fieller's equation (a - r b)^2 = t^2 (va + r^2 vb).
    for r in (lo, hi):
        assert (a - r * b) ** 2 == pytest.approx(t * t * (va + r * r * vb), rel=1e-9)


def test_fieller_with_exact_denominator_is_the_numerator_interval_scaled() -> None:
    a, sa, na = summary(DSBS)
    lo, hi = stats.fieller(a, sa, na, 1000.0, 0.0, 4)
    clo, chi = stats.t_interval(a, sa, na)
    assert (lo, hi) == pytest.approx((clo / 1000.0, chi / 1000.0), rel=1e-12)


def test_fieller_is_unbounded_when_the_denominator_is_noise() -> None:
    assert stats.fieller(10.0, 1.0, 4, 1.0, 5.0, 4) == (-math.inf, math.inf)
    assert all(math.isnan(v) for v in stats.fieller(10.0, 1.0, 1, 1.0, 5.0, 4))


def test_fieller_with_a_constant_zero_numerator() -> None:
    """0 in every try on one side (a fault that never unsettled the group) over a noisy other
    side: the ratio is 0 only if the denominator is itself well determined."""
    assert stats.fieller(0.0, 0.0, 3, 2.2, 3.81, 3) == (-math.inf, math.inf)
    assert stats.fieller(0.0, 0.0, 3, 5.0, 0.1, 3) == (0.0, 0.0)
    assert stats.fieller(0.0, 0.0, 3, 5.0, 0.0, 3) == (0.0, 0.0)


def test_fieller_is_asymmetric_unlike_the_delta_method() -> None:
    lo, hi = stats.fieller(*summary(DSBS), *summary(ZK))
    assert hi - 2.0 > 2.0 - lo


def test_detectable_change_and_verdicts() -> None:
    change = stats.detectable_change(*summary(DSBS)[1:], *summary(ZK)[1:], 1150.0)
    assert 0.3 < change < 0.6  # with 4 tries at 11% CV, only large differences are visible
    assert stats.verdict(0.001, 2.0, 4, change) == "DSBS faster (p=0.001)"
    assert stats.verdict(0.001, 0.5, 4, change) == "ZK faster (p=0.001)"
    text = stats.verdict(0.3, 1.1, 4, change)
    assert text.startswith("not significant (p=0.3)") and "4 tries" in text
    assert stats.verdict(0.3, 1.1, 1, change) == "too few tries for a test"


def test_log_rms() -> None:
    assert stats.log_rms([1.02, 0.98]) == pytest.approx(
        math.sqrt((math.log(1.02) ** 2 + math.log(0.98) ** 2) / 2))
    assert math.isnan(stats.log_rms([]))


@pytest.mark.filesystem
def test_paper_ratios_from_its_appendix() -> None:
    long = paper.load_paper()
    assert set(long["scenario"]) == {"split", "streaming"}  # "stream" renamed
    ratios = paper.paper_ratios(long).set_index(paper.PAPER_KEY)
    row = ratios.loc[("size_grid", "split", "production", 32, 20, "rps")]
    assert row["paper_zk"] == 63615 and row["paper_dsbs"] == 213546
    assert row["paper_ratio"] == pytest.approx(213546 / 63615)
    tries_z = [56057, 66954, 61630, 69819]
    tries_d = [208053, 260504, 200000, 185628]
    assert row["paper_p"] == pytest.approx(sps.ttest_ind(tries_d, tries_z, equal_var=False).pvalue)
    assert len(ratios) == 2 * 2 * 2 * (5 + 3)  # scenario x role x metric x (sizes + batches)
