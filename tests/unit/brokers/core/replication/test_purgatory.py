"""Delayed produces: completed by high-watermark advances, timeouts, or a leadership loss."""

from __future__ import annotations

from brokers.core.replication.purgatory import DelayedProduces


def test_a_high_watermark_advance_completes_the_batches_below_it_in_order():
    d: DelayedProduces[str] = DelayedProduces()
    d.park("p0", 10, 5.0, "a")
    d.park("p0", 20, 5.0, "b")
    d.park("p1", 10, 5.0, "c")
    assert d.on_high_watermark("p0", 9) == []
    assert d.on_high_watermark("p0", 20) == ["a", "b"]
    assert len(d) == 1
    assert d.on_high_watermark("p0", 30) == []


def test_timeouts_complete_what_is_still_parked_only():
    d: DelayedProduces[str] = DelayedProduces()
    d.park("p0", 10, 1.0, "a")
    d.park("p0", 20, 2.0, "b")
    d.park("p1", 10, 1.5, "c")
    assert d.next_deadline() == 1.0
    assert d.on_high_watermark("p0", 10) == ["a"]
    assert d.next_deadline() == 1.5  # a's deadline no longer counts
    assert d.expire(1.9) == ["c"]
    assert d.expire(2.0) == ["b"]
    assert len(d) == 0 and d.next_deadline() is None
    assert d.on_high_watermark("p0", 99) == []


def test_losing_the_leadership_completes_every_waiter_of_that_partition():
    d: DelayedProduces[str] = DelayedProduces()
    d.park("p0", 10, 1.0, "a")
    d.park("p1", 10, 1.0, "b")
    assert d.drop("p0") == ["a"]
    assert d.expire(5.0) == ["b"]
    assert d.drop("p0") == []
