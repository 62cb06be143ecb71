"""`make perf`: what does storage cost? The real broker against a null sink, side by side.

Both are `twinbench broker` processes running identical server code; the null sink
(``--storage null``) acknowledges every batch without storing it. The same load client (the
synchronous producer of the paper) drives both, interleaved A B / B A per repetition so drift on
this shared machine hits both sides alike, with the brokers pinned to one core and the client to
another when there are two (docs/architecture.md: placement changes results up to 3x).

Prints a table of records/s per cell and the ratio broker/null-sink, ends with
``efficiency_min=<lowest ratio>``, and writes a self-describing JSON file under results/perf/.

``--open-loop`` instead measures the load client's own ceiling: the highest rate at which one
open-loop producer (32 B x 20, pipelined, window 8) keeps its schedule against the null sink,
found by ramp and bisection (harness/studies/latency/search.py); it ends with
``client_ceiling_rps=N`` and keeps the figure where rate searches read it
(results/perf/client-ceiling.json, harness/studies/latency/ceiling.py). A session asking for
more than this measures the client, not the broker.

``--profile DIR`` adds, after the measured repetitions, one session per cell on the real broker
with py-spy sampling it (harness/bench/profile.py), and writes DIR/<size>x<batch>.raw (py-spy's
stacks) and .txt (where the broker's time went), printing each summary's top lines. The
measured sessions are never sampled.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from brokers.core.errors import UserError
from harness import conditions
from harness.bench import client_ceiling, profile
from harness.bench.common import interleaved, write_result
from harness.bench.single import WARMUP_MESSAGES, Sample, placement, produce_sync, start_single
from harness.cluster.processes import ManagedProcess
from harness.studies.latency import ceiling
from workloads.connection import run as run_async

FORMAT_VERSION = 1
# (message size in bytes, records per produce request): the paper's batch sweep at 32 B, and
# 1 KiB at batch 20.
CELLS = [(32, 1), (32, 20), (32, 50), (1024, 20)]


@dataclass(frozen=True)
class PerfConfig:
    # Records per measured session (the paper's 30,000).
    messages: int = 30_000
    # Measured repetitions per cell and side; the table reports the median.
    repetitions: int = 5
    # Records produced once per broker before measuring (single.py).
    warmup_messages: int = WARMUP_MESSAGES
    # Where the JSON result goes.
    out_dir: Path = Path("results/perf")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make perf", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=PerfConfig.messages)
    parser.add_argument("--repetitions", type=int, default=PerfConfig.repetitions)
    parser.add_argument("--out-dir", type=Path, default=PerfConfig.out_dir)
    parser.add_argument("--placement", choices=("same", "split", "none"), default="same",
                        help="pin client and brokers to one core (default), to two, or not")
    parser.add_argument("--open-loop", action="store_true",
                        help="measure the client's open-loop ceiling against the null sink")
    parser.add_argument("--tune", action="store_true",
                        help="set `twinbench tune`'s knobs for the measurement (root)")
    parser.add_argument("--profile", type=Path, metavar="DIR",
                        help="after measuring, profile the broker with py-spy in one more "
                             "session per cell; write the profiles into DIR")
    args = parser.parse_args(argv)
    if args.profile is not None:
        profile.py_spy()  # missing: one line now, not after the measurement
    if args.messages < 100 or args.repetitions < 1:
        raise UserError("--messages must be >= 100 and --repetitions >= 1")
    config = PerfConfig(messages=args.messages, repetitions=args.repetitions,
                        out_dir=args.out_dir)
    with conditions.tuning(args.tune) as tuned:
        return _measure(args, config, {**conditions.snapshot(),
                                       "tuned": tuned if args.tune else None})


def _measure(args: argparse.Namespace, config: PerfConfig, machine_state: dict) -> int:
    client_cpu, broker_cpu = placement(args.placement)
    if client_cpu is not None:
        os.sched_setaffinity(0, {client_cpu})
    if args.open_loop:
        with tempfile.TemporaryDirectory(prefix="twinbench-perf-") as tmp:
            found = client_ceiling.search(Path(tmp), broker_cpu)
        print(f"open-loop client (32 B x 20, window 8) against the null sink; client on CPU "
              f"{client_cpu}, null sink on CPU {broker_cpu}: kept {found.kept:,.0f} rec/s, "
              f"behind at {found.failed:,.0f} rec/s ({len(found.tries)} tries of "
              f"{client_ceiling.OPEN_LOOP_TRY_S:g} s)")
        print(f"client_ceiling_rps={found.kept:.0f}")
        if args.placement == "same":
            kept = ceiling.ClientCeiling(
                found.kept, "measured",
                datetime.now(UTC).isoformat(timespec="seconds"), ceiling.fingerprint())
            ceiling.store(ceiling.path(), kept)
            print(f"kept for rate searches: {ceiling.path()}")
        return 0
    samples: list[Sample] = []
    with tempfile.TemporaryDirectory(prefix="twinbench-perf-") as tmp:
        workdir = Path(tmp)
        procs = {}
        try:
            for side in ("null", "broker"):
                procs[side] = start_single(side, workdir, broker_cpu,
                                           "null" if side == "null" else "segment")
            for _, bootstrap in procs.values():
                run_async(produce_sync(bootstrap, 32, 20, config.warmup_messages))
            for msg_size, batch in CELLS:
                for rep in range(config.repetitions):
                    for side in interleaved(("null", "broker"), rep):
                        s = run_async(produce_sync(procs[side][1], msg_size, batch,
                                                   config.messages))
                        s.side, s.repetition = side, rep
                        samples.append(s)
                        print(f"  {side:6} {msg_size:5} B x {batch:2}  rep {rep + 1}: "
                              f"{s.rps:>10,.0f} rec/s", file=sys.stderr, flush=True)
            # The measurement is printed and kept before anything is profiled: a profiler that
            # cannot attach (ptrace restricted) costs the profile, never the measurement.
            rows = _table(samples)
            _print_table(rows, config, client_cpu, broker_cpu)
            path = _write(config, samples, rows, client_cpu, broker_cpu, machine_state)
            print(f"results: {path}")
            if args.profile is not None:
                _profile(args.profile, procs["broker"], config)
        finally:
            for proc, _ in procs.values():
                proc.stop()
    print(f"efficiency_min={min(r['ratio'] for r in rows):.3f}")
    return 0


def _profile(out: Path, broker: tuple[ManagedProcess, str], config: PerfConfig) -> None:
    """Sessions on the real broker, sampled, per cell; never a measured one."""
    proc, bootstrap = broker
    for msg_size, batch in CELLS:
        def session(size: int = msg_size, n: int = batch) -> tuple[int, float]:
            s = run_async(produce_sync(bootstrap, size, n, config.messages))
            return s.records, s.wall_s
        profile.profile_sessions(proc.pid, out, f"{msg_size}x{batch}",
                                 f"broker, {msg_size} B x {batch}", session)


def _table(samples: list[Sample]) -> list[dict]:
    rows = []
    for msg_size, batch in CELLS:
        med = {}
        for side in ("null", "broker"):
            med[side] = statistics.median(
                s.rps for s in samples
                if (s.side, s.msg_size, s.batch) == (side, msg_size, batch))
        rows.append({"msg_size": msg_size, "batch": batch, "null_rps": med["null"],
                     "broker_rps": med["broker"], "ratio": med["broker"] / med["null"]})
    return rows


def _print_table(rows: list[dict], config: PerfConfig, client_cpu, broker_cpu) -> None:
    print(f"\nsynchronous producer, {config.messages:,} messages, median of "
          f"{config.repetitions} interleaved repetitions; client on CPU {client_cpu}, "
          f"brokers on CPU {broker_cpu}; broker flush policy: os")
    print(f"{'msg size':>9} {'batch':>6} {'null sink rec/s':>16} {'broker rec/s':>13} "
          f"{'broker/null':>12}")
    for r in rows:
        print(f"{r['msg_size']:>7} B {r['batch']:>6} {r['null_rps']:>16,.0f} "
              f"{r['broker_rps']:>13,.0f} {r['ratio']:>12.3f}")


def _write(config: PerfConfig, samples, rows, client_cpu, broker_cpu, machine_state: dict
           ) -> Path:
    return write_result(config.out_dir, "perf", "twinbench.perf",
                        format_version=FORMAT_VERSION, config=asdict(config),
                        placement={"client_cpu": client_cpu, "broker_cpu": broker_cpu},
                        conditions=machine_state,
                        body={"rows": rows, "samples": [asdict(s) for s in samples]})


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as exc:
        print(f"perf: error: {exc}", file=sys.stderr)
        sys.exit(2)
