"""Kafka's own perf tools as a second load client (a workload's ``client: kafka-perf``).

Why: every number twinbench prints was made by its own Python load client. Running Kafka's
ProducerPerformance and ConsumerPerformance (org.apache.kafka.tools, the kafka-tools jar the
harness resolves with each release) on the same cluster and cell, interleaved with our client
session by session (``client: [twinbench, kafka-perf]``: one side each, one cluster), shows
any bias of our client in the one table (docs/real-kafka.md, "Two load clients").

A session, on the topic the runner created for it (as for our client):

* split: ``producers`` ProducerPerformance processes at once, each with its share of the
  records; then one ConsumerPerformance reads every record they had acknowledged;
* streaming: the consumer starts, then the producers, all at once.

The cell in the tool's terms (``producer_props``, ``consumer_props``): record size = msg_size;
batch.size = the bytes of ``batch`` records of that size in Kafka's record format v2 (61-byte
batch header, each record's varint-framed body), so a full batch holds the cell's records;
linger.ms 5; max.in.flight.requests.per.connection = the workload's window (1: the paper's
synchronous producer); acks = the workload's; idempotence off, as our client is; the tool's
producer spreads records over every partition a batch at a time (Kafka's sticky partitioner),
which is our ``producer_partitions: all``. A fetch is capped at one batch's bytes (the cell's
batch is records per fetch too, and Kafka's consumer fetches by bytes). The consumer commits
as the workload's offset_commit says where the tool can (``interval_ms:N``: auto-commit every
N ms; ``none``: no commits); the tool cannot commit per fetch, so ``every_fetch`` is
refused, as is more than one consumer (ConsumerPerformance reads until it has ``--messages``
records, which a member whose share the group decides cannot know).

Rows (records.csv, ``client`` = kafka-perf), from the tools' own clocks, which start after
each JVM has started (its start-up is outside, as it is outside our client's sessions):

* production: records acknowledged (the tool counts only sends that completed without error)
  over the longest producer's own time (its records / its records/s); ``errors`` = records it
  was asked to send that did not complete;
* consumption: records read over the consumer's fetch time (the tool's fetch.time.ms: from
  the end of its group join to its last record; our consumers are assigned their partitions
  and join no group). The tools check no content, order or duplicates: ``lost``
  is acknowledged records the consumer did not read before its timeout, the rest are zero.

The tools' latencies are per record from send() to acknowledgement (the batching wait
included), not per request as ours are, so they are not put in the rows' latency columns; what
the tools printed is appended to the run directory's ``kafka-perf.log`` as each one ends.

Every tool is a fresh JVM per session, as a user runs them: the JIT has not warmed up, and the
table says so beside the numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from brokers.core.errors import UserError
from harness.driver import plan
from harness.driver.plan import Cell
from harness.driver.session import RoleResult, SessionResult
from harness.kafka.node import log_config, logging_flag
from harness.kafka.releases import RELEASES
from harness.kafka.resolve import cached
from harness.workload import Workload
from workloads.latency import LatencyRecorder
from workloads.verify import VerifyReport

T = TypeVar("T")

NAME = "kafka-perf"
# The tools' release: the one both Kafka architectures can run (the tools speak to any broker).
TOOLS_RELEASE = "3.9.2"
PRODUCER_MAIN = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_MAIN = "org.apache.kafka.tools.ConsumerPerformance"
# Heap of each tool's JVM (the start scripts' 256 MiB); the load is small.
TOOL_HEAP_MB = 256
LINGER_MS = 5
# Kafka's record format v2: the batch header (base offset 8, length 4, leader epoch 4, magic 1,
# crc 4, attributes 2, last offset delta 4, base timestamp 8, max timestamp 8, producer id 8,
# producer epoch 2, base sequence 4, record count 4).
BATCH_HEADER_BYTES = 61
# How long past the workload's consumer timeout a tool may run before it is killed.
TOOL_GRACE_S = 30.0

# "30000 records sent, 29585.798817 records/sec (0.90 MB/sec), 328.99 ms avg latency, 477.00
# ms max latency, 340 ms 50th, 471 ms 95th, 476 ms 99th, 477 ms 99.9th."
_PRODUCED = re.compile(
    r"^(?P<records>\d+) records sent, (?P<rps>[\d.]+) records/sec \((?P<mbps>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99.9th\.$", re.MULTILINE)
_CONSUMED_HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
                    "nMsg.sec")


def _elapsed_s(records: int, records_per_s: float) -> float:
    """The time a tool's own rate stands for."""
    return records / records_per_s if records_per_s > 0 else 0.0


@dataclass(frozen=True)
class Produced:
    """ProducerPerformance's final summary line (its latencies stay in the transcript)."""

    records: int
    records_per_s: float
    p50_ms: int
    p999_ms: int

    @property
    def elapsed_s(self) -> float:
        return _elapsed_s(self.records, self.records_per_s)


@dataclass(frozen=True)
class Consumed:
    """ConsumerPerformance's summary row."""

    records: int
    records_per_s: float
    rebalance_ms: float
    fetch_ms: float

    @property
    def elapsed_s(self) -> float:
        """The tool's time from subscribing to its last record (group join included)."""
        return _elapsed_s(self.records, self.records_per_s)

    @property
    def fetch_s(self) -> float:
        """The same without the group join (the tool's fetch.time.ms): what the rows use, as
        our client's consumers are assigned their partitions and join no group."""
        return self.fetch_ms / 1000 if self.fetch_ms > 0 else self.elapsed_s


def parse_produced(output: str) -> Produced:
    """The last summary line of ProducerPerformance's ``output``; ValueError if none."""
    found = list(_PRODUCED.finditer(output))
    if not found:
        raise ValueError("ProducerPerformance printed no summary line")
    m = found[-1]
    return Produced(int(m["records"]), float(m["rps"]), int(m["p50"]), int(m["p999"]))


def parse_consumed(output: str) -> Consumed:
    """The row under ConsumerPerformance's header in ``output``; ValueError if none."""
    lines = [line.strip() for line in output.splitlines()]
    for i, line in enumerate(lines):
        if line.startswith(_CONSUMED_HEADER) and i + 1 < len(lines):
            cells = [c.strip() for c in lines[i + 1].split(",")]
            if len(cells) >= 10:
                return Consumed(records=int(cells[4]), records_per_s=float(cells[5]),
                                rebalance_ms=float(cells[6]), fetch_ms=float(cells[7]))
    raise ValueError("ConsumerPerformance printed no summary row")


def _varint_size(value: int) -> int:
    """Bytes of Kafka's zig-zag varint of ``value``."""
    z = (value << 1) ^ (value >> 63)
    n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


def batch_bytes(msg_size: int, batch: int) -> int:
    """Bytes of a v2 record batch of ``batch`` unkeyed, header-less records of ``msg_size``
    bytes written within one millisecond of each other: batch.size for a batch that holds
    the cell's records."""
    total = BATCH_HEADER_BYTES
    for i in range(batch):
        body = (1 + _varint_size(0) + _varint_size(i) + _varint_size(-1)
                + _varint_size(msg_size) + msg_size + _varint_size(0))
        total += _varint_size(body) + body
    return total


def check(wl: Workload, *, session_kind: bool, hosts: bool, secured: bool) -> None:
    """Before anything starts: UserError (one line) for the first thing the tools cannot do
    in this run (``session_kind``: a study replaces the paper's sessions; ``hosts``: --hosts;
    ``secured``: a side has a security level), or when their jars are missing."""
    why = ("runs the paper's split and streaming sessions only" if session_kind
           else "runs its tools on this machine: not with --hosts" if hosts
           else "speaks PLAINTEXT only: no security levels" if secured
           else refusal(wl))
    if why is not None:
        raise UserError(f"workload {wl.name}: client: {NAME}: {why}")
    lib()


def refusal(wl: Workload) -> str | None:
    """Why the tools cannot run ``wl``'s sessions, or None."""
    if wl.consumers != 1:
        return ("ConsumerPerformance reads until it has its --messages, which a member of a "
                "group of several cannot know: consumers: 1")
    if wl.producer_partitions != "all":
        return ("Kafka's producer spreads records over every partition a batch at a time: "
                "producer_partitions: all")
    if wl.duration_s is not None:
        return "the tools send a number of records, not for a time: messages, not duration_s"
    if "every_fetch" in wl.offset_commit:
        return ("ConsumerPerformance commits on an interval or not at all: offset_commit: "
                "interval_ms:N or none")
    return None


def lib() -> Path:
    """The tools' class path directory; UserError when the release is not resolved."""
    resolved = cached(RELEASES[TOOLS_RELEASE])
    if resolved is None:
        raise UserError(f"client: {NAME} needs Kafka {TOOLS_RELEASE}'s tools: run make "
                        "kafka-jars (or make setup) first")
    return resolved.lib


def producer_props(wl: Workload, cell: Cell, bootstrap: str) -> dict[str, str]:
    return {
        "bootstrap.servers": bootstrap,
        "acks": "all" if wl.acks == -1 else str(wl.acks),
        "batch.size": str(batch_bytes(cell.msg_size, cell.batch)),
        "linger.ms": str(LINGER_MS),
        "max.in.flight.requests.per.connection": str(wl.window),
        "enable.idempotence": "false",
        "compression.type": "none",
    }


def consumer_props(wl: Workload, cell: Cell, offset_commit: str) -> dict[str, str]:
    """The cell's ``batch`` is also records per fetch: Kafka's consumer fetches by bytes, so
    a fetch is capped at one batch's bytes (Kafka still returns a first batch that is larger)."""
    one_batch = str(batch_bytes(cell.msg_size, cell.batch))
    props = {"fetch.max.wait.ms": str(wl.fetch_max_wait_ms), "fetch.max.bytes": one_batch,
             "max.partition.fetch.bytes": one_batch}
    if offset_commit == "none":
        props["enable.auto.commit"] = "false"
    else:
        props |= {"enable.auto.commit": "true",
                  "auto.commit.interval.ms": offset_commit.split(":", 1)[1]}
    return props


def manifest(wl: Workload) -> dict[str, object]:
    """The client's part of a side's manifest: the tools, their release and the fixed knobs."""
    return {"name": NAME, "release": TOOLS_RELEASE, "producer": PRODUCER_MAIN,
            "consumer": CONSUMER_MAIN, "heap_mb": TOOL_HEAP_MB, "linger_ms": LINGER_MS,
            "max_in_flight": wl.window, "jvm_per_session": True}


def _java(lib_dir: Path, log_file: Path, main: str, args: Sequence[str]) -> list[str]:
    return ["java", f"-Xms{TOOL_HEAP_MB}m", f"-Xmx{TOOL_HEAP_MB}m", "-XX:+UseG1GC",
            "-Djava.awt.headless=true", "-Duser.language=en", "-Duser.country=US",
            logging_flag(RELEASES[TOOLS_RELEASE], log_file), "-cp", f"{lib_dir}/*", main,
            *args]


async def _run_tool(argv: list[str], timeout_s: float) -> str:
    """The tool's stdout and stderr; the process (its own session) killed on timeout or
    cancellation."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            await proc.wait()
        raise
    return out.decode("utf-8", "replace")


@dataclass
class ToolSession:
    """One session's tools; what each printed is appended to ``transcript`` as it ends."""

    lib_dir: Path
    log_file: Path
    transcript: Path
    timeout_s: float

    async def run(self, main: str, args: list[str]) -> str:
        out = await _run_tool(_java(self.lib_dir, self.log_file, main, args), self.timeout_s)
        with self.transcript.open("a") as f:
            f.write(f"$ {main} {' '.join(args)}\n{out}")
        return out

    async def produce(self, wl: Workload, cell: Cell, bootstrap: str, topic: str,
                      records: int) -> Produced:
        props = producer_props(wl, cell, bootstrap)
        throughput = (cell.rate / wl.producers) if cell.rate is not None else -1
        return _parsed(parse_produced, await self.run(PRODUCER_MAIN, [
            "--topic", topic, "--num-records", str(records), "--record-size",
            str(cell.msg_size), "--throughput", f"{throughput:g}", "--producer-props",
            *(f"{k}={v}" for k, v in props.items())]))

    async def consume(self, wl: Workload, cell: Cell, offset_commit: str, bootstrap: str,
                      topic: str, group: str, records: int) -> Consumed:
        config = self.log_file.parent / f"{group}.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in
                                  consumer_props(wl, cell, offset_commit).items()))
        return _parsed(parse_consumed, await self.run(CONSUMER_MAIN, [
            "--bootstrap-server", bootstrap, "--topic", topic, "--group", group,
            "--messages", str(records), "--consumer.config", str(config),
            "--timeout", str(round(wl.consumer_timeout_s * 1000))]))


class ToolFailed(OSError):
    """A tool ended without its summary (the runner reports the session as not run)."""


def _parsed(parse: Callable[[str], T], out: str) -> T:
    try:
        return parse(out)
    except ValueError as exc:
        lines = [line for line in out.strip().splitlines() if line.strip()]
        raise ToolFailed(f"{exc}: {lines[-1][:300] if lines else 'no output'}") from None


async def _together(*coros: Awaitable[T]) -> list[T]:
    """Every tool at once; the first to fail cancels the others (their JVMs killed)."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def run_session(bootstrap: str, wl: Workload, cell: Cell, scenario: str,
                      offset_commit: str, topic: str, group: str,
                      transcript: Path) -> SessionResult:
    """The session on Kafka's tools; what they print is appended to ``transcript``."""
    counts = plan.producer_counts(cell.messages or wl.messages, wl.producers)
    with tempfile.TemporaryDirectory(prefix="twinbench-kafka-perf-") as tmp:
        name, text = log_config(RELEASES[TOOLS_RELEASE], "WARN")
        (Path(tmp) / name).write_text(text)
        tools = ToolSession(lib(), Path(tmp) / name, transcript,
                            wl.consumer_timeout_s + TOOL_GRACE_S)
        producing = [tools.produce(wl, cell, bootstrap, topic, n) for n in counts]
        if scenario == "split":
            produced = await _together(*producing)
            acked = sum(p.records for p in produced)
            consumed = await tools.consume(wl, cell, offset_commit, bootstrap, topic, group,
                                           acked)
        elif scenario == "streaming":
            reading = tools.consume(wl, cell, offset_commit, bootstrap, topic, group,
                                    sum(counts))
            together: list[Any] = await _together(reading, *producing)
            consumed, produced = together[0], together[1:]
            acked = sum(p.records for p in produced)
        else:
            raise ValueError(f"client {NAME} runs split and streaming sessions, not {scenario!r}")
    return _result(counts, produced, consumed, acked)


def _result(counts: Sequence[int], produced: Sequence[Produced], consumed: Consumed,
            acked: int) -> SessionResult:
    lost = max(0, acked - consumed.records)
    production = RoleResult(
        role="production", clients=len(produced), records=acked,
        wall_s=max(p.elapsed_s for p in produced), latency=LatencyRecorder("produce"),
        e2e=None, errors=sum(counts) - acked)
    consumption = RoleResult(
        role="consumption", clients=1, records=consumed.records, wall_s=consumed.fetch_s,
        latency=LatencyRecorder("consume"), e2e=LatencyRecorder("end_to_end"), errors=0)
    report = VerifyReport(records=consumed.records, unique=min(consumed.records, acked),
                          lost=lost, duplicates=0, out_of_order=0, unexpected=0,
                          expected=acked)
    return SessionResult(production=production, consumption=consumption, report=report,
                         messages=sum(counts), timed_out=lost > 0)
