"""`make perf-kafka`: one twinbench broker beside one real Kafka node, same client, same cell.

Every coordination ratio twinbench reports is only as meaningful as the broker core under it: if
the core were slower than the system it stands in for, part of what a report calls coordination
cost would be Python. So the core is judged against Kafka itself, on one node, where nothing is
coordinated:

* ``twinbench``: one `twinbench broker` (the LocalCoordinator, segment storage);
* ``kafka-<release>``: one Kafka node per pinned release (harness/kafka/releases.py: 3.9 and 4.x),
  a combined KRaft broker and controller started by the ``kafka-kraft`` entry with its box
  settings (``KafkaOptions``: heap, network and I/O threads).

All of them run at once, on the broker CPU, the load client on the other (harness/driver/
placement.py), and every repetition visits every side in turn, the order reversed on odd
repetitions (A B C, C B A), so drift on the shared machine hits each side alike. Each session is
the paper's synchronous producer (``produce``) into a fresh one-partition topic, then a fresh
consumer draining the cell's drain topic from its start (``consume``). A drain topic holds about
8 MiB of payload in the cell's batches, and never fewer records than a session produces (30,000
at 1 KiB: about 29 MiB), written once per side before measuring, so a drain
takes tens of fetches and is a rate: a session's own 30,000 small records fit in one or two
fetches, whose latency is all a drain of them would measure. Both run by one of two clients, both
on every side:

* ``librdkafka``: the C client (harness/bench/rdkafka_load.py): confluent-kafka's producer, and
  kcat's consumer (the Python binding's per-message cost would pace a drain of small records);
* ``twinbench``: the harness's own client (workloads/), the one every twinbench study uses; its
  producer is the paper's, its consumer here asks for 1 MiB per fetch (the Java consumer's
  max.partition.fetch.bytes) rather than one producer batch.

Before measuring, every side serves one full repetition of every cell with every client, which
is discarded: the JVM's JIT compiles the hot paths, and both sides' page caches and allocators
are warm. For each client, cell and role the table gives each side's median records/s and the
ratio twinbench / Kafka: the geometric mean of the per-repetition ratios (each repetition pairs
the two sides' sessions of the same round) with a 95% interval from Student's t on their
logarithms. The target (issue 36) is 1.2; ``meets`` marks a ratio at or above it, ``surely`` an
interval wholly above it, ``client`` a row where neither broker used half its core (the client
set the pace; the brokers' CPU per record still compares them). A side that failed to start, or
a session that did not deliver every record, is named as such and no ratio is given for it.
Every knob that differs between the sides is in the result's manifest (``fairness``) and printed
above the table.

``--profile DIR``: after the measured repetitions (the table is kept whatever the profiler does),
twinbench's broker is sampled by py-spy (harness/bench/profile.py) while each client runs each
cell's role again for at least 8 s; DIR/<client>-<size>x<batch>-<role>.raw holds py-spy's stacks
and the .txt beside it the summary. The drains' profiles say where a consumption cell's time goes.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import confluent_kafka as ck

from brokers.core.errors import KafkaError, UserError
from harness import conditions
from harness.architectures.kafka import KafkaOptions
from harness.bench import profile, rdkafka_load
from harness.bench.common import interleaved, write_result
from harness.bench.perf import CELLS  # the paper's synchronous grid, as make perf runs it
from harness.bench.single import produce_sync, start_single
from harness.cluster.processes import ManagedProcess
from harness.cluster.running import ProcessCluster, process_cpu_seconds
from harness.cluster.spec import ClusterSpec
from harness.driver import placement
from harness.kafka.releases import RELEASES
from workloads.cluster import ClusterClient
from workloads.connection import ConnectionClosed
from workloads.connection import run as run_async
from workloads.consumer import Consumer, ConsumerConfig
from workloads.producer import Producer

FORMAT_VERSION = 1
CLIENTS = ("librdkafka", "twinbench")
ROLES = ("produce", "consume")
OURS = "twinbench"
TARGET = 1.2
# Below this share of one core on both sides over a role, the client, not a broker, set the
# pace (each broker has one core to itself; a broker setting the pace uses most of it).
CLIENT_BOUND = 0.5
# The twinbench consumer's fetch size here: the Java consumer's max.partition.fetch.bytes.
FETCH_BYTES = 1024 * 1024
# Payload in a cell's drain topic: tens of 1 MiB fetches, so a drain is a rate and not the
# latency of the one or two fetches a session's 30,000 small records would fill.
DRAIN_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class PerfKafkaConfig:
    # Records per session (the paper's 30,000).
    messages: int = 30_000
    # Measured repetitions per cell, client and side (issue 36 asks for at least 5; an even
    # number visits the sides forwards and backwards equally often).
    repetitions: int = 6
    # Kafka releases beside the broker (harness/kafka/releases.py).
    releases: tuple[str, ...] = ("3.9.2", "4.1.1")
    # Clients that drive every side.
    clients: tuple[str, ...] = CLIENTS
    # Cells, as (message size, batch).
    cells: tuple[tuple[int, int], ...] = tuple(CELLS)
    # Where the JSON result goes.
    out_dir: Path = Path("results/perf")
    # Set `twinbench tune`'s knobs for the measurement and restore them afterwards (root).
    tune: bool = False
    # Where py-spy profiles of twinbench's broker go, taken after the measurement (None: none).
    profile: Path | None = None


@dataclass
class Sample:
    client: str
    side: str
    msg_size: int
    batch: int
    role: str
    repetition: int  # -1: the discarded warm-up
    records: int
    wall_s: float
    rps: float
    complete: bool
    error: str = ""
    # CPU seconds the side's broker process used over this role of the session (every thread).
    cpu_s: float | None = None
    # Records the broker served in the role (a drain's timed window leaves its first read out;
    # the CPU covers every record) and the role's whole elapsed time: CPU / elapsed is how busy
    # the broker was, which says whether it or the client set the pace.
    handled: int = 0
    elapsed_s: float = 0.0


@dataclass
class Side:
    name: str
    bootstrap: str
    pids: list[int]

    def cpu(self) -> float:
        return sum(thread_cpu_seconds(p) for p in self.pids)


def thread_cpu_seconds(pid: int, proc: Path = Path("/proc")) -> float:
    """CPU seconds so far of every live thread of ``pid``, to the nanosecond: the first field
    of each thread's schedstat. /proc's user and system times count in 10 ms ticks, coarser
    than a drain of a few hundred milliseconds; a thread that exited mid-session is lost (a
    Kafka JVM's threads live as long as it). Falls back to the tick count without schedstat."""
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return process_cpu_seconds(pid)
    total = read = 0
    for task in tasks:
        try:
            total += int((task / "schedstat").read_text().split()[0])
            read += 1
        except (OSError, IndexError, ValueError):
            continue  # the thread exited between listing and reading
    return total / 1e9 if read else process_cpu_seconds(pid)


def _topic() -> str:
    return f"pk-{uuid.uuid4().hex[:12]}"


async def _create(bootstrap: str, topic: str) -> None:
    admin = await ClusterClient.open(bootstrap)
    try:
        await admin.create_topic(topic, 1)
    finally:
        await admin.close()


async def _ours_drain(bootstrap: str, topic: str, size: int, batch: int, count: int
                      ) -> rdkafka_load.Run:
    cluster = await ClusterClient.open(bootstrap)
    try:
        config = ConsumerConfig(topic=topic, partitions=(0,), group=f"drain-{topic}",
                                batch=batch, msg_size=size, commit="none", start="earliest",
                                max_bytes=FETCH_BYTES)
        result = await Consumer(cluster, config=config).run(count, rdkafka_load.TIMEOUT_S)
    finally:
        await cluster.close()
    ok = result.records >= count and not result.timed_out
    return rdkafka_load.Run(result.records, result.wall_s, ok,
                            "" if ok else f"{result.records} of {count}; errors {result.errors}")


def drain_records(config: PerfKafkaConfig, size: int) -> int:
    """Records in a cell's drain topic: about ``DRAIN_BYTES`` of payload, never fewer than a
    session produces."""
    return max(config.messages, DRAIN_BYTES // size)


async def _fill(side: Side, size: int, batch: int, count: int) -> str:
    """A drain topic: ``count`` records in batches of ``batch``, written by the harness's
    pipelined producer (its payloads are what the twinbench consumer verifies)."""
    topic = _topic()
    cluster = await ClusterClient.open(side.bootstrap)
    try:
        await cluster.create_topic(topic, 1)
        result = await Producer(cluster, topic, msg_size=size, batch=batch, mode="pipelined"
                                ).run(count)
    finally:
        await cluster.close()
    if result.records_acked != count:
        raise UserError(f"{side.name}: filling a drain topic stored {result.records_acked} of "
                        f"{count} records ({result.errors})")
    return topic


def _session(client: str, side: Side, size: int, batch: int, count: int, drain_topic: str,
             drain_count: int, rep: int) -> list[Sample]:
    """Produce ``count`` records into a fresh topic, then drain the cell's drain topic. A role
    that raises (a broker gone, a client error) is a failed sample, reported and never a
    ratio, and the run goes on."""
    out = []
    for role in ROLES:
        cpu0, t0 = side.cpu(), time.perf_counter()
        try:
            r = _role(client, side, role, size, batch, count, drain_topic, drain_count)
        except (KafkaError, ck.KafkaException, ConnectionClosed, OSError, RuntimeError,
                TimeoutError) as exc:
            r = rdkafka_load.Run(0, 0.0, False, f"{type(exc).__name__}: {exc}"[:200])
        handled = count if role == "produce" else drain_count
        out.append(Sample(client, side.name, size, batch, role, rep, r.records, r.wall_s,
                          r.rps, r.complete, r.error, side.cpu() - cpu0, handled,
                          time.perf_counter() - t0))
    return out


def _role(client: str, side: Side, role: str, size: int, batch: int, count: int,
          drain_topic: str, drain_count: int) -> rdkafka_load.Run:
    if role == "produce" and client == "librdkafka":
        topic = _topic()
        run_async(_create(side.bootstrap, topic))
        return rdkafka_load.produce(side.bootstrap, topic, size, batch, count)
    if role == "produce":
        # make perf's synchronous producer, into a fresh topic of its own; short of ``count``
        # acknowledged it raises, which _session reports as a failed sample.
        s = run_async(produce_sync(side.bootstrap, size, batch, count))
        return rdkafka_load.Run(s.records, s.wall_s, True)
    if client == "librdkafka":
        return rdkafka_load.drain(side.bootstrap, drain_topic, drain_count)
    return run_async(_ours_drain(side.bootstrap, drain_topic, size, batch, drain_count))


def ratio_interval(ratios: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """A ``level`` interval for the typical ratio: Student's t on the logarithms of paired
    per-repetition ratios (a ratio's log is symmetric where the ratio is not); None for fewer
    than two."""
    from scipy import stats as sps

    logs = [math.log(r) for r in ratios if r > 0]
    if len(logs) < 2:
        return None
    mean = statistics.fmean(logs)
    half = sps.t.ppf(0.5 + level / 2, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(
        len(logs))
    return math.exp(mean - half), math.exp(mean + half)


def table(samples: list[Sample], kafkas: list[str], failed: dict[str, str]
          ) -> list[dict[str, object]]:
    """One row per client, cell, role and Kafka side: both sides' medians and the ratio."""
    rows: list[dict[str, object]] = []
    measured = [s for s in samples if s.repetition >= 0]
    keys = dict.fromkeys((s.client, s.msg_size, s.batch, s.role) for s in measured)
    for client, size, batch, role in keys:
        here = [s for s in measured if (s.client, s.msg_size, s.batch, s.role)
                == (client, size, batch, role)]
        by_rep = {(s.side, s.repetition): s for s in here}
        reps = sorted({s.repetition for s in here})
        ours = [by_rep[(OURS, r)] for r in reps if (OURS, r) in by_rep]
        for kafka in kafkas:
            row: dict[str, object] = {"client": client, "msg_size": size, "batch": batch,
                                      "role": role, "kafka": kafka}
            theirs = [by_rep[(kafka, r)] for r in reps if (kafka, r) in by_rep]
            broken = [s for s in ours + theirs if not s.complete]
            if kafka in failed:
                row["failure"] = f"{kafka} did not start: {failed[kafka]}"
            elif broken:
                row["failure"] = "; ".join(f"{s.side} rep {s.repetition + 1}: {s.error}"
                                           for s in broken[:2])
            else:
                ratios = [by_rep[(OURS, r)].rps / by_rep[(kafka, r)].rps for r in reps
                          if (OURS, r) in by_rep and (kafka, r) in by_rep
                          and by_rep[(kafka, r)].rps > 0 and by_rep[(OURS, r)].rps > 0]
                ci = ratio_interval(ratios)
                ratio = geometric_mean(ratios)
                busy_ours, busy_theirs = _busy(ours), _busy(theirs)
                busy = (None if busy_ours is None or busy_theirs is None
                        else max(busy_ours, busy_theirs))
                cpu = {side: _cpu_per_record(group) for side, group in ((OURS, ours),
                                                                       (kafka, theirs))}
                ours_cpu, kafka_cpu = cpu[OURS], cpu[kafka]
                row.update({
                    "ours_cpu_us": ours_cpu, "kafka_cpu_us": kafka_cpu,
                    "cpu_ratio": (kafka_cpu / ours_cpu if ours_cpu and kafka_cpu is not None
                                  else None),
                    "ours_rps": statistics.median(s.rps for s in ours),
                    "kafka_rps": statistics.median(s.rps for s in theirs),
                    "ratio": ratio,
                    "ci_low": ci[0] if ci else None, "ci_high": ci[1] if ci else None,
                    "repetitions": len(ratios),
                    "broker_busy": busy,
                    "meets": ratio >= TARGET,
                    "surely": ci is not None and ci[0] >= TARGET,
                    "client_bound": client_bound(busy),
                })
            rows.append(row)
    return rows


def geometric_mean(ratios: list[float]) -> float:
    """The typical paired ratio: the centre of ``ratio_interval``'s t interval on the logs."""
    return math.exp(statistics.fmean(math.log(r) for r in ratios))


def _busy(group: list[Sample]) -> float | None:
    """Median share of one core the broker used over a role's repetitions."""
    shares = [s.cpu_s / s.elapsed_s for s in group
              if s.cpu_s is not None and math.isfinite(s.cpu_s) and s.elapsed_s > 0]
    return statistics.median(shares) if shares else None


def client_bound(busy: float | None) -> bool:
    """Neither broker was busy for even ``CLIENT_BOUND`` of a core over the role: the client
    set the pace, so the rate says little about the brokers (their CPU per record does)."""
    return busy is not None and busy < CLIENT_BOUND


def _cpu_per_record(group: list[Sample]) -> float | None:
    """Median broker CPU microseconds per record served over a side's repetitions."""
    per = [s.cpu_s / s.handled * 1e6 for s in group
           if s.cpu_s is not None and math.isfinite(s.cpu_s) and s.handled]
    return statistics.median(per) if per and len(per) == len(group) else None


def _print(rows: list[dict[str, object]], heading: list[str]) -> None:
    for line in heading:
        print(line)
    print(f"{'client':>10} {'cell':>11} {'role':>7} {'kafka':>11} {'twinbench':>10} "
          f"{'kafka rec/s':>11} {'ratio':>6} {'95% interval':>15} {'verdict':>7} "
          f"{'cpu us/rec':>12} {'kafka/ours':>10}")
    for r in rows:
        cell = f"{r['msg_size']} B x {r['batch']}"
        head = f"{r['client']:>10} {cell:>11} {r['role']:>7} {r['kafka']:>11}"
        if "failure" in r:
            print(f"{head}  FAILED: {r['failure']}")
            continue
        ci = (f"[{r['ci_low']:.2f}, {r['ci_high']:.2f}]" if r["ci_low"] is not None else "-")
        verdict = ("surely" if r["surely"] else "meets" if r["meets"] else
                   "client" if r["client_bound"] else "below")
        cpu = (f"{r['ours_cpu_us']:.2f}/{r['kafka_cpu_us']:.2f}"
               if r["ours_cpu_us"] is not None and r["kafka_cpu_us"] is not None else "-")
        cpu_ratio = f"{r['cpu_ratio']:.2f}" if r["cpu_ratio"] is not None else "-"
        print(f"{head} {r['ours_rps']:>10,.0f} {r['kafka_rps']:>11,.0f} {r['ratio']:>6.2f} "
              f"{ci:>15} {verdict:>7} {cpu:>12} {cpu_ratio:>10}")


def _start_kafka(release: str, workdir: Path) -> tuple[ProcessCluster, Side]:
    spec = ClusterSpec(arch="kafka-kraft", brokers=1, flush="os", auto_create_topics=False,
                       data_dir=workdir / f"kafka-{release}", ready_timeout_s=180.0,
                       options={"kafka-kraft": {"release": release}})
    cluster = ProcessCluster(spec).start()
    return cluster, Side(f"kafka-{release}", cluster.bootstrap, cluster.pids())


def fairness(releases: tuple[str, ...]) -> dict[str, object]:
    """Every knob that differs between the sides, as the result's manifest records it."""
    box = KafkaOptions()
    return {
        "twinbench": {"process": "one Python process, one event loop (uvloop)",
                      "coordinator": "LocalCoordinator", "storage": "segment",
                      "flush": "os (page cache; no fsync per batch)"},
        "kafka": {"releases": list(releases), "mode": "KRaft combined broker+controller, "
                  "one voter", "heap_mb": box.heap_mb, "gc": "G1, MaxGCPauseMillis=20",
                  "num.network.threads": box.network_threads,
                  "num.io.threads": box.io_threads,
                  "flush": "os (Kafka's default: log.flush.interval.messages=Long.MAX)",
                  "jmx_exporter_agent": "loaded, never scraped during the run"},
        "clients": {"librdkafka": "producer: confluent-kafka, acks=1, linger.ms=5, "
                    "max.in.flight=1, batch.num.messages=<batch>, no idempotence; consumer: "
                    "kcat (librdkafka's C client) with librdkafka's defaults (fetch.max.bytes "
                    "50 MiB, max.partition.fetch.bytes 1 MiB), one offset printed per record",
                    "twinbench": f"the paper's synchronous producer (acks=1); consumer "
                    f"max_bytes {FETCH_BYTES} per fetch, no commits"},
        "warm_up": "one full repetition of every cell, client and side, discarded",
        "consume": f"a fresh consumer drains the cell's drain topic (about {DRAIN_BYTES} "
                   "bytes of payload in the cell's batches, written once per side by the "
                   "harness's pipelined producer); librdkafka's rate: records after kcat's "
                   "first pipe read over the time from it to the last; twinbench's: "
                   "records over the time from the first fetch to the last record",
    }


def run(config: PerfKafkaConfig) -> int:
    with conditions.tuning(config.tune) as tuned:
        return _run(config, {**conditions.snapshot(), "tuned": tuned if config.tune else None})


def _run(config: PerfKafkaConfig, machine_state: dict[str, object]) -> int:
    where = placement.choose("auto")
    failed: dict[str, str] = {}
    samples: list[Sample] = []
    sides: list[Side] = []
    # The directory outlives the processes (an ExitStack inside it stops them first): a JVM
    # still writing checkpoints into a directory being removed would fail the removal.
    with tempfile.TemporaryDirectory(prefix="twinbench-perf-kafka-") as tmp, \
            contextlib.ExitStack() as stack:
        workdir = Path(tmp)
        with placement.children_on(where):
            proc: ManagedProcess
            proc, address = start_single(OURS, workdir, None, "segment")
            stack.callback(proc.stop)
            sides.append(Side(OURS, address, [proc.pid]))
            for release in config.releases:
                try:
                    cluster, side = _start_kafka(release, workdir)
                except UserError as exc:  # ProcessError included: reported, never a ratio
                    why = failed[f"kafka-{release}"] = str(exc).splitlines()[0]
                    print(f"perf-kafka: Kafka {release} did not start: {why}", file=sys.stderr)
                    continue
                stack.callback(cluster.stop)
                sides.append(side)
        samples, drains = _measure(sides, config)
        if config.profile is not None:
            try:
                _profile(config.profile, sides[0], drains, config)
            except (UserError, OSError, subprocess.SubprocessError) as exc:
                # The measurement is kept and printed below; the profile alone is lost.
                print(f"perf-kafka: profiling failed: {exc}", file=sys.stderr)
    kafkas = [f"kafka-{r}" for r in config.releases]
    rows = table(samples, kafkas, failed)
    manifest = (where.as_manifest() if where is not None else {"client": None, "brokers": None})
    heading = [
        f"\none node each, {config.messages:,} records per session, medians of "
        f"{config.repetitions} interleaved repetitions after one discarded warm-up; client on "
        f"CPUs {manifest['client']}, brokers on {manifest['brokers']}; "
        f"tuned={'yes' if machine_state.get('tuned') else 'no'}",
        f"ratio: twinbench / Kafka records/s, geometric mean of per-repetition ratios, 95% "
        f"interval from t on their logs; verdict against {TARGET} (meets: the ratio; surely: the "
        f"whole interval; client: neither broker used {CLIENT_BOUND:.0%} of its core, so the "
        f"client set the pace); cpu us/rec: the broker process's CPU (every thread) per record "
        f"over the session's role, twinbench/Kafka, and Kafka's over ours (above 1: ours is "
        f"cheaper)",
        *(f"  {k}: {v}" for k, v in fairness(config.releases).items()),
    ]
    _print(rows, heading)
    path = write_result(config.out_dir, "perf-kafka", "twinbench.perf-kafka",
                        format_version=FORMAT_VERSION, config=asdict(config),
                        placement=manifest, conditions=machine_state,
                        body={"fairness": fairness(config.releases), "failed_sides": failed,
                              "rows": rows, "samples": [asdict(s) for s in samples]})
    print(f"results: {path}")
    ratios = [float(str(r["ratio"])) for r in rows if "ratio" in r]
    print(f"kafka_ratio_min={min(ratios):.3f}" if ratios else "kafka_ratio_min=nan")
    return 0 if not failed and all("ratio" in r for r in rows) else 1


def _profile(out: Path, ours: Side, drains: dict[tuple[str, int, int], str],
             config: PerfKafkaConfig) -> None:
    """twinbench's broker sampled while each client repeats each cell's role."""
    (pid,) = ours.pids
    for client in config.clients:
        for size, batch in config.cells:
            for role in ROLES:
                name = f"{client}-{size}x{batch}-{role}"

                def session(client: str = client, size: int = size, batch: int = batch,
                            role: str = role, name: str = name) -> tuple[int, float]:
                    r = _role(client, ours, role, size, batch, config.messages,
                              drains[(ours.name, size, batch)], drain_records(config, size))
                    if not r.complete or r.wall_s <= 0:
                        raise UserError(f"{name}: {r.error or 'no records'}")
                    return r.records, r.wall_s
                profile.profile_sessions(pid, out, name, f"twinbench broker, {client} {role}, "
                                         f"{size} B x {batch}", session)


def _measure(sides: list[Side], config: PerfKafkaConfig
             ) -> tuple[list[Sample], dict[tuple[str, int, int], str]]:
    """Every sample, and the drain topic of each (side, size, batch)."""
    samples: list[Sample] = []
    drains: dict[tuple[str, int, int], str] = {}
    for size, batch in config.cells:
        for side in sides:
            drains[(side.name, size, batch)] = run_async(
                _fill(side, size, batch, drain_records(config, size)))
    for rep in range(-1, config.repetitions):
        for client in config.clients:
            for size, batch in config.cells:
                for side in interleaved(sides, max(rep, 0)):
                    for s in _session(client, side, size, batch, config.messages,
                                      drains[(side.name, size, batch)],
                                      drain_records(config, size), rep):
                        samples.append(s)
                        _progress(s)
    return samples, drains


def _progress(s: Sample) -> None:
    when = "warm-up" if s.repetition < 0 else f"rep {s.repetition + 1}"
    print(f"  {s.client:10} {s.side:12} {s.msg_size:5} B x {s.batch:2} {s.role:7} {when}: "
          f"{s.rps:>10,.0f} rec/s{'' if s.complete else '  FAILED ' + s.error}",
          file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make perf-kafka", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=PerfKafkaConfig.messages)
    parser.add_argument("--repetitions", type=int, default=PerfKafkaConfig.repetitions)
    parser.add_argument("--releases", default=",".join(PerfKafkaConfig.releases),
                        help="Kafka releases beside the broker, comma-separated")
    parser.add_argument("--clients", default=",".join(CLIENTS),
                        help="load clients, comma-separated: librdkafka, twinbench")
    parser.add_argument("--cells", default=",".join(f"{s}x{b}" for s, b in CELLS),
                        help="cells as SIZExBATCH, comma-separated (default: the paper's grid)")
    parser.add_argument("--out-dir", type=Path, default=PerfKafkaConfig.out_dir)
    parser.add_argument("--tune", action="store_true",
                        help="set `twinbench tune`'s knobs for the measurement (root)")
    parser.add_argument("--profile", type=Path, metavar="DIR",
                        help="after measuring, profile twinbench's broker with py-spy in each "
                             "client's roles of each cell; write the profiles into DIR")
    args = parser.parse_args(argv)
    return run(parse_config(args))


def parse_config(args: argparse.Namespace) -> PerfKafkaConfig:
    if args.messages < 1000 or args.repetitions < 2:
        raise UserError("--messages must be >= 1000 and --repetitions >= 2 (an interval needs "
                        "two)")
    releases = tuple(r for r in args.releases.split(",") if r)
    unknown = [r for r in releases if r not in RELEASES]
    if not releases or unknown:
        raise UserError(f"--releases: choose among {', '.join(RELEASES)} (got {args.releases!r})")
    clients = tuple(c for c in args.clients.split(",") if c)
    if not clients or any(c not in CLIENTS for c in clients):
        raise UserError(f"--clients: choose among {', '.join(CLIENTS)} (got {args.clients!r})")
    if "librdkafka" in clients and shutil.which(rdkafka_load.KCAT) is None:
        raise UserError("kcat is not installed (the librdkafka client's drains): `make setup` "
                        "installs it, or pass --clients twinbench")
    cells: list[tuple[int, int]] = []
    for text in args.cells.split(","):
        size, _, batch = text.partition("x")
        if not (size.isdigit() and batch.isdigit() and int(size) >= 16 and int(batch) >= 1):
            raise UserError(f"--cells: {text!r} is not SIZExBATCH (size >= 16, batch >= 1)")
        cells.append((int(size), int(batch)))
    if args.profile is not None:
        profile.py_spy()  # missing: one line now, not after the measurement
    return PerfKafkaConfig(args.messages, args.repetitions, releases, clients, tuple(cells),
                           args.out_dir, args.tune, args.profile)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as exc:
        print(f"perf-kafka: error: {exc}", file=sys.stderr)
        sys.exit(2)
