"""The load in parts (harness/driver/load.py): what a part returns survives its wire form, and
merging parts is exact - a session split over several client hosts reports what one process
holding every client would have (counts summed, HDR histograms added, verifiers merged, time
series added bucket by bucket). Pure logic; no I/O."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.driver.load import (
    ConsumerOutcome,
    Job,
    LoadSettings,
    PartOutcome,
    ProducerOutcome,
    ScheduleOutcome,
    share,
)
from harness.driver.plan import Cell
from harness.driver.session import _timeline, _verifier, consumption_role, production_role
from harness.remote.part import RemotePart
from workloads.latency import LatencyRecorder
from workloads.timeline import Timeline
from workloads.verify import Verifier


def _recorder(name: str, values: list[int]) -> LatencyRecorder:
    r = LatencyRecorder(name)
    for v in values:
        r.record(v)
    return r


def _wire(outcome: PartOutcome, shift_s: float = 0.0) -> PartOutcome:
    """Through JSON text, as a load worker's answer travels."""
    return PartOutcome.from_json(json.loads(json.dumps(outcome.to_json())), shift_s)


def _producer(pid: int, values: list[int], t0: float, t1: float, acked: int) -> ProducerOutcome:
    return ProducerOutcome(pid, acked + 1, acked, 0, t0, t1, _recorder("produce", values),
                           bytearray(b"\x01" * acked), {pid % 3: acked},
                           ScheduleOutcome(t1 - t0, acked, acked, False,
                                           _recorder("i", values), _recorder("d", values[:3])))


def test_job_survives_its_wire_form() -> None:
    job = Job(LoadSettings(2, "sync", 1, "poisson", 1.5, -1, 100, 60.0, 10.0),
              Cell("size_grid", 32, 20, rate=5000.0), "t", "g", "interval_ms:100",
              (1500, 1500), ((0, 2), (1,)), ((0,), (1, 2)), 123456789, 42.5)
    assert Job.from_json(json.loads(json.dumps(job.to_json()))) == job


def test_outcomes_survive_the_wire_and_move_clocks() -> None:
    rng = random.Random(1)
    values = [rng.randrange(1, 50_000) for _ in range(2000)]
    verifier = Verifier()
    verifier.add_batch(0, [1] * 20, list(range(20)))
    verifier.add_batch(1, [2] * 10, list(range(5, 15)))
    timeline = Timeline(0.0, 1.0)
    timeline.add("produced", 0, 20, now=0.5)
    timeline.add("consumed", 0, 20, now=1.5)
    timeline.e2e(900, 20, now=1.5)
    outcome = PartOutcome(
        [_producer(1, values, 10.0, 12.0, 40)],
        [ConsumerOutcome(0, 30, 10.5, 1.25, _recorder("f", values), _recorder("c", values[:9]),
                         _recorder("e", values[::2]), 2, False)],
        verifier, timeline)
    back = _wire(outcome, shift_s=4.0)
    p, c = back.producers[0], back.consumers[0]
    assert (p.t_start, p.t_end, c.t_start, c.wall_s) == (6.0, 8.0, 6.5, 1.25)
    assert p.acked == outcome.producers[0].acked
    assert p.partition_records == {1: 40}
    for a, b in [(p.latency, outcome.producers[0].latency),
                 (c.e2e_latency, outcome.consumers[0].e2e_latency)]:
        assert a.summary() == b.summary()
    assert p.open_loop is not None and p.open_loop.intended.count == len(values)
    assert back.verifier is not None and back.verifier.report() == verifier.report()
    assert back.timeline is not None and back.timeline.series() == timeline.series()


def test_merging_parts_equals_one_part_holding_every_client() -> None:
    rng = random.Random(7)
    lat = [[rng.randrange(1, 100_000) for _ in range(500)] for _ in range(4)]
    producers = [_producer(i + 1, lat[i], 1.0 + i, 5.0 + i, 100 * (i + 1)) for i in range(4)]
    consumers = [ConsumerOutcome(j, 250, 2.0 + j, 3.0, _recorder("f", lat[j]),
                                 _recorder("c", lat[j][:10]), _recorder("e", lat[j][10:]), j,
                                 j == 3) for j in range(4)]
    whole = production_role(producers), consumption_role(consumers, 3.0)
    # The same clients dealt to two parts, each through the wire.
    halves = [_wire(PartOutcome([producers[k] for k in idx], [consumers[k] for k in idx]))
              for idx in share(4, 2)]
    merged = (production_role([p for h in halves for p in h.producers]),
              consumption_role([c for h in halves for c in h.consumers], 3.0))
    for a, b in zip(whole, merged, strict=True):
        assert (a.records, a.wall_s, a.clients, a.errors) == (b.records, b.wall_s, b.clients,
                                                              b.errors)
        assert a.latency.summary() == b.latency.summary()
        assert (a.e2e is None) == (b.e2e is None)
        if a.e2e is not None and b.e2e is not None:
            assert a.e2e.summary() == b.e2e.summary()
    assert whole[0].wall_s == 8.0 - 1.0  # first send anywhere to last answer anywhere


# (producer, block, records): sequences block*8 .. block*8+records-1, always to the partition
# (producer + block) mod 3, as a producer sends each sequence to one partition; blocks may
# repeat (duplicates) and come back lower (reordering).
deliveries = st.lists(st.tuples(st.integers(1, 3), st.integers(0, 8), st.integers(1, 8)),
                      max_size=40)


@settings(max_examples=200, deadline=None)
@given(deliveries, st.lists(st.integers(0, 1), min_size=3, max_size=3),
       st.lists(st.integers(0, 80), max_size=3))
def test_merged_verifiers_report_what_one_verifier_would(
        batches: list[tuple[int, int, int]], owner: list[int], acked: list[int]) -> None:
    """Consumers of disjoint partitions on two hosts: merging their verifiers (through the
    wire) gives the report of one verifier that saw every batch."""
    one = Verifier()
    parts = [Verifier(), Verifier()]
    for pid, block, n in batches:
        partition = (pid + block) % 3
        sequences = list(range(block * 8, block * 8 + n))
        one.add_batch(partition, [pid] * n, sequences)
        parts[owner[partition]].add_batch(partition, [pid] * n, sequences)
    outcomes = [_wire(PartOutcome(verifier=v)) for v in parts]
    outcomes.append(PartOutcome([ProducerOutcome(
        pid, n, n, 0, 0.0, 1.0, LatencyRecorder(), bytearray(b"\x01" * n), {})
        for pid, n in zip((1, 2, 3), acked, strict=False)]))
    for pid, n in zip((1, 2, 3), acked, strict=False):
        one.expect(pid, b"\x01" * n)
    assert _verifier(outcomes).report() == one.report()


def test_timelines_of_parts_add_up_bucket_by_bucket() -> None:
    one = Timeline(0.0, 1.0)
    parts = [Timeline(0.0, 1.0), Timeline(0.0, 1.0)]
    rng = random.Random(3)
    for k in range(300):
        t = rng.uniform(0, 6)
        kind = rng.choice(["produced", "consumed"])
        n = rng.randrange(1, 20)
        one.add(kind, 0, n, now=t)
        parts[k % 2].add(kind, 0, n, now=t)
        if kind == "consumed":
            value = rng.randrange(100, 10_000)
            one.e2e(value, n, now=t)
            parts[k % 2].e2e(value, n, now=t)
    merged = _timeline([_wire(PartOutcome(timeline=t)) for t in parts])
    assert merged is not None
    assert merged.series(1.0) == one.series(1.0)


def test_clients_are_dealt_round_robin() -> None:
    assert share(5, 2) == [(0, 2, 4), (1, 3)]
    assert share(1, 3) == [(0,), (), ()]


def test_a_remote_part_moves_times_between_clocks() -> None:
    """A worker whose clock runs 2.5 s ahead and whose perf_counter origin differs: the job's
    series start goes out on its clock, results come back on ours."""
    fleet = SimpleNamespace(hosts=None, lost=None)
    machine: Any = SimpleNamespace(fleet=fleet, name="c1", clock_offset_s=2.5, cpus=None)
    part = RemotePart(machine, (0,), (0,))
    part._anchor = 1_000_000.0  # the worker's time.time() - perf_counter()
    delta = part._delta()
    job = Job(LoadSettings(1, "sync", 1, "uniform", 0.0, 1, 100, 60.0, None),
              Cell("t", 32, 20), "t", "g", "none", (10,), ((0,),), ((0,),), 5_000_000, 7.0)
    sent = part._job(job)
    assert abs(sent["timeline_t0"] - (7.0 + delta)) < 1e-3
    assert sent["e2e_from_us"] == 5_000_000 + 2_500_000
    answer = {"result": PartOutcome([_producer(1, [5], 7.0 + delta, 9.0 + delta, 1)]).to_json()}
    p = part._outcome(answer).producers[0]
    assert abs(p.t_start - 7.0) < 1e-3 and abs(p.t_end - 9.0) < 1e-3
