"""LatencyRecorder: deferred, folded recording gives the same histogram as direct recording."""

from __future__ import annotations

import random

from hdrh.histogram import HdrHistogram

from workloads.latency import HIGHEST_US, LatencyRecorder


def test_folded_recording_equals_direct_recording():
    rng = random.Random(7)
    rec = LatencyRecorder("x")
    direct = HdrHistogram(1, HIGHEST_US, 3)
    for _ in range(5000):
        v = int(rng.lognormvariate(5, 1)) + 1
        c = rng.choice([1, 1, 1, 20])
        rec.record(v, c)
        direct.record_value(v, c)
    assert rec.count == direct.get_total_count()
    for p in (50, 90, 99, 99.9):
        assert rec.percentile(p) == direct.get_value_at_percentile(p)
    s = rec.summary()
    assert s["count"] == direct.get_total_count() and s["p50_us"] > 0


def test_out_of_range_values_are_clamped_and_counted():
    rec = LatencyRecorder()
    rec.record(0)
    rec.record(-5, 3)
    rec.record(HIGHEST_US * 10)
    assert rec.count == 5 and rec.clamped == 5
    assert rec.summary()["max_us"] >= HIGHEST_US * 0.99


def test_merge_and_encode():
    a, b = LatencyRecorder(), LatencyRecorder()
    a.record(100)
    b.record(200, 4)
    a.merge(b)
    assert a.count == 5
    assert isinstance(a.encode(), str) and a.encode()
    assert LatencyRecorder().summary() == {"count": 0}
