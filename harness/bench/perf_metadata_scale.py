"""`make perf-metadata-scale`: at which cluster size does each design's metadata path cost what?

One machine runs a handful of brokers; the question of issue "metadata at scale" is about
hundreds or thousands. Both sides are answered beyond one machine, each the way it can be:

* DSBS, simulated: the gossip state machine every broker runs (``SwimNode``), on the in-memory
  network of ``brokers/dsbs_broker/gossip/simnet.py`` (same code minus the sockets, a simulated
  clock, seeded datagram loss), LAN timers. Per cluster size N and loss rate: N members that already
  know each other, one topic record created at one of them, and the simulated seconds until
  every member holds it (convergence), the datagrams and bytes per member that took, and the
  datagrams per member per second at rest. The member tables are N x N, so memory grows with
  N squared: a size whose tables would not fit in half the available memory is refused in one
  line before anything is allocated.
* ZooKeeper, on paper from measurements: one topic creation on the zk twin is W writes by the
  controller, then every broker's watch fires and each broker reads the new state back (r
  reads, e watch events per broker). W, r and e come from the counters of a measured metadata
  run (``make bench-metadata``: the topic-storm cells' counters.csv, per topic and per broker);
  the ZooKeeper server's CPU per read and per write from ``make perf-zk``'s JSON (its
  ``direct_zk_cpu_us``). For N brokers: W + N r requests per topic, N e notifications, and
  W t_write + N r t_read of ZooKeeper CPU, which one server must spend before the last broker
  has read the change: the watch fan-out. Per broker the traffic stays r + e whatever N is;
  the server's grows with N.

Prints one table per side and a line per size comparing them; nothing is written.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from brokers.core.errors import UserError
from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.gossip.simnet import SimNet
from brokers.dsbs_broker.packets.wire import TopicRecord

PROG = "python -m harness.bench.perf_metadata_scale"
# Resident bytes per (member, known member) pair of the simulation, measured at 1,000 members
# (210 MB); the size check uses it with a margin.
BYTES_PER_PAIR = 250
# Simulated seconds before the topic is created (timers settle) and at rest afterwards.
WARMUP_S = 2.0
IDLE_S = 5.0
CONVERGE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class GossipPoint:
    members: int
    loss: float
    converge_s: float | None
    packets_per_member: float
    bytes_per_member: float
    idle_packets_per_member_s: float
    cpu_s: float


def check_fits(members: int, available: int | None = None) -> None:
    """UserError when ``members``' tables would not fit in half the available memory."""
    avail = psutil.virtual_memory().available if available is None else available
    need = members * members * BYTES_PER_PAIR
    if need > avail // 2:
        largest = int((avail // 2 / BYTES_PER_PAIR) ** 0.5)
        raise UserError(f"{members:,} simulated members need ~{need / 1e9:.1f} GB of member "
                        f"tables (N x N); this machine has {avail / 1e9:.1f} GB available: at "
                        f"most ~{largest:,} members here")


def gossip_point(members: int, loss: float, seed: int) -> GossipPoint:
    """One seeded simulation: a topic record spreading through ``members`` members."""
    t0 = time.process_time()
    net = SimNet(GossipConfig.LAN, loss=loss, seed=seed)
    net.add_converged(members)
    net.run_for(WARMUP_S)
    p0, b0 = net.stats.packets, net.stats.bytes
    name = f"scale-{seed}"
    net.nodes[0].add_topic(TopicRecord(name, 3, 0, 1, 1, (0,)), net.now)
    took = net.run_until(lambda: all(name in n.topics.records for n in net.live_nodes()),
                         timeout_s=CONVERGE_TIMEOUT_S, check_every_s=0.05)
    packets, nbytes = net.stats.packets - p0, net.stats.bytes - b0
    p1 = net.stats.packets
    net.run_for(IDLE_S)
    idle = (net.stats.packets - p1) / members / IDLE_S
    return GossipPoint(members, loss, took, packets / members, nbytes / members, idle,
                       time.process_time() - t0)


# ---------------------------------------------------------------------------------------------
# The ZooKeeper side, from measurements
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZkTopicCost:
    # Per topic created: ZooKeeper writes (creates, sets, multis) of the cluster...
    writes: float
    # ... and per broker: reads, watch events.
    reads_per_broker: float
    events_per_broker: float
    # Where they were measured.
    brokers: int
    topics: int
    partitions: int
    source: str


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def zk_topic_cost(run_dir: Path) -> ZkTopicCost:
    """W, r, e per topic from the largest topic-storm cell of a zk metadata run."""
    meta, counters = run_dir / "metadata.csv", run_dir / "counters.csv"
    if not meta.is_file() or not counters.is_file():
        raise UserError(f"{run_dir}: not a metadata run (no metadata.csv / counters.csv)")
    storms = [r for r in _rows(meta) if r["kind"] == "topic-storm" and r["arch"] == "zk"]
    if not storms:
        raise UserError(f"{run_dir}: no zk topic-storm session (run make bench-metadata)")
    top = max(storms, key=lambda r: int(r["n"]))
    cell = top["cell_id"]
    sums: dict[str, float] = {}
    tries = {r["try"] for r in storms if r["cell_id"] == cell}
    for r in _rows(counters):
        if r["cell_id"] == cell and r["source"] == "coordinator" and r["increase"]:
            sums[r["counter"]] = sums.get(r["counter"], 0.0) + float(r["increase"])
    missing = [c for c in ("zk_writes", "zk_multi", "zk_reads", "zk_watch_events")
               if c not in sums]
    if missing:
        raise UserError(f"{run_dir}: counters.csv lacks {', '.join(missing)} for {cell}")
    topics = int(top["topics"]) * len(tries)
    brokers = int(top["brokers"])
    return ZkTopicCost(writes=(sums["zk_writes"] + sums["zk_multi"]) / topics,
                       reads_per_broker=sums["zk_reads"] / topics / brokers,
                       events_per_broker=sums["zk_watch_events"] / topics / brokers,
                       brokers=brokers, topics=topics, partitions=int(top["partitions"]),
                       source=f"{run_dir.name} {cell}")


def zk_request_cpu_us(perf_json: Path) -> tuple[float, float]:
    """ZooKeeper's CPU per get and per set (µs), one request in flight, from perf_zk's file."""
    try:
        doc = json.loads(perf_json.read_text("utf-8"))
        rows = {(r["op"], r["concurrency"]): r for r in doc["summary"]}
        get, put = rows[("get", 1)]["direct_zk_cpu_us"], rows[("set", 1)]["direct_zk_cpu_us"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{perf_json}: not a perf-zk result ({exc})") from None
    if get is None or put is None:
        raise UserError(f"{perf_json}: ZooKeeper's CPU was not measured (a server it did not "
                        "start)")
    return float(get), float(put)


def newest(pattern: str, root: Path) -> Path | None:
    found = sorted(root.glob(pattern), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def newest_zk_metadata_run(root: Path) -> Path | None:
    runs = [p.parent for p in root.glob("**/metadata.csv") if "-zk-" in p.parent.name
            and any(r["kind"] == "topic-storm" for r in _rows(p))]
    return max(runs, key=lambda p: p.name) if runs else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--members", default="10,100,1000",
                    help="cluster sizes, comma-separated (default 10,100,1000)")
    ap.add_argument("--loss", default="0,0.05",
                    help="datagram loss rates, comma-separated (default 0,0.05)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=Path, default=Path("results/runs"),
                    help="where to find the newest zk metadata run (default results/runs)")
    ap.add_argument("--zk-run", type=Path, default=None, help="that run directory instead")
    ap.add_argument("--zk-perf", type=Path, default=None,
                    help="a perf-zk JSON (default: the newest under results/perf)")
    args = ap.parse_args(argv)
    try:
        sizes = [int(x) for x in args.members.split(",")]
        losses = [float(x) for x in args.loss.split(",")]
    except ValueError:
        raise UserError("--members and --loss take comma-separated numbers") from None
    if any(n < 2 for n in sizes) or any(not 0 <= x < 1 for x in losses):
        raise UserError("--members must be >= 2 and --loss within [0, 1)")
    for n in sizes:
        check_fits(n)
    run = args.zk_run or newest_zk_metadata_run(args.runs)
    perf = args.zk_perf or newest("zkclient-*.json", Path("results/perf"))
    if run is None:
        raise UserError(f"no zk metadata run under {args.runs} (make bench-metadata, or "
                        "--zk-run DIR)")
    if perf is None:
        raise UserError("no perf-zk result under results/perf (make perf-zk, or --zk-perf FILE)")
    cost = zk_topic_cost(run)
    t_get, t_set = zk_request_cpu_us(perf)

    print(f"DSBS: gossip simulation, LAN timers, one topic record created at one member "
          f"(seed {args.seed})")
    print(f"{'members':>8} {'loss':>5} | {'converge_s':>10} {'pkts/member':>11} "
          f"{'bytes/member':>12} | {'idle pkts/member/s':>18} | {'cpu_s':>6}")
    points = []
    for n in sizes:
        for loss in losses:
            p = gossip_point(n, loss, args.seed)
            points.append(p)
            conv = f"{p.converge_s:10.2f}" if p.converge_s is not None else f"{'>300':>10}"
            print(f"{n:>8,} {loss:>5.2f} | {conv} {p.packets_per_member:>11.1f} "
                  f"{p.bytes_per_member:>12,.0f} | {p.idle_packets_per_member_s:>18.2f} | "
                  f"{p.cpu_s:>6.1f}", flush=True)
    print()
    print(f"ZooKeeper: per topic W={cost.writes:.1f} writes, per broker r="
          f"{cost.reads_per_broker:.1f} reads and e={cost.events_per_broker:.1f} watch events "
          f"({cost.partitions} partitions; measured on {cost.brokers} brokers, {cost.topics} "
          f"topics: {cost.source}); ZooKeeper CPU per get {t_get:.0f} us, per set {t_set:.0f} "
          f"us ({perf.name})")
    print(f"{'brokers':>8} | {'zk requests/topic':>17} {'notifications':>13} "
          f"{'zk cpu ms/topic':>15} | {'msgs/broker':>11}")
    for n in sizes:
        requests = cost.writes + n * cost.reads_per_broker
        cpu_ms = (cost.writes * t_set + n * cost.reads_per_broker * t_get) / 1000
        print(f"{n:>8,} | {requests:>17,.0f} {n * cost.events_per_broker:>13,.0f} "
              f"{cpu_ms:>15,.1f} | {cost.reads_per_broker + cost.events_per_broker:>11.1f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as exc:
        print(f"twinbench: error: {exc}", file=sys.stderr)
        sys.exit(2)
