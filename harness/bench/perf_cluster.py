"""`make perf-cluster`: what does the 3-broker cluster deliver of what this machine allows?

The paper's cluster shape (3 brokers, 3 synchronous producers, 3 consumers in one group, one
partition per broker, the paper's coordination policies, CPU placement as `twinbench run` does
it: the client on one CPU, every broker on the others) measured side by side, interleaved
(A B C D, then D C B A), on:

* each architecture of the comparison (the registry's ``compared``: ``zk``, ``dsbs``,
  ``raft``): the cluster `twinbench run` starts;
* ``uncoordinated``: the same broker code three times, each a one-broker cluster with the
  LocalCoordinator (no peer, no coordination store, no coordination traffic) and real segment
  storage. Producer i and consumer i talk to broker i only, about partition i, so the shape,
  the processes, the client and every record are the same as the twins' while nobody
  coordinates anything: the ceiling of the twins' coordination;
* ``null-sink``: the same, acknowledging every batch without storing it (production only: there
  is nothing to consume): the ceiling of the whole broker, storage included.

Sessions are the driver's own (harness/driver/session.py ``run_session``), so what is measured
here is what `twinbench run` measures. For each cell (32 B at batch 1, 20, 50; 1 KiB at batch
20), scenario (split, streaming) and role, it prints each side's median records/s over the
repetitions and its coefficient of variation, and each twin's ratio to ``uncoordinated``
(production also to ``null-sink``); it ends with ``cluster_efficiency_min=<lowest twin /
uncoordinated ratio>`` and writes a self-describing JSON file under results/perf/.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import statistics
import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from brokers.core.errors import UserError
from harness import architectures, conditions
from harness.bench.common import interleaved, spread, write_result
from harness.bench.single import start_single
from harness.cluster.processes import ManagedProcess
from harness.cluster.running import ProcessCluster, process_cpu_seconds
from harness.cluster.spec import ClusterSpec
from harness.driver import placement
from harness.driver.load import Clients, Load
from harness.driver.plan import Cell
from harness.driver.session import RoleResult, produce_only, run_session
from harness.workload import Workload, load_workload
from workloads.cluster import ClusterClient
from workloads.connection import run as run_async

FORMAT_VERSION = 1
CELLS = [(32, 1), (32, 20), (32, 50), (1024, 20)]
SCENARIOS = ("split", "streaming")
UNCOORDINATED = "uncoordinated"
NULL_SINK = "null-sink"


@dataclass(frozen=True)
class PerfClusterConfig:
    # Records per session, all producers together (the paper's 30,000).
    messages: int = 30_000
    # Measured repetitions per cell, scenario and side; the table reports the median.
    repetitions: int = 4
    # Where the JSON result goes.
    out_dir: Path = Path("results/perf")
    # Set `twinbench tune`'s knobs for the measurement and restore them afterwards (root).
    tune: bool = False


@dataclass
class Sample:
    side: str
    msg_size: int
    batch: int
    scenario: str
    role: str
    repetition: int
    records: int
    wall_s: float
    rps: float
    # CPU seconds of every process of the side (brokers, and ZooKeeper for zk) over the whole
    # session, both roles; per 1,000 records produced. On the production row only.
    cpu_ms_per_1k: float | None = None
    # Share of the machine other processes used during the session (harness/conditions.py).
    background_cpu: float | None = None


@dataclass
class Target:
    """One side: how to reach it and how to create a topic on it."""

    name: str
    clients: Clients
    # CreateTopics goes to each of these (a twin: its admin client; uncoordinated: every
    # broker, since no broker tells another).
    admins: list[ClusterClient]
    # CPU seconds so far of every process of the side.
    cpu: Callable[[], float]
    production_only: bool = False

    async def create(self, topic: str, partitions: int) -> None:
        for admin in self.admins:
            await admin.create_topic(topic, partitions)

    async def close(self) -> None:
        for c in {id(c): c for c in [self.clients.admin, *self.clients.producers,
                                     *self.clients.consumers, *self.admins]}.values():
            await c.close()


async def _twin(cluster: ProcessCluster, wl: Workload) -> Target:
    clients = await Clients.open(cluster.bootstrap, wl)
    return Target(cluster.spec.arch, clients, [clients.admin],
                  lambda: sum(cluster.cpu_seconds().values()))


async def _independent(name: str, brokers: list[tuple[ManagedProcess, str]], wl: Workload,
                       production_only: bool) -> Target:
    """Clients for three one-broker clusters: producer i and consumer i on broker i."""
    bootstraps = [address for _, address in brokers]
    n = len(bootstraps)
    admins = [await ClusterClient.open(b) for b in bootstraps]
    producers = [await ClusterClient.open(bootstraps[i % n]) for i in range(wl.producers)]
    consumers = [await ClusterClient.open(bootstraps[j % n]) for j in range(wl.consumers)]
    pids = [proc.pid for proc, _ in brokers]
    return Target(name, Clients(admins[0], producers, consumers), admins,
                  lambda: sum(process_cpu_seconds(pid) for pid in pids), production_only)


async def _session(target: Target, wl: Workload, cell: Cell, scenario: str, rep: int,
                   meter: conditions.BackgroundMeter) -> list[Sample]:
    topic = f"pc-{uuid.uuid4().hex[:12]}"
    await target.create(topic, wl.partitions)
    cpu0 = target.cpu()
    mark = meter.start()
    roles: list[RoleResult]
    if target.production_only:
        if scenario != "split":
            return []
        roles = [await produce_only(Load.of(target.clients), wl, cell, topic)]
    else:
        result = await run_session(Load.of(target.clients), wl, cell, scenario,
                                   wl.offset_commit[0],
                                   topic, f"{topic}-group")
        if result.failed:
            raise RuntimeError(f"{target.name} {cell.cell_id} {scenario}: data lost or "
                               f"reordered ({result.report})")
        roles = [result.production, result.consumption]
    background, _ = meter.stop(mark)
    cpu_s = target.cpu() - cpu0
    produced = roles[0].records
    return [Sample(target.name, cell.msg_size, cell.batch, scenario, r.role, rep, r.records,
                   r.wall_s, r.records / r.wall_s if r.wall_s > 0 else 0.0,
                   cpu_s / produced * 1e6 if r.role == "production" and produced else None,
                   background)
            for r in roles]


async def _measure(targets: list[Target], wl: Workload, config: PerfClusterConfig
                   ) -> list[Sample]:
    samples: list[Sample] = []

    def ours() -> dict[str, float]:
        t = os.times()
        return {"driver": t.user + t.system, **{x.name: x.cpu() for x in targets}}

    meter = conditions.BackgroundMeter(ours)
    for size, batch in CELLS:
        cell = Cell("perf_cluster", size, batch)
        for scenario in SCENARIOS:
            for rep in range(config.repetitions):
                for target in interleaved(targets, rep):
                    got = await _session(target, wl, cell, scenario, rep, meter)
                    samples += got
                    for s in got:
                        print(f"  {s.side:14} {size:5} B x {batch:2} {scenario:9} {s.role:11} "
                              f"rep {rep + 1}: {s.rps:>10,.0f} rec/s", file=sys.stderr,
                              flush=True)
    return samples


def table(samples: list[Sample], twins: list[str]) -> list[dict[str, object]]:
    """One row per cell x scenario x role x side: median records/s, coefficient of
    variation over repetitions, and a twin's ratios to the ceilings."""
    rows: list[dict[str, object]] = []
    keys = dict.fromkeys((s.msg_size, s.batch, s.scenario, s.role) for s in samples)
    for size, batch, scenario, role in keys:
        here = [s for s in samples if (s.msg_size, s.batch, s.scenario, s.role)
                == (size, batch, scenario, role)]
        med: dict[str, float] = {}
        for side in dict.fromkeys(s.side for s in here):
            values = [s.rps for s in here if s.side == side]
            med[side], cv = spread(values)
            cpu = [s.cpu_ms_per_1k for s in here if s.side == side and s.cpu_ms_per_1k is not None]
            rows.append({"msg_size": size, "batch": batch, "scenario": scenario, "role": role,
                         "side": side, "median_rps": med[side], "cv": cv,
                         "repetitions": len(values),
                         "cpu_ms_per_1k": statistics.median(cpu) if cpu else None})
        for row in rows[-len(med):]:
            if row["side"] in twins:
                for ceiling in (UNCOORDINATED, NULL_SINK):
                    row[f"ratio_{ceiling}"] = (med[str(row["side"])] / med[ceiling]
                                               if med.get(ceiling) else None)
    return rows


def efficiency_min(rows: list[dict[str, object]]) -> float:
    ratios = [r["ratio_uncoordinated"] for r in rows if r.get("ratio_uncoordinated") is not None]
    return min(float(str(x)) for x in ratios) if ratios else float("nan")


def _print(rows: list[dict[str, object]], config: PerfClusterConfig, where: str) -> None:
    print(f"\n3 brokers, 3 synchronous producers, 3 consumers, {config.messages:,} messages per "
          f"session, median of {config.repetitions} interleaved repetitions; {where}")
    print("cpu ms/1k: CPU of the side's processes over the session (both roles, ZooKeeper "
          "included) per 1,000 records produced")
    print(f"{'cell':>12} {'scenario':>9} {'role':>11} {'side':>14} {'rec/s':>10} {'cv':>6} "
          f"{'/uncoord':>9} {'/null':>7} {'cpu ms/1k':>10}")
    for r in rows:
        cv = f"{r['cv']:.1%}" if r["cv"] is not None else "-"
        ru = r.get("ratio_uncoordinated")
        rn = r.get("ratio_null-sink")
        cpu = r["cpu_ms_per_1k"]
        print(f"{r['msg_size']:>6} B x{r['batch']:>3} {r['scenario']:>9} {r['role']:>11} "
              f"{r['side']:>14} {r['median_rps']:>10,.0f} {cv:>6} "
              f"{f'{ru:.3f}' if ru is not None else '':>9} "
              f"{f'{rn:.3f}' if rn is not None else '':>7} "
              f"{f'{cpu:.1f}' if cpu is not None else '':>10}")


def _write(config: PerfClusterConfig, samples: list[Sample], rows: list[dict[str, object]],
           where: dict[str, object], machine_state: dict[str, object]) -> Path:
    return write_result(config.out_dir, "perf-cluster", "twinbench.perf-cluster",
                        format_version=FORMAT_VERSION, config=asdict(config), placement=where,
                        conditions=machine_state,
                        body={"rows": rows, "samples": [asdict(s) for s in samples]})


def twins_for(brokers: int) -> list[str]:
    """The architectures of the comparison that run ``brokers`` brokers (the registry's
    ``compared``; ``local`` runs one and is the uncoordinated side's code anyway)."""
    return [a for a in architectures.compared() if architectures.get(a).max_brokers >= brokers]


def run(config: PerfClusterConfig) -> int:
    with conditions.tuning(config.tune) as tuned:
        return _run(config, {**conditions.snapshot(), "tuned": tuned if config.tune else None})


def _run(config: PerfClusterConfig, machine_state: dict[str, object]) -> int:
    wl = dataclasses.replace(load_workload("paper").workload, messages=config.messages)
    where = placement.choose(wl.placement)
    if where is not None:
        placement.pin_this_process(where.client)
    twins = twins_for(wl.brokers)
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(
            prefix="twinbench-perf-cluster-") as tmp:
        workdir = Path(tmp)
        clusters: list[ProcessCluster] = []
        singles: dict[str, list[tuple[ManagedProcess, str]]] = {UNCOORDINATED: [],
                                                                  NULL_SINK: []}
        with placement.children_on(where):
            for arch in twins:
                spec = ClusterSpec(arch=arch, brokers=wl.brokers, flush=wl.flush,
                                   metadata_check=wl.metadata_check[0], options=wl.options)
                cluster = ProcessCluster(spec)
                stack.callback(cluster.stop)
                clusters.append(cluster.start())
            for side, storage in ((UNCOORDINATED, "segment"), (NULL_SINK, "null")):
                for i in range(wl.brokers):
                    proc, address = start_single(f"{side}-{i}", workdir, None, storage)
                    stack.callback(proc.stop)
                    singles[side].append((proc, address))

        async def main() -> list[Sample]:
            targets = [await _twin(c, wl) for c in clusters]
            targets += [await _independent(UNCOORDINATED, singles[UNCOORDINATED], wl, False),
                        await _independent(NULL_SINK, singles[NULL_SINK], wl, True)]
            try:
                return await _measure(targets, wl, config)
            finally:
                await asyncio.gather(*(t.close() for t in targets), return_exceptions=True)

        samples = run_async(main())
    rows = table(samples, twins)
    manifest: dict[str, object] = (where.as_manifest() if where is not None
                                   else {"client": None, "brokers": None})
    bg = [s.background_cpu for s in samples if s.background_cpu is not None]
    load = (f"other processes used {statistics.mean(bg):.0%} of the machine on average "
            f"(at most {max(bg):.0%})" if bg else "background load unknown")
    knobs = machine_state.get("knobs")
    _print(rows, config, f"client on CPUs {manifest['client']}, brokers on {manifest['brokers']}; "
           f"{load}; tuned={'yes' if machine_state.get('tuned') else 'no'} ({knobs})")
    path = _write(config, samples, rows, manifest, machine_state)
    print(f"results: {path}")
    print(f"cluster_efficiency_min={efficiency_min(rows):.3f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make perf-cluster",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=PerfClusterConfig.messages)
    parser.add_argument("--repetitions", type=int, default=PerfClusterConfig.repetitions)
    parser.add_argument("--out-dir", type=Path, default=PerfClusterConfig.out_dir)
    parser.add_argument("--tune", action="store_true",
                        help="set `twinbench tune`'s knobs for the measurement (root)")
    args = parser.parse_args(argv)
    if args.messages < 300 or args.repetitions < 1:
        raise UserError("--messages must be >= 300 and --repetitions >= 1")
    return run(PerfClusterConfig(args.messages, args.repetitions, args.out_dir, args.tune))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as exc:
        print(f"perf-cluster: error: {exc}", file=sys.stderr)
        sys.exit(2)
