"""`make perf-zk`: what does a ZooKeeper request cost a broker, through kazoo and directly?

The zk broker's data path (``metadata_check=per_request`` reads, offset commits) can go through
kazoo (``--zk-data-path kazoo``) or the asyncio session of ``brokers/zk_broker/direct.py``
(the default). This measures both on one event loop against one real ZooKeeper, the way the
broker uses them, interleaved (kazoo, direct, direct, kazoo ...) so drift on this shared machine
hits both alike. Per request it reports the wall time seen by ``concurrency`` callers and the
CPU time spent by the caller's process and by ZooKeeper's JVM (user + system), which is what
separates the client's overhead from ZooKeeper's own work.

Prints one table, and writes a self-describing JSON file under results/perf/.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
import uvloop
from kazoo.client import KazooClient

from brokers.core.cli import OneLineParser
from brokers.core.errors import UserError
from brokers.zk_broker.bridge import KazooBridge
from brokers.zk_broker.direct import DirectSession
from harness.bench.common import interleaved, write_result
from harness.services.zookeeper import ZooKeeperHandle, provisioned

PROG = "python -m harness.bench.perf_zk"
FORMAT_VERSION = 1
CLIENTS = ("kazoo", "direct")
OPS = ("get", "set")


@dataclass(frozen=True)
class ZkClientBenchConfig:
    # Requests per measured block (split evenly over the concurrent callers).
    requests: int = 6_000
    # Measured blocks per (client, op, concurrency); the table reports the median.
    repetitions: int = 5
    # Concurrent callers on the loop: 1 = one request in flight, 3 = the paper's client count.
    concurrency: tuple[int, ...] = (1, 3)
    # Unmeasured requests per client and op first (connections, JIT of ZooKeeper's JVM).
    warmup_requests: int = 3_000
    out_dir: Path = Path("results/perf")


@dataclass
class Sample:
    client: str
    op: str
    concurrency: int
    repetition: int
    requests: int
    wall_us: float  # per request, as the callers saw it
    client_cpu_us: float  # this process, per request
    zk_cpu_us: float | None  # ZooKeeper's JVM, per request (None: not a process we started)


Call = Callable[[], Awaitable[object]]


async def _block(call: Call, n: int, concurrency: int) -> float:
    per = n // concurrency

    async def caller() -> None:
        for _ in range(per):
            await call()

    t0 = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(concurrency)))
    return time.perf_counter() - t0


def _cpu(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


async def _measure(zk: ZooKeeperHandle, cfg: ZkClientBenchConfig, progress: bool) -> list[Sample]:
    loop = asyncio.get_running_loop()
    kz = KazooClient(hosts=zk.connect_string, timeout=10)
    await loop.run_in_executor(None, kz.start, 15)
    direct = DirectSession(
        zk.endpoints, session_timeout_ms=10_000, connect_timeout_s=10,
        request_timeout_s=10, reconnect_max_delay_s=1,
    )
    try:
        if not await direct.start():
            raise UserError("the direct ZooKeeper session could not connect")
        path = f"/twinbench-zkclient-{uuid.uuid4().hex[:8]}"
        await loop.run_in_executor(None, kz.create, path, b"0")
        bridge = KazooBridge(kz, loop, 10)
        data = b"123456789"  # an offset, as commits write it
        calls: dict[tuple[str, str], Call] = {
            ("kazoo", "get"): lambda: bridge.call("get", path),
            ("kazoo", "set"): lambda: bridge.call("set", path, data),
            ("direct", "get"): lambda: direct.get(path),
            ("direct", "set"): lambda: direct.set(path, data),
        }
        for call in calls.values():
            await _block(call, min(cfg.warmup_requests, cfg.requests), 3)
        zk_proc = psutil.Process(zk.pids[0]) if zk.pids else None
        me = psutil.Process()
        samples: list[Sample] = []
        n = cfg.requests
        for rep in range(cfg.repetitions):
            # kazoo first on even repetitions, direct first on odd ones.
            order = interleaved(CLIENTS, rep)
            for conc in cfg.concurrency:
                for op in OPS:
                    for client in order:
                        z0 = _cpu(zk_proc) if zk_proc else 0.0
                        c0 = _cpu(me)
                        wall = await _block(calls[client, op], n, conc)
                        done = n // conc * conc
                        samples.append(Sample(
                            client, op, conc, rep, done, wall / done * 1e6,
                            (_cpu(me) - c0) / done * 1e6,
                            ((_cpu(zk_proc) - z0) / done * 1e6) if zk_proc else None,
                        ))
            if progress:
                print(f"repetition {rep + 1}/{cfg.repetitions} done", file=sys.stderr)
        await loop.run_in_executor(None, kz.delete, path)
        return samples
    finally:
        await direct.close()
        await loop.run_in_executor(None, kz.stop)
        kz.close()


def summarize(samples: list[Sample]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    keys = sorted({(s.concurrency, s.op) for s in samples})
    for conc, op in keys:
        row: dict[str, object] = {"concurrency": conc, "op": op}
        wall: dict[str, float] = {}
        for client in CLIENTS:
            mine = [s for s in samples if (s.client, s.op, s.concurrency) == (client, op, conc)]
            for field in ("wall_us", "client_cpu_us", "zk_cpu_us"):
                values = [getattr(s, field) for s in mine]
                row[f"{client}_{field}"] = None if None in values else statistics.median(values)
            wall[client] = statistics.median(s.wall_us for s in mine)  # never unknown
        row["wall_ratio"] = wall["kazoo"] / wall["direct"]
        rows.append(row)
    return rows


def _us(value: object, width: int) -> str:
    return f"{value:>{width}.0f}us" if isinstance(value, float) else f"{'-':>{width + 2}}"


def render(rows: list[dict[str, object]]) -> str:
    head = ("conc  op   | kazoo wall  client cpu  zk cpu | direct wall  client cpu  zk cpu "
            "| kazoo/direct wall")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r['concurrency']:>4}  {r['op']:<4} | {_us(r['kazoo_wall_us'], 8)}"
            f" {_us(r['kazoo_client_cpu_us'], 9)} {_us(r['kazoo_zk_cpu_us'], 5)}"
            f" | {_us(r['direct_wall_us'], 9)}"
            f" {_us(r['direct_client_cpu_us'], 9)} {_us(r['direct_zk_cpu_us'], 5)}"
            f" | {r['wall_ratio']:>6.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=ZkClientBenchConfig.requests)
    parser.add_argument("--repetitions", type=int, default=ZkClientBenchConfig.repetitions)
    parser.add_argument("--zookeeper", metavar="HOST:PORT", default=None,
                        help="measure against this server (default: start one from the jars)")
    parser.add_argument("--out", type=Path, default=ZkClientBenchConfig.out_dir)
    try:
        args = parser.parse_args(argv)
        if args.requests < 6 or args.repetitions < 1:
            raise UserError("--requests must be at least 6 and --repetitions at least 1")
        cfg = ZkClientBenchConfig(requests=args.requests, repetitions=args.repetitions,
                                  out_dir=args.out)
        started = time.time()
        with tempfile.TemporaryDirectory(prefix="twinbench-zkclient-") as tmp, \
                provisioned(args.zookeeper, 1, Path(tmp)) as zk:
            samples = uvloop.run(_measure(zk, cfg, sys.stderr.isatty()))
            version = zk.version
    except UserError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    rows = summarize(samples)
    print(render(rows))
    out = write_result(cfg.out_dir, "zkclient", "zkclient", format_version=FORMAT_VERSION,
                       config=asdict(cfg), started=started,
                       body={"zookeeper": version, "started": started, "summary": rows,
                             "samples": [asdict(s) for s in samples]})
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
