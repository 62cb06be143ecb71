"""harness.studies.latency.search: ramp, then bisection, against a fake system with a known
limit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.core.errors import UserError
from harness.studies.latency.search import RateSearcher, SearchConfig, search_max_rate


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


@given(limit=st.floats(min_value=100, max_value=1e6), precision=st.sampled_from([0.02, 0.1]))
def test_the_bracket_always_holds_the_limit(limit: float, precision: float) -> None:
    out = search_max_rate(lambda r: r <= limit, SearchConfig(start=100, precision=precision,
                                                             ceiling=2e6))
    assert out.kept <= limit < out.failed
    assert out.failed - out.kept <= precision * out.kept


def test_searches_stepped_in_lockstep_find_what_each_finds_alone() -> None:
    # The driver advances one search per architecture a step at a time, so their sessions
    # interleave; each must end where it would have ended alone.
    limits = {"zk": 23_000.0, "dsbs": 61_000.0}
    cfg = SearchConfig(start=1_000, precision=0.05)
    searchers = {k: RateSearcher(cfg) for k in limits}
    while any(s.next_rate() is not None for s in searchers.values()):
        for k, s in searchers.items():
            if (rate := s.next_rate()) is not None:
                s.record(rate <= limits[k])
    for k, s in searchers.items():
        assert s.result() == search_max_rate(lambda r, k=k: r <= limits[k], cfg)
    with pytest.raises(RuntimeError, match="over"):
        searchers["zk"].record(True)
