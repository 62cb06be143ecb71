"""The load worker: one part of a session's load on a client host (harness/driver/load.py).

    python -m harness.remote.worker [--cpus 0,1] [--watchdog-s S]

Runs a ``LocalPart`` (the same code a run on one machine uses) on requests from the driver,
JSON lines on stdin, answered on stdout (harness/remote/channel.py):

    {"id": 1, "op": "open", "bootstrap": ..., "client": {...}, "producers": [0, 2], ...}
    {"id": 2, "op": "produce", "job": {...}}                -> {"id": 2, "result": {...}}
    {"id": 3, "op": "consume", "job": {...}, "expected": {...}}
    {"id": 4, "op": "start", "job": {...}, "expected": ...}  -> {"id": 4, "ok": true}, then
        {"id": 4, "event": "produced", "result": ...} and {"id": 4, "event": "consumed", ...}
    {"id": 5, "op": "finish", "run": 4}   {"id": 6, "op": "abort", "run": 4}
    {"op": "ping"}   {"op": "quit"}

The first line it writes is ``{"pid": N, "anchor": A}``; every answer carries ``anchor``, this
host's ``time.time() - time.perf_counter()``, with which the driver converts the perf_counter
times in results to its own clock. Requests run concurrently (a ``finish`` or ``quit`` is
obeyed while a session runs). At end of input, on ``quit`` or after ``--watchdog-s`` without a
word from the driver, it stops its clients and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from typing import Any

from harness.driver.load import Job, LocalPart, Running
from harness.remote.channel import WATCHDOG_S, decode, encode
from workloads.cluster import ClusterClient, ClusterClientConfig
from workloads.connection import ConnectionConfig

# Requests are small; results travel the other way.
LINE_LIMIT = 64 * 1024 * 1024


def client_config(bootstrap: str, client: dict[str, Any]) -> ClusterClientConfig:
    """The driver's client settings (harness/remote/part.py ``client_knobs``)."""
    return ClusterClientConfig(
        bootstrap=tuple(bootstrap.split(",")),
        connection=ConnectionConfig(client_id=client["client_id"],
                                    connect_timeout_s=client["connect_timeout_s"],
                                    request_timeout_s=client["request_timeout_s"]),
        retries=client["retries"], retry_backoff_ms=client["retry_backoff_ms"],
        retry_backoff_max_ms=client["retry_backoff_max_ms"])


def anchor() -> float:
    return time.time() - time.perf_counter()


class Worker:
    def __init__(self, watchdog_s: float) -> None:
        self.watchdog_s = watchdog_s
        self.part: LocalPart | None = None
        self.runs: dict[int, Running] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.last_heard = time.monotonic()
        self.done = asyncio.Event()

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.buffer.write(encode({**message, "anchor": anchor()}))
        sys.stdout.buffer.flush()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        self.send({"pid": os.getpid()})
        watchdog = loop.create_task(self.watchdog())
        try:
            while not self.done.is_set():
                line = await reader.readline()
                if not line:
                    print("worker: end of input (the driver is gone); stopping",
                          file=sys.stderr, flush=True)
                    break
                self.last_heard = time.monotonic()
                try:
                    message = decode(line)
                except ValueError:
                    continue
                if message.get("op") == "quit":
                    print("worker: quit", file=sys.stderr, flush=True)
                    break
                if message.get("op") != "ping":
                    task = loop.create_task(self.handle(message))
                    self.tasks.add(task)
                    task.add_done_callback(self.tasks.discard)
        finally:
            watchdog.cancel()
            await self.close()

    async def watchdog(self) -> None:
        while time.monotonic() - self.last_heard <= self.watchdog_s:
            await asyncio.sleep(0.5)
        print(f"worker: no word from the driver for {self.watchdog_s:g} s; stopping",
              file=sys.stderr, flush=True)
        self.done.set()
        # The read in serve() waits for input that will not come: end the process.
        for task in self.tasks:
            task.cancel()
        await self.close()
        os._exit(3)

    async def close(self) -> None:
        for run in list(self.runs.values()):
            with contextlib.suppress(Exception):
                await run.abort()
        for task in list(self.tasks):
            task.cancel()
        if self.part is not None:
            part, self.part = self.part, None
            with contextlib.suppress(Exception):
                await part.close()

    async def handle(self, message: dict[str, Any]) -> None:
        rid = message.get("id")
        try:
            answer = await self.answer(message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.send({"id": rid, "error": f"{type(exc).__name__}: {exc}"})
            return
        self.send({"id": rid, **answer})

    async def answer(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        if op == "open":
            config = client_config(message["bootstrap"], message["client"])
            clients: dict[str, dict[int, ClusterClient]] = {"producers": {}, "consumers": {}}
            for role in clients:
                for i in message[role]:
                    clients[role][int(i)] = await ClusterClient.open(message["bootstrap"],
                                                                     config)
            self.part = LocalPart(clients["producers"], clients["consumers"],
                                  name=str(message.get("name", "worker")))
            return {"ok": True}
        part = self.part
        if part is None:
            raise RuntimeError("not open")
        if op == "produce":
            return {"result": (await part.produce(Job.from_json(message["job"]))).to_json()}
        raw = message.get("expected")
        expected = None if raw is None else {int(k): int(v) for k, v in raw.items()}
        if op == "consume":
            assert expected is not None
            outcome = await part.consume(Job.from_json(message["job"]), expected)
            return {"result": outcome.to_json()}
        if op == "start":
            run = await part.start(Job.from_json(message["job"]), expected)
            self.runs[int(message["id"])] = run
            task = asyncio.get_running_loop().create_task(self.report(int(message["id"]), run))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            return {"ok": True}
        if op in ("finish", "abort"):
            found = self.runs.get(int(message["run"]))
            if found is not None:
                await (found.finish() if op == "finish" else found.abort())
            return {"ok": True}
        raise ValueError(f"unknown op {op!r}")

    async def report(self, rid: int, run: Running) -> None:
        """The events of one concurrent run: producers done, then consumers done."""
        try:
            for event, phase in (("produced", run.produced), ("consumed", run.consumed)):
                outcome = await phase()
                self.send({"id": rid, "event": event, "result": outcome.to_json()})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.send({"id": rid, "event": "error", "error": f"{type(exc).__name__}: {exc}"})
        finally:
            self.runs.pop(rid, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.remote.worker")
    parser.add_argument("--cpus", default=None)
    parser.add_argument("--watchdog-s", type=float, default=WATCHDOG_S)
    args = parser.parse_args(argv)
    if args.cpus:
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    from workloads.connection import run

    run(Worker(args.watchdog_s).serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
