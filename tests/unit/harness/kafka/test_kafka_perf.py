"""Kafka's perf tools as a load client (harness/driver/kafka_perf.py): their summaries parsed,
the cell translated into their settings, what they cannot do refused (pure, no I/O)."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from harness.driver import kafka_perf as kp
from harness.driver.plan import Cell
from harness.workload import parse_workload

# What ProducerPerformance and ConsumerPerformance of Kafka 3.9.2 printed against a twin.
PRODUCED = (
    "[2026-11-28 13:15:17,101] WARN something the tool logged (org.apache.kafka)\n"
    "2000 records sent, 1194.029851 records/sec (0.04 MB/sec), 246.58 ms avg latency, "
    "1252.00 ms max latency, 234 ms 50th, 346 ms 95th, 368 ms 99th, 368 ms 99.9th.\n")
CONSUMED = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
    "2026-11-28 13:15:18:823, 2026-11-28 13:15:19:748, 0.1221, 0.1320, 4000, 4324.3243, 763, "
    "162, 0.7535, 24691.3580\n")
WORKLOAD = {"name": "t", "consumers": 1, "producer_partitions": "all", "client": "kafka-perf",
            "policies": {"offset_commit": "interval_ms:1000", "metadata_check": "cached"},
            "cells": [{"table": "size_grid", "msg_sizes": [32], "batches": [20]}]}


def test_the_producer_summary_is_parsed():
    p = kp.parse_produced(PRODUCED)
    assert (p.records, p.records_per_s, p.p50_ms, p.p999_ms) == (2000, 1194.029851, 234, 368)
    assert p.elapsed_s == pytest.approx(2000 / 1194.029851)


def test_the_consumer_summary_is_parsed():
    c = kp.parse_consumed(CONSUMED)
    assert (c.records, c.rebalance_ms, c.fetch_ms) == (4000, 763, 162)
    assert c.elapsed_s == pytest.approx(4000 / 4324.3243)
    assert c.fetch_s == pytest.approx(0.162)  # the group join left out


@pytest.mark.parametrize("parse", [kp.parse_produced, kp.parse_consumed])
def test_a_tool_that_printed_no_summary_is_an_error(parse):
    with pytest.raises(ValueError, match="printed no summary"):
        parse("Exception in thread main: org.apache.kafka.common.errors.TimeoutException\n")


def test_batch_size_holds_the_cells_records_in_record_format_v2():
    # One 32-byte record: attributes, timestamp delta, offset delta, key length (-1), value
    # length, value, header count = 38 bytes, framed by a one-byte length.
    assert kp.batch_bytes(32, 1) == 61 + 39
    assert kp.batch_bytes(32, 20) == 61 + 20 * 39
    # A 1 KiB value needs a two-byte length, and so does its record's framing.
    assert kp.batch_bytes(1024, 1) == 61 + 2 + (1 + 1 + 1 + 1 + 2 + 1024 + 1)
    # Offset deltas of 64 and up take two bytes.
    assert kp.batch_bytes(32, 65) - kp.batch_bytes(32, 64) == 40


def test_the_cell_becomes_the_tools_settings():
    wl = parse_workload(WORKLOAD)
    props = kp.producer_props(wl, Cell("size_grid", 32, 20), "h:1")
    assert props == {"bootstrap.servers": "h:1", "acks": "1", "batch.size": str(61 + 20 * 39),
                     "linger.ms": "5", "max.in.flight.requests.per.connection": "1",
                     "enable.idempotence": "false", "compression.type": "none"}
    all_acks = dataclasses.replace(wl, acks=-1)
    assert kp.producer_props(all_acks, Cell("size_grid", 32, 20), "h:1")["acks"] == "all"
    cell = Cell("size_grid", 32, 20)
    assert kp.consumer_props(wl, cell, "interval_ms:1000") == {
        "fetch.max.wait.ms": "100", "fetch.max.bytes": str(61 + 20 * 39),
        "max.partition.fetch.bytes": str(61 + 20 * 39), "enable.auto.commit": "true",
        "auto.commit.interval.ms": "1000"}
    assert kp.consumer_props(wl, cell, "none")["enable.auto.commit"] == "false"


@pytest.mark.parametrize(("change", "why"), [
    ({"consumers": 3, "partitions": 3}, "consumers: 1"),
    ({"producer_partitions": "split"}, "producer_partitions: all"),
    ({"policies": {"offset_commit": "every_fetch"}}, "interval_ms:N or none"),
])
def test_what_the_tools_cannot_do_is_refused(change, why):
    wl = parse_workload({**WORKLOAD, **change})
    assert why in (kp.refusal(wl) or "")
    assert kp.refusal(parse_workload(WORKLOAD)) is None


def test_a_tool_without_its_summary_fails_the_session_with_its_last_line():
    with pytest.raises(kp.ToolFailed, match=r"no summary line: .*TimeoutException"):
        kp._parsed(kp.parse_produced, "starting\norg.apache.kafka.TimeoutException: gone\n")


def test_the_first_tool_to_fail_cancels_the_others():
    cancelled = []

    async def slow() -> int:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return 1

    async def failing() -> int:
        raise kp.ToolFailed("boom")

    with pytest.raises(kp.ToolFailed):
        asyncio.run(kp._together(slow(), failing()))
    assert cancelled == [True]
