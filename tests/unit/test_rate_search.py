"""harness.rate_search: ramp, then bisection, against a fake system with a known limit."""

from __future__ import annotations

import pytest

from brokers.core.errors import UserError
from harness.rate_search import SearchConfig, search_max_rate


def test_finds_the_limit_within_the_precision() -> None:
    out = search_max_rate(lambda r: r <= 37_000, SearchConfig(start=1_000, precision=0.02))
    assert out.kept <= 37_000 < out.failed
    assert out.failed - out.kept <= 0.02 * out.kept
    # Ramp 1k, 2k, .. 32k kept, 64k failed, then bisection.
    assert [r for r, _ in out.tries[:7]] == [1_000 * 2**k for k in range(7)]
    assert out.tries[6] == (64_000, False)


def test_the_ceiling_caps_the_ramp() -> None:
    out = search_max_rate(lambda r: True, SearchConfig(start=1_000, ceiling=5_000))
    assert out.kept == 5_000 and out.failed == float("inf")
    assert [r for r, _ in out.tries] == [1_000, 2_000, 4_000, 5_000]


def test_a_failing_start_reports_nothing_kept() -> None:
    out = search_max_rate(lambda r: False, SearchConfig(start=1_000))
    assert out.kept == 0 and out.failed == 1_000 and len(out.tries) == 1


@pytest.mark.parametrize("kw", [{"start": 0}, {"start": 10, "factor": 1},
                                {"start": 10, "precision": 0}, {"start": 10, "ceiling": 5}])
def test_bad_searches_are_user_errors(kw) -> None:
    with pytest.raises(UserError):
        SearchConfig(**kw)
