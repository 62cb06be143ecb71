"""harness.bench.perf_kafka's pure parts: the paired ratio and its interval, the table's
verdicts and failures, and the command line's checks."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pytest

from brokers.core.errors import UserError
from harness.bench import perf_kafka as pk
from harness.bench.perf_kafka import OURS, Sample, parse_config, ratio_interval, table


def _s(side: str, rps: float, rep: int, role: str = "produce", complete: bool = True,
       client: str = "librdkafka", cpu_s: float | None = None, elapsed_s: float = 0.0
       ) -> Sample:
    return Sample(client, side, 32, 20, role, rep, 1000, 1000 / rps if rps else 0.0, rps, complete,
                  "" if complete else "3 records undelivered", cpu_s, 1000, elapsed_s)


def test_the_interval_is_t_on_the_logs_of_the_paired_ratios() -> None:
    low, high = ratio_interval([1.0, 2.0, 4.0])  # logs 0, ln2, 2ln2: mean ln2, sd ln2
    half = 4.302652729911275 * math.log(2) / math.sqrt(3)  # t(0.975, 2)
    assert low == pytest.approx(2 * math.exp(-half))
    assert high == pytest.approx(2 * math.exp(half))
    assert ratio_interval([1.3]) is None
    equal = ratio_interval([1.5, 1.5, 1.5])
    assert equal == pytest.approx((1.5, 1.5))


def test_each_repetition_pairs_the_sides_and_the_verdict_follows_the_target() -> None:
    k = "kafka-3.9.2"
    samples = [_s(OURS, 300.0, r) for r in range(3)]
    samples += [_s(k, v, r) for r, v in enumerate((200.0, 250.0, 100.0))]
    samples += [_s(OURS, 999.0, -1), _s(k, 1.0, -1)]  # the warm-up is left out
    [row] = table(samples, [k], {})
    assert row["ratio"] == pytest.approx((1.5 * 1.2 * 3.0) ** (1 / 3))  # geometric mean
    assert row["ours_rps"] == 300.0 and row["kafka_rps"] == 200.0
    assert row["repetitions"] == 3
    assert row["meets"] is True and row["surely"] is False  # the interval reaches below 1.2
    assert row["ci_low"] < row["ratio"] < row["ci_high"]  # the interval is about the same ratio
    assert row["ci_low"] < 1.2 < row["ci_high"]


def test_a_side_that_did_not_start_or_lost_records_gets_no_ratio() -> None:
    samples = [_s(OURS, 300.0, r) for r in range(2)]
    samples += [_s("kafka-3.9.2", 200.0, 0), _s("kafka-3.9.2", 0.0, 1, complete=False)]
    rows = {r["kafka"]: r for r in table(samples, ["kafka-3.9.2", "kafka-4.1.1"],
                                         {"kafka-4.1.1": "exit 1: no such jar"})}
    assert "ratio" not in rows["kafka-3.9.2"]
    assert "rep 2: 3 records undelivered" in str(rows["kafka-3.9.2"]["failure"])
    assert rows["kafka-4.1.1"]["failure"] == "kafka-4.1.1 did not start: exit 1: no such jar"


def _args(**kw: object) -> argparse.Namespace:
    base: dict[str, object] = {"messages": 30_000, "repetitions": 5, "releases": "3.9.2,4.1.1",
                               "clients": "librdkafka,twinbench", "cells": "32x1,1024x20",
                               "out_dir": Path("out"), "tune": False, "profile": None}
    return argparse.Namespace(**{**base, **kw})


def test_the_command_line_is_checked_in_one_line_each() -> None:
    config = parse_config(_args())
    assert config.cells == ((32, 1), (1024, 20))
    assert config.releases == ("3.9.2", "4.1.1")
    for bad, why in (({"repetitions": 1}, "--repetitions"), ({"releases": "2.8.0"}, "--releases"),
                     ({"clients": "kcat"}, "--clients"), ({"cells": "32by20"}, "--cells"),
                     ({"cells": "8x20"}, "--cells"), ({"messages": 10}, "--messages")):
        with pytest.raises(UserError, match=why):
            parse_config(_args(**bad))


def test_a_drain_topic_holds_a_rate_worth_of_payload() -> None:
    config = pk.PerfKafkaConfig()
    assert pk.drain_records(config, 32) == pk.DRAIN_BYTES // 32
    assert pk.drain_records(config, 1024) == config.messages  # never fewer than a session


def test_broker_cpu_per_record_and_kafkas_over_ours() -> None:
    k = "kafka-4.1.1"
    samples = [_s(OURS, 300.0, r, cpu_s=c) for r, c in enumerate((0.002, 0.003, 0.004))]
    samples += [_s(k, 200.0, r, cpu_s=c) for r, c in enumerate((0.006, 0.006, 0.009))]
    [row] = table(samples, [k], {})
    assert row["ours_cpu_us"] == pytest.approx(3.0)  # 0.003 s over 1,000 records
    assert row["kafka_cpu_us"] == pytest.approx(6.0)
    assert row["cpu_ratio"] == pytest.approx(2.0)
    unknown = table([_s(OURS, 3.0, 0), _s(k, 2.0, 0, cpu_s=0.1)], [k], {})[0]
    assert unknown["ours_cpu_us"] is None and unknown["cpu_ratio"] is None


@pytest.mark.filesystem
def test_cpu_is_every_threads_schedstat_in_nanoseconds(tmp_path: Path) -> None:
    for tid, ns in ((41, 1_500_000_000), (42, 250_000_000)):
        task = tmp_path / "41" / "task" / str(tid)
        task.mkdir(parents=True)
        (task / "schedstat").write_text(f"{ns} 12345 67\n")
    (tmp_path / "41" / "task" / "43").mkdir()  # exited between listing and reading
    assert pk.thread_cpu_seconds(41, tmp_path) == pytest.approx(1.75)
    # No schedstat readable at all: the tick count, never a silent zero (a gone process: NaN).
    gone = 2**22 + 7  # above Linux's pid_max: no such process
    (tmp_path / str(gone) / "task" / str(gone)).mkdir(parents=True)
    assert math.isnan(pk.thread_cpu_seconds(gone, tmp_path))


def test_a_row_where_neither_broker_was_busy_is_the_clients() -> None:
    assert pk.client_bound(0.2) and not pk.client_bound(0.8) and not pk.client_bound(None)
    k = "kafka-3.9.2"
    # 1,000 records each: 0.1 s of CPU over 0.5 s (20% of a core) against 0.15 s over 0.5 s.
    samples = [_s(OURS, 123_000.0, r, cpu_s=0.1, elapsed_s=0.5) for r in range(3)]
    samples += [_s(k, 123_500.0, r, cpu_s=0.15, elapsed_s=0.5) for r in range(3)]
    [row] = table(samples, [k], {})
    assert row["broker_busy"] == pytest.approx(0.3) and row["client_bound"] is True
    busy = [_s(OURS, 300.0, r, cpu_s=0.45, elapsed_s=0.5) for r in range(2)]
    busy += [_s(k, 250.0, r, cpu_s=0.2, elapsed_s=0.5) for r in range(2)]
    assert table(busy, [k], {})[0]["client_bound"] is False  # ours used 90% of its core


def test_a_drains_rate_leaves_its_first_read_out_and_says_why_it_failed() -> None:
    from harness.bench.rdkafka_load import drain_rate

    run = drain_rate([(10.0, 1000), (10.5, 3000), (11.0, 4000)], 8000)
    assert run.complete and run.records == 7000 and run.wall_s == pytest.approx(1.0)
    assert run.rps == pytest.approx(7000)
    short = drain_rate([(10.0, 1000), (10.5, 3000)], 8000, "%3|ERROR| no broker")
    assert not short.complete and short.error == "%3|ERROR| no broker" and short.rps == 0.0
    assert drain_rate([(1.0, 10)], 20).error == "10 of 20 records in 120 s"
    assert "one read" in drain_rate([(1.0, 20)], 20).error
