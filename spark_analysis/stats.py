"""Small-sample statistics on aggregated cells (mean, sd, n per side), in scipy.

Spark computes the aggregates; everything here works on a handful of numbers per cell, so it is
plain Python on the collected result (``ratio_columns`` applies it to a collected frame's
two sides at once). Choices, stated once:

* 95% confidence interval of a mean: ``mean ± t(0.975, n-1) · sd/√n``.
* Difference test: Welch's t-test (unequal variances), two-sided, from the summary statistics;
  it is the test scipy.stats.ttest_ind(equal_var=False) performs on the raw tries.
* Interval of the ratio of means DSBS/ZK: **Fieller's theorem** (not the delta method): with 4
  tries the ratio's sampling distribution is skewed and the delta method's symmetric interval
  undercovers; Fieller's interval is exact for normal means and is unbounded when the
  denominator is itself not significantly different from zero, which we report as such.
  Degrees of freedom: Welch-Satterthwaite for ``var(a) + r²·var(b)`` at the point estimate r.
* "Detectable change": the smallest true difference (as a fraction of the ZK mean) that a Welch
  test at alpha=0.05 would find with 80% power with this many tries and this spread. It is what
  "not significant" means in numbers: 4 tries cannot see differences much smaller than this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
from scipy import stats as sps

LEVEL = 0.95
ALPHA = 0.05
POWER = 0.80


def t_interval(mean: float, sd: float, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Confidence interval of a mean from n samples with sample standard deviation sd."""
    if n < 2 or not math.isfinite(sd):
        return (math.nan, math.nan)
    half = sps.t.ppf(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return (mean - half, mean + half)


@dataclass(frozen=True)
class Welch:
    t: float
    df: float
    p: float


def welch(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int) -> Welch:
    """Welch's two-sided t-test of m1 - m2 from summary statistics."""
    if n1 < 2 or n2 < 2:
        return Welch(math.nan, math.nan, math.nan)
    v1, v2 = s1 * s1 / n1, s2 * s2 / n2
    se2 = v1 + v2
    if se2 == 0:
        # Both sides constant: identical means are no evidence of anything, different ones are
        # certain (no noise) - scipy returns nan here too; keep nan and let the verdict say why.
        return Welch(math.nan, math.nan, math.nan)
    t = (m1 - m2) / math.sqrt(se2)
    df = se2 * se2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1))
    p = 2 * sps.t.sf(abs(t), df)
    return Welch(t, df, p)


def fieller(a: float, sa: float, na: int, b: float, sb: float, nb: int,
            level: float = LEVEL) -> tuple[float, float]:
    """Fieller interval for the ratio of independent means a/b (unequal variances).

    Returns (lo, hi); (nan, nan) when undefined (fewer than 2 samples) and (-inf, inf) when the
    interval is unbounded (b not significantly non-zero at this level).
    """
    if na < 2 or nb < 2 or b == 0:
        return (math.nan, math.nan)
    va, vb = sa * sa / na, sb * sb / nb
    rho = a / b
    num = va + rho * rho * vb
    if num == 0 and vb == 0:
        return (rho, rho)  # neither mean varies: the ratio is exact
    if num == 0:
        # a is exactly 0 and constant (a fault that never unsettled anything): at the point
        # estimate only b's spread is left, so its degrees of freedom are b's own. Returning
        # (0, 0) here would claim certainty that b, which may be noise, does not support.
        df = float(nb - 1)
    else:
        den = ((va * va / (na - 1) if va else 0.0)
               + (rho ** 4 * vb * vb / (nb - 1) if vb else 0.0))
        df = num * num / den
    t = sps.t.ppf(0.5 + level / 2, df)
    q = b * b - t * t * vb
    if q <= 0:
        return (-math.inf, math.inf)
    disc = a * a * vb + b * b * va - t * t * va * vb
    root = t * math.sqrt(max(disc, 0.0))
    return ((a * b - root) / q, (a * b + root) / q)


def detectable_change(sa: float, na: int, sb: float, nb: int, b: float,
                      alpha: float = ALPHA, power: float = POWER) -> float:
    """Smallest |a-b|/b a Welch test detects with the given power (normal-t approximation)."""
    if na < 2 or nb < 2 or b == 0:
        return math.nan
    va, vb = sa * sa / na, sb * sb / nb
    se2 = va + vb
    if se2 == 0:
        return 0.0
    df = se2 * se2 / ((va * va / (na - 1) if va else 0.0) + (vb * vb / (nb - 1) if vb else 0.0))
    k = sps.t.ppf(1 - alpha / 2, df) + sps.t.ppf(power, df)
    return k * math.sqrt(se2) / abs(b)


def verdict(p: float, ratio: float, n_min: int, change: float, *, a_name: str = "DSBS",
            b_name: str = "ZK", alpha: float = ALPHA) -> str:
    """A sentence a reader can act on, never a bare p-value."""
    if n_min < 2:
        return "too few tries for a test"
    if not math.isfinite(p):
        return "no variation between tries; no test possible"
    if p < alpha:
        faster = a_name if ratio > 1 else b_name
        return f"{faster} faster (p={p:.2g})"
    low_power = f"; with {n_min} tries a side only changes above ±{change:.0%} are reliably seen" \
        if math.isfinite(change) else ""
    return f"not significant (p={p:.2g}){low_power}"


def log_rms(ratios: list[float]) -> float:
    """Root mean square of ln(ratio): the spread of ratios whose true value is 1 (A/A)."""
    vals = [math.log(r) for r in ratios if r > 0 and math.isfinite(r)]
    if not vals:
        return math.nan
    return math.sqrt(sum(v * v for v in vals) / len(vals))


def pair(long: pd.DataFrame, key: list[str], by: str, a: tuple[str, str],
         b: tuple[str, str]) -> pd.DataFrame:
    """Two sides of a long table of per-group ``n``/``mean``/``sd`` side by side, for
    ``ratio_columns``: the rows where column ``by`` is ``a[0]`` with their statistics named
    ``<a[1]>_n`` ..., joined on ``key`` with those where it is ``b[0]`` (``<b[1]>_n`` ...);
    groups with only one side are left out."""
    def side(value: str, prefix: str) -> pd.DataFrame:
        mine = long[long[by] == value][[*key, "n", "mean", "sd"]]
        return mine.rename(columns={c: f"{prefix}_{c}" for c in ("n", "mean", "sd")})

    return side(*a).merge(side(*b), on=key, how="inner")


def ratio_columns(df: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """``df`` with each side's interval (``<a>_ci_lo``/``_ci_hi``, the same for ``b``) and
    ``ratio`` = a/b of the means with Fieller's interval (``ratio_ci_lo``/``_hi``) and Welch's
    ``p_welch``, from its columns ``<a>_n/mean/sd`` and ``<b>_n/mean/sd``."""
    out = df.copy()
    for side in (a, b):
        ci = [t_interval(m, s, int(n)) for m, s, n in
              zip(out[f"{side}_mean"], out[f"{side}_sd"], out[f"{side}_n"], strict=True)]
        out[f"{side}_ci_lo"] = [c[0] for c in ci]
        out[f"{side}_ci_hi"] = [c[1] for c in ci]
    ratio, lo, hi, p = [], [], [], []
    for am, asd, an, bm, bsd, bn in zip(out[f"{a}_mean"], out[f"{a}_sd"], out[f"{a}_n"],
                                         out[f"{b}_mean"], out[f"{b}_sd"], out[f"{b}_n"],
                                         strict=True):
        ratio.append(am / bm if bm else math.nan)
        f = fieller(am, asd, int(an), bm, bsd, int(bn))
        lo.append(f[0])
        hi.append(f[1])
        p.append(welch(am, asd, int(an), bm, bsd, int(bn)).p)
    out["ratio"], out["ratio_ci_lo"], out["ratio_ci_hi"], out["p_welch"] = ratio, lo, hi, p
    return out
