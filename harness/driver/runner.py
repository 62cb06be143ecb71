"""``twinbench run``: start the cluster, run every session of a workload, write the run logs.

Flow per epoch (sessions sharing clusters, see plan.py): start each architecture's services
(ZooKeeper) and brokers through ``harness.cluster`` with the brokers pinned away from the
client - one cluster per architecture, both up at once for ``--arch both`` - open each
cluster's clients once, then per session: create a fresh topic, read the coordination
counters, run the scenario, read them again, write the rows. ``--arch both`` alternates the
architectures of the registry (harness/architectures/) session by session (zk dsbs, then
dsbs zk on the next try), so drift on a shared machine hits both alike. A cluster is restarted
only when the workload needs it (another metadata_check, or ``restart: cell|try``).

Interruption: Ctrl-C (SIGINT) or SIGTERM cancels the session in progress; every cluster
process is stopped by PID, every run log gets ``incomplete: true`` and an end time, rows
already written stay, and the exit status is 130. A session that raises (the cluster broke)
marks its run incomplete; the run goes on while the cluster's processes are alive.

Hosts (``--hosts FILE``, harness/remote/): the clusters run on the hosts of their roles and the
load on the client hosts, one load worker each (harness/driver/load.py's parts); everything
else is the same code. The fleet of SSH connections is opened (every needed host checked)
before anything starts, the manifest records the hosts, their clock offsets and the layout,
each cluster's logs come back into the run directory (``hosts/``), and a host that vanishes
ends the run with one line (exit 1, the run marked incomplete).

Exit status: 0 all good; 1 some cell lost, reordered or corrupted data (said loudly on stderr,
listed in the manifest's ``failed_cells``), or the run could not go on; 130 interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from brokers.core.errors import KafkaError, UserError
from harness import architectures, conditions, runlog, services, studies
from harness.cluster.certs import RunSecurity, cluster_settings, make_run_security
from harness.cluster.external import External, ExternalCluster
from harness.cluster.layout import LOCAL_LAYOUT, Layout
from harness.cluster.running import ProcessCluster, process_cpu_seconds
from harness.cluster.spec import ClusterSpec
from harness.driver import counters, kafka_perf, kinds, placement, plan, rows
from harness.driver.kinds import ClusterDied
from harness.driver.load import Load
from harness.driver.progress import RunProgress, summary_table
from harness.driver.session import run_session
from harness.hosts import HostLost, HostsFile
from harness.studies.latency import CLIENT_CEILING_RPS, LATENCY_STUDY, ceiling
from harness.studies.latency import steps as searches
from harness.studies.latency.search import RateSearch, RateSearcher
from harness.studies.qos import QOS
from harness.studies.qos.sampler import MetricsSampler
from harness.studies.rtt import RTT
from harness.workload import LoadedWorkload, Workload
from workloads.connection import ConnectionClosed
from workloads.connection import run as run_async

if TYPE_CHECKING:  # asyncssh is imported only when a run uses hosts
    from harness.remote.ssh import SshFleet

EXIT_OK = 0
EXIT_DATA_LOSS = 1
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class RunOptions:
    # A registry name, or both (all of them interleaved session by session, one run log each)
    arch: str
    # The validated workload file.
    workload: LoadedWorkload
    # Parent directory of the run directories.
    out: Path = Path("results/runs")
    # Overrides the workload's tries (the manifest's workload records the override).
    tries: int | None = None
    # Seeds topic and group names; None = a random seed, recorded in the manifest.
    seed: int | None = None
    # The manifest label (an A/A workload's labels are prefixed with it).
    label: str | None = None
    # Options of architectures and services from the command line (--option NAME.KEY=VALUE),
    # over the workload's ``options``.
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Progress bar and summary table; None = only when stdout is a terminal.
    progress: bool | None = None
    # A cluster twinbench did not start (--bootstrap): then `arch` is ignored and the run log's
    # architecture is the external cluster's name.
    external: External | None = None
    # Run the clusters and the load clients on these hosts (--hosts; harness/remote/).
    hosts: HostsFile | None = None
    # Set harness/conditions.py's knobs for the run and restore them afterwards (root).
    tune: bool = False


@dataclass
class RunOutcome:
    run_dirs: list[Path] = field(default_factory=list)
    # label -> cell ids that lost, reordered or corrupted data.
    failed_cells: dict[str, list[str]] = field(default_factory=dict)
    incomplete: bool = False
    interrupted: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        if any(self.failed_cells.values()) or self.errors:
            return EXIT_DATA_LOSS
        return EXIT_OK


class _Run:
    """State of one `twinbench run` (mutable; one event loop)."""

    def __init__(self, opts: RunOptions) -> None:
        self.opts = opts
        wl = opts.workload.workload
        if opts.tries is not None:
            wl = dataclasses.replace(wl, tries=opts.tries)
        self.workload = wl
        self.seed = opts.seed if opts.seed is not None else random.SystemRandom().getrandbits(32)
        self.rng = random.Random(self.seed)
        self.started = datetime.now(UTC)
        self.external = opts.external
        if self.external is not None:
            _check_external(wl)
            self.arches: tuple[str, ...] = (self.external.name,)
        else:
            self.arches = architectures.expand(opts.arch)
            _check_policies(wl, self.arches)
        # With hosts the load runs elsewhere: nothing here to pin.
        self.placement = placement.choose(wl.placement) if opts.hosts is None else None
        self.fleet: SshFleet | None = None
        if opts.hosts is not None:
            _check_hosts(wl)
            from harness.remote.deploy import needed_hosts

            # The roles check, before anything starts.
            needed_hosts(opts.hosts, () if self.external else self.arches, clients=True,
                         brokers=self.external is None)
        # Clusters started so far, per architecture (names their logs' directories).
        self.cluster_count: dict[str, int] = {}
        self.sides = plan.sides(wl, opts.label, self.arches)
        # The study whose sessions replace the paper's (faults, metadata), if any.
        self.kind = kinds.session_kind(wl)
        if kafka_perf.NAME in wl.client:
            kafka_perf.check(wl, session_kind=self.kind is not None,
                             hosts=opts.hosts is not None,
                             secured=any(side.security != "none" for side in self.sides))
        self.epochs = kinds.schedule(wl, self.sides)
        self.total = sum(len(e.sessions) for e in self.epochs)
        self.logs: dict[int, runlog.RunLog] = {}
        self.records: dict[int, list[dict[str, Any]]] = {s.index: [] for s in self.sides}
        self.coordination: dict[int, list[dict[str, Any]]] = {s.index: [] for s in self.sides}
        self.clusters: dict[plan.ClusterKey, ProcessCluster | ExternalCluster] = {}
        # Unrecorded warm-up sessions each cluster ran before its first measured one.
        self.warmups: dict[plan.ClusterKey, int] = {}
        # Throwaway certificates and users, made for the run's first secured cluster and
        # removed with the run (harness/cluster/certs.py).
        self._security_dir: tempfile.TemporaryDirectory[str] | None = None
        self._security_files: RunSecurity | None = None
        self.outcome = RunOutcome()
        self.session_no = 0
        # Seconds spent inside measured phases; the rest of the run is the harness's overhead.
        self.timed_s = 0.0
        # Topic and group names: seeded, and distinct from any earlier run on the same cluster.
        self.name_prefix = f"tb{self.rng.getrandbits(32):08x}"
        show = opts.progress if opts.progress is not None else sys.stdout.isatty()
        self.console = Console()
        if not self.console.is_terminal:  # forced --progress into a pipe: do not wrap at 80
            self.console = Console(width=120)
        self.progress = RunProgress(self.total, show, self.console)
        # What --tune changed ({sysfs file: value before}); restored by run() on the way out.
        self.tuned: dict[str, str] = {}
        self.background = conditions.BackgroundMeter(self.our_cpu)
        # (side index, base cell id) -> each try's search (rate_search workloads).
        self.max_rates: dict[tuple[int, str], list[RateSearch]] = {}
        # The highest rate a search may try (rate_search workloads; resolve_client_ceiling).
        self.client_ceiling: ceiling.ClientCeiling | None = None
        self.warn_above_client_ceiling()

    def warn_above_client_ceiling(self) -> None:
        """A target the load client cannot schedule measures the client, not the brokers."""
        if not self.workload.rate:
            return
        known = ceiling.cached(ceiling.path(), ceiling.fingerprint())
        limit = known.rps if known is not None else CLIENT_CEILING_RPS
        where = ("measured on this machine" if known is not None else
                 "on the development VM; `python -m harness.bench.perf --open-loop` measures "
                 "this machine")
        too_high = [r for r in self.workload.rate if r > limit]
        if too_high:
            print(f"twinbench: warning: target rate {max(too_high):,.0f} records/s is above "
                  f"what one load client schedules on time (~{limit:,.0f}, {where}); such "
                  "sessions measure the client and will likely be marked behind",
                  file=sys.stderr)

    def resolve_client_ceiling(self) -> None:
        """A rate search's ceiling: the workload's, or the load client's own on this machine
        (kept from an earlier measurement, or measured now)."""
        search = self.workload.study(LATENCY_STUDY)
        if search is None:
            return
        given = search.search.ceiling
        self.client_ceiling = (ceiling.from_workload(given) if given is not None
                               else ceiling.resolve())

    # --- clusters --------------------------------------------------------------------------
    def spec(self, key: plan.ClusterKey, metadata_check: str,
             session: plan.Session | None = None) -> ClusterSpec:
        """The cluster for ``key`` (an architecture at a security level); a broker-join
        session's has its size of brokers plus one standby."""
        wl = self.workload
        arch = key.arch
        brokers, standby = wl.brokers, 0
        fresh = (self.kind.fresh_clusters(session) if self.kind is not None
                 and session is not None and session.case is not None else None)
        if fresh is not None:
            brokers, standby = fresh
        return ClusterSpec(
            arch=arch,
            brokers=brokers,
            standby=standby,
            options=merge_options(wl.options, self.opts.options),
            flush=wl.flush,
            metadata_check=metadata_check,
            network=wl.network,
            # The line starts with no delay; every session sets its cell's (run_one).
            rtt_ms=0.0 if wl.study(RTT) else None,
            broker_args=self.broker_limits(),
            metrics=wl.study(QOS) is not None,
            **cluster_settings(key.security, self.security_files(key.security)),
        )

    def security_files(self, level: str) -> RunSecurity | None:
        """The run's certificates and users (made once, at the first secured cluster)."""
        if level == "none":
            return None
        if self._security_files is None:
            self._security_dir = tempfile.TemporaryDirectory(prefix="twinbench-security-")
            self._security_files = make_run_security(Path(self._security_dir.name))
        return self._security_files

    def remove_security_files(self) -> None:
        if self._security_dir is not None:
            self._security_dir.cleanup()
            self._security_dir = self._security_files = None

    def broker_limits(self) -> tuple[str, ...]:
        return broker_settings(self.workload)

    def open_fleet(self) -> None:
        """--hosts: log into every host the run needs (one line for the first that is not
        ready); a host lost later cancels the run's main task."""
        if self.opts.hosts is None:
            return
        from harness.remote.deploy import open_fleet

        self.fleet = open_fleet(self.opts.hosts, () if self.external else self.arches,
                                clients=True, brokers=self.external is None)

    def watch_fleet(self) -> None:
        fleet = self.fleet
        if fleet is None:
            return
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        fleet.on_lost(lambda _lost: loop.call_soon_threadsafe(task.cancel))

    def layout(self, arch: str) -> Layout:
        if self.fleet is None:
            return LOCAL_LAYOUT
        from harness.remote.deploy import cluster_layout

        return cluster_layout(self.fleet, arch)

    def start_cluster(self, key: plan.ClusterKey, metadata_check: str,
                      session: plan.Session | None = None
                      ) -> ProcessCluster | ExternalCluster:
        if self.external is not None:
            external = ExternalCluster(self.external)
            self.clusters[key] = external
            return external
        arch = key.arch
        with placement.children_on(self.placement):
            cluster = ProcessCluster(self.spec(key, metadata_check, session), self.layout(arch))
            self.clusters[key] = cluster
            self.cluster_count[arch] = self.cluster_count.get(arch, 0) + 1
            cluster.start()
        if cluster.delay is not None and self.placement is not None:
            # The delay line stands for the network, not for a broker: off the brokers' CPUs
            # (placement.py), and its CPU is a column of its own (delay_cpu_s).
            placement.pin_process(cluster.delay.pid, self.placement.client)
        return cluster

    async def open_load(self, cluster: ProcessCluster | ExternalCluster) -> Load:
        if self.fleet is None:
            # A secured cluster: the load client's connections do its TLS and SASL login.
            security = (cluster.spec.client_security() if isinstance(cluster, ProcessCluster)
                        and cluster.spec.protocol.value != "PLAINTEXT" else None)
            return await Load.open(cluster.bootstrap, self.workload, self.external, security)
        from harness.remote.part import open_remote_load

        return await open_remote_load(self.fleet, cluster.bootstrap, self.workload,
                                      self.external)

    def stop_clusters(self) -> None:
        while self.clusters:
            key, cluster = self.clusters.popitem()
            arch = key.arch
            if isinstance(cluster, ProcessCluster) and self.fleet is not None:
                # The cluster's logs and last counters come back into its run directory.
                log = next((self.logs[s.index] for s in self.sides
                            if s.arch == arch and s.index in self.logs), None)
                if log is not None:
                    cluster.collect_to = (log.path / "hosts"
                                          / f"{arch}-cluster{self.cluster_count[arch]}")
            cluster.stop()

    def hosts_manifest(self, arch: str) -> dict[str, Any] | None:
        """The manifest's ``hosts`` key (docs/result-format.md)."""
        fleet = self.fleet
        if fleet is None:
            return None
        wl = self.workload
        clients = fleet.client_machines()
        from harness.driver.load import share

        out: dict[str, Any] = {
            "file": str(fleet.hosts.path),
            "hosts": [m.manifest() for m in fleet.machines.values()],
            "clients": [{"host": m.name, "producers": list(p), "consumers": list(c)}
                        for m, p, c in zip(clients, share(wl.producers, len(clients)),
                                           share(wl.consumers, len(clients)), strict=True)],
        }
        if self.external is None:
            layout = self.layout(arch)
            for name in services.names():  # each service's hosts ([] when it has none)
                out[name] = [m.name for m in layout.services.get(name, ())]
            out["brokers"] = [layout.broker(i).name for i in range(wl.brokers)]
        return out

    # --- run logs --------------------------------------------------------------------------
    def log_for(self, side: plan.Side, cluster: ProcessCluster | ExternalCluster
                ) -> runlog.RunLog:
        log = self.logs.get(side.index)
        if log is not None:
            return log
        wl = self.workload
        arch = side.arch
        run_id = runlog.make_run_id(arch, wl.name, self.started, random.SystemRandom())
        cluster_info: dict[str, Any] = {
            "brokers": wl.brokers,
            "partitions": wl.partitions,
            "start_seconds": round(cluster.start_seconds, 3),
            "network": wl.network,
        }
        # Every service's version, None where this architecture has none.
        versions: dict[str, str | None] = dict.fromkeys(services.names())
        if isinstance(cluster, ExternalCluster):
            cluster_info |= {"brokers": cluster.broker_count, "network": "external"}
            labels = {arch: cluster.external.labels(order=100)}
        else:
            cluster_info["options"] = cluster.spec.options_manifest()
            cluster_info["warmup_sessions"] = self.warmups.get(side.cluster, 0)
            # Every process's resident memory once warm, before the side's first session: a
            # JVM's heap and code cache beside a Python broker's.
            cluster_info["rss_bytes"] = cluster.memory()
            for name, machines in cluster.layout.services.items():
                # On hosts a service has one server per host of its role.
                cluster_info["options"].get(name, {})["nodes"] = len(machines)
            cluster_info["security_protocol"] = cluster.spec.protocol.value
            if cluster.spec.protocol.sasl:
                cluster_info["sasl_mechanism"] = cluster.spec.sasl_mechanisms[0]
            if cluster.delay is not None:
                cluster_info["rtt"] = {
                    "delay_line": "nfqueue", "rtt_ms": list(_rtts(wl)),
                    "one_way": "peers rtt/2 each way; root namespace -> broker rtt",
                    "cpus": list(self.placement.client) if self.placement else None}
            versions |= {name: running.version for name, running in cluster.services.items()}
            labels = architectures.manifest_labels(self.arches)
        if self.fleet is not None and isinstance(cluster, ProcessCluster):
            cluster_info["network"] = "hosts"
        manifest = runlog.base_manifest(
            run_id=run_id,
            arch=arch,
            label=side.label,
            workload=wl.as_dict(),
            workload_text=self.opts.workload.text,
            policies={"offset_commit": side.offset_commit,
                      "metadata_check": side.metadata_check, "flush": wl.flush,
                      "security": side.security},
            cluster=cluster_info,
            service_versions=versions,
            placement=self.placement.as_manifest() if self.placement else None,
            seed=self.seed,
            conditions=conditions.snapshot(),
            tuned=self.tuned if self.opts.tune else None,
            started_at=self.started,
            run_arches=self.arches,
            architectures=labels,
            external=self.external.manifest() if self.external is not None else None,
            hosts=self.hosts_manifest(arch),
            client_ceiling=(self.client_ceiling.manifest()
                            if self.client_ceiling is not None else None),
            client=(kafka_perf.manifest(wl) if side.client == kafka_perf.NAME
                    else {"name": side.client}),
        )
        log = runlog.RunLog(self.opts.out, manifest)
        self.logs[side.index] = log
        self.outcome.run_dirs.append(log.path)
        what = " ".join(x for x in (arch if len(self.arches) > 1 else "", side.label) if x)
        self.progress.note(f"run log [bold]{log.path}[/]" + (f" ({what})" if what else ""))
        return log

    # --- the loop --------------------------------------------------------------------------
    async def main(self) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        # SIGTERM behaves like Ctrl-C: cancel, clean up, keep what was written.
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
        if self.placement is not None:
            placement.pin_this_process(self.placement.client)
        self.watch_fleet()
        for epoch in self.epochs:
            await self.run_epoch(epoch)

    async def run_epoch(self, epoch: plan.Epoch) -> None:
        clients: dict[plan.ClusterKey, Load] = {}
        try:
            for key in epoch.clusters:
                self.progress.current(f"starting {key} cluster "
                                      f"(metadata_check={epoch.metadata_check})")
                # A metadata epoch is one cell: its first session says what cluster it needs.
                cluster = self.start_cluster(key, epoch.metadata_check, epoch.sessions[0])
                if isinstance(cluster, ExternalCluster):
                    await cluster.probe()
                clients[key] = await self.open_load(cluster)
            await self.warm_up(epoch, clients)
            if epoch.searches:
                await self.run_searches(epoch, clients)
            for session in epoch.sessions:
                key = session.side.cluster
                await self.run_one(self.clusters[key], clients[key], session)
        finally:
            for c in clients.values():
                with contextlib.suppress(Exception):
                    await c.close()
            self.stop_clusters()

    async def warm_up(self, epoch: plan.Epoch, clients: dict[plan.ClusterKey, Load]) -> None:
        """The workload's ``warmup_sessions`` on each fresh cluster of the epoch, unrecorded:
        copies of the first session the cluster will measure (fault, metadata and
        rate-fraction sessions have no such copy, and the clusters of their epochs start
        cold)."""
        if self.external is not None:
            return
        for key in epoch.clusters:
            n = self.workload.warmup_sessions
            steady = architectures.get(key.arch).warmup_until_steady
            first = next((s for s in epoch.sessions if s.side.cluster == key), None)
            if (n == 0 and not steady) or first is None or first.case is not None \
                    or first.cell.fraction is not None:
                continue
            rates: list[float] = []
            while len(rates) < n or (steady and not _steady(rates)):
                i = len(rates) + 1
                self.progress.current(f"[{key}] warm-up {i}/{n if not steady else '?'}: "
                                      f"{first.cell.cell_id} {first.scenario}")
                self.session_no += 1
                topic = f"{self.name_prefix}-{self.session_no}"
                try:
                    await clients[key].admin.create_topic(topic, self.workload.partitions,
                                                          self.workload.replication_factor)
                    done = await run_session(clients[key], self.workload, first.cell,
                                             first.scenario, first.side.offset_commit, topic,
                                             f"{topic}-group")
                except (KafkaError, ConnectionClosed, OSError, TimeoutError) as exc:
                    self.could_not_run(f"{key} warm-up {i}", self.clusters[key], exc)
                    return
                p = done.production
                rates.append(p.records / p.wall_s if p.wall_s > 0 else 0.0)
            self.warmups[key] = len(rates)

    # --- rate searches ---------------------------------------------------------------------
    async def run_searches(self, epoch: plan.Epoch, clients: dict[plan.ClusterKey, Load]
                           ) -> None:
        """Every side's maximum sustainable rate, per base cell and try; the sides' searches
        advance one step at a time, alternating which goes first (A B B A)."""
        wl = self.workload
        search = wl.study(LATENCY_STUDY)
        assert search is not None
        assert self.client_ceiling is not None  # resolve_client_ceiling ran
        config = searches.search_config(search.search, self.client_ceiling.rps)
        for cell in plan.base_cells(wl):
            for try_no in range(1, wl.tries + 1):
                found = {side.index: RateSearcher(config) for side in epoch.searches}
                step = 0
                while any(f.next_rate() is not None for f in found.values()):
                    step += 1
                    order = epoch.searches if step % 2 else epoch.searches[::-1]
                    for side in order:
                        rate = found[side.index].next_rate()
                        if rate is None:
                            continue
                        outcome = await self.search_step(clients[side.cluster], side, cell,
                                                         try_no, step, rate)
                        found[side.index].record(outcome.kept)
                for side in epoch.searches:
                    result = found[side.index].result()
                    self.max_rates.setdefault((side.index, cell.base_id), []).append(result)
                    log = self.log_for(side, self.clusters[side.cluster])
                    log.add_rows("max_rate.csv", [searches.max_rate_row(
                        log.run_id, side, cell, try_no, result, config.ceiling)])
                    self.progress.note(f"{side.arch} {side.label} {cell.base_id} try {try_no}: "
                                       f"max sustainable rate {result.kept:,.0f} records/s")

    async def search_step(self, clients: Load, side: plan.Side, cell: plan.Cell, try_no: int,
                          step_no: int, rate: float) -> searches.Step:
        wl = self.workload
        search = wl.study(LATENCY_STUDY)
        assert search is not None and wl.duration_s is not None
        cluster = self.clusters[side.cluster]
        log = self.log_for(side, cluster)
        self.session_no += 1
        self.progress.current(f"[{side.arch}] {cell.base_id} search try {try_no} step "
                              f"{step_no}: {rate:,.0f} records/s")
        topic = f"{self.name_prefix}-{self.session_no}"
        try:
            await clients.admin.create_topic(topic, wl.partitions, wl.replication_factor)
            result = await run_session(clients, wl, dataclasses.replace(cell, rate=rate),
                                       "streaming", side.offset_commit, topic, f"{topic}-group")
        except (KafkaError, ConnectionClosed, OSError, TimeoutError) as exc:
            if any(b.process.poll() is not None for b in cluster.brokers):
                raise ClusterDied(f"a {side.arch} broker exited during a rate search") from exc
            step = searches.Step("error")
        else:
            self.timed_s += result.timed_s("streaming")
            step = searches.step_verdict(result, rate, search.search, wl.duration_s)
        log.add_rows("rate_search.csv", [searches.step_row(log.run_id, side, cell, try_no,
                                                           step_no, rate, step)])
        return step

    def fraction_rate(self, s: plan.Session) -> plan.Cell | None:
        """A rate_fractions cell with its side's rate filled in; None when the side's
        searches kept no rate at all (the cell cannot run on it)."""
        assert s.cell.fraction is not None
        maximum = searches.mean_max(self.max_rates.get((s.side.index, s.cell.base_id), []))
        if maximum <= 0:
            return None
        return dataclasses.replace(s.cell, rate=round(maximum * s.cell.fraction, 3))

    # --- sessions --------------------------------------------------------------------------
    def metrics_sampler(self, cluster: ProcessCluster | ExternalCluster, topic: str
                        ) -> MetricsSampler | None:
        """metrics: true: the sampler of every broker's endpoint for a session on ``topic``;
        --metrics-url: the sampler of the external cluster's endpoints."""
        sampling = self.workload.study(QOS)
        interval = sampling.interval_s if sampling is not None else 1.0
        if isinstance(cluster, ExternalCluster):
            urls = cluster.external.metrics
            return MetricsSampler(list(enumerate(urls)), topic, interval) if urls else None
        if sampling is None:
            return None
        # Service processes (ZooKeeper's servers) have no endpoint: node ids -1, -2, ...
        pids = [p.pid for running in cluster.services.values() for p in running.processes()]
        return MetricsSampler([(b.node_id, b.metrics) for b in cluster.brokers if b.metrics],
                              topic, interval,
                              [(-1 - i, pid) for i, pid in enumerate(pids)])

    def could_not_run(self, what: str, cluster: ProcessCluster | ExternalCluster,
                      exc: BaseException) -> None:
        """A session that raised: one error line, the run marked incomplete; a broker that
        exited ends the run (nothing further could be measured on its cluster)."""
        if self.fleet is not None and self.fleet.lost is not None:
            raise self.fleet.lost from exc  # the one line about the host says it all
        self.outcome.incomplete = True
        msg = f"{what}: could not run: {type(exc).__name__}: {exc}"
        self.outcome.errors.append(msg)
        print(f"twinbench: error: {msg}", file=sys.stderr)
        dead = [b.process.name for b in cluster.brokers if b.process.poll() is not None]
        if dead:
            raise ClusterDied(f"{', '.join(dead)} exited; stopping the run") from exc

    async def run_one(self, cluster: ProcessCluster | ExternalCluster, clients: Load,
                      s: plan.Session) -> None:
        if s.cell.fraction is not None:
            cell = self.fraction_rate(s)
            if cell is None:
                print(f"twinbench: warning: {s.side.arch} {s.cell.cell_id} try {s.try_no}: "
                      "skipped: the rate search kept no rate on this side", file=sys.stderr)
                self.progress.advance()
                return
            s = dataclasses.replace(s, cell=cell)
        log = self.log_for(s.side, cluster)
        self.session_no += 1
        arch = s.side.arch
        tags = [arch] if len(self.arches) > 1 else []
        tags += [s.side.label] if s.side.label else []
        side = f"[{' '.join(tags)}] " if tags else ""
        what = getattr(s.case, "name", s.scenario) if s.case is not None else s.scenario
        self.progress.current(f"{side}{s.cell.cell_id} {what} try {s.try_no}")
        topic = f"{self.name_prefix}-{self.session_no}"
        if s.case is not None:
            assert self.kind is not None  # only a session kind plans sessions with a case
            await self.kind.run(self, cluster, clients, s, log, topic)
            self.progress.advance()
            return
        sampler = self.metrics_sampler(cluster, topic)
        try:
            if s.cell.rtt_ms is not None and isinstance(cluster, ProcessCluster):
                await asyncio.to_thread(cluster.set_rtt, s.cell.rtt_ms)
            await clients.admin.create_topic(topic, self.workload.partitions,
                                              self.workload.replication_factor)
            before = _read(cluster)
            if sampler is not None:
                await sampler.start()
            # With hosts the run's processes are elsewhere (or, on test hosts, here but not all
            # counted): this machine's background load is not measured.
            mark = self.background.start() if self.fleet is None else None
            if s.side.client == kafka_perf.NAME:
                transcript = log.path / "kafka-perf.log"
                with transcript.open("a") as f:
                    f.write(f"# {s.cell.cell_id} {s.scenario} try {s.try_no}\n")
                result = await kafka_perf.run_session(
                    cluster.bootstrap, self.workload, s.cell, s.scenario,
                    s.side.offset_commit, topic, f"{topic}-group", transcript)
            else:
                result = await run_session(clients, self.workload, s.cell, s.scenario,
                                           s.side.offset_commit, topic, f"{topic}-group")
            load = self.background.stop(mark) if mark is not None else (None, None)
            if sampler is not None:
                await sampler.stop()
            after = _read(cluster)
        except (KafkaError, ConnectionClosed, OSError, TimeoutError) as exc:
            if sampler is not None:
                await sampler.cancel()
            self.could_not_run(f"{s.cell.cell_id} {s.scenario} try {s.try_no}", cluster, exc)
            self.progress.advance()
            return
        self.timed_s += result.timed_s(s.scenario)
        run_id = log.run_id
        rec = rows.record_rows(run_id, arch, s, result)
        change = _change(cluster, before, after, sampler)
        coord = rows.coordination_row(run_id, arch, s, result, change, load)
        log.add_records(rec)
        log.add_coordination(coord)
        log.add_rows("counters.csv", rows.counter_rows(run_id, arch, s, change))
        log.add_latency(rows.latency_entries(run_id, s, result))
        log.add_rows("series.csv", rows.series_rows(run_id, arch, s, result))
        if sampler is not None:
            log.add_rows("metrics.csv", sampler.rows(rows.session_keys(run_id, arch, s)))
            if sampler.failures:
                print(f"twinbench: warning: {s.cell.cell_id} {s.scenario} try {s.try_no}: "
                      f"{sampler.failures} metrics scrapes got no answer", file=sys.stderr)
        self.summarise(s.side, rec, coord)
        ol = result.open_loop
        if ol is not None and ol.behind:
            # The row is marked (behind=True); say it where the user is looking too.
            print(f"twinbench: warning: {s.cell.cell_id} {s.scenario} try {s.try_no}: the "
                  f"producers fell behind their schedule ({ol.achieved_rate:,.0f} of "
                  f"{ol.target_rate:,.0f} records/s); the row is marked behind",
                  file=sys.stderr)
        if result.failed:
            r = result.report
            msg = (f"DATA LOSS in {s.cell.cell_id} {s.scenario} try {s.try_no}: lost={r.lost} "
                   f"out_of_order={r.out_of_order} corrupt_batches={r.corrupt_batches} "
                   f"(expected {r.expected}, delivered {r.records})")
            if result.timed_out:
                msg += (f"; a consumer gave up after consumer_timeout_s="
                        f"{self.workload.consumer_timeout_s:g}")
            self.data_lost(s, log, s.cell.cell_id, msg)
        self.progress.advance()

    # --- what a session kind asks of the run (harness/driver/kinds.py, RunState) ----------
    def add_timed(self, seconds: float) -> None:
        self.timed_s += seconds

    def note(self, text: str) -> None:
        self.progress.note(text)

    def session_error(self, message: str) -> None:
        self.outcome.incomplete = True
        self.outcome.errors.append(message)
        print(f"twinbench: error: {message}", file=sys.stderr)

    def data_lost(self, session: plan.Session, log: runlog.RunLog, shown: str, message: str
                  ) -> None:
        log.mark_failed(session.cell.cell_id)
        # Keyed like the progress line: the side's label, with its architecture first when
        # the run covers several.
        tags = [session.side.arch] if len(self.arches) > 1 else []
        tags += [session.side.label] if session.side.label else []
        failed = self.outcome.failed_cells.setdefault(" ".join(tags), [])
        if shown not in failed:
            failed.append(shown)
        print(f"twinbench: FAILED: {message}", file=sys.stderr)

    def summarise(self, side: plan.Side, records: list[dict[str, Any]],
                  coordination: dict[str, Any] | None) -> None:
        self.records[side.index].extend(records)
        if coordination is not None:
            self.coordination[side.index].append(coordination)

    def our_cpu(self) -> dict[str, float]:
        """CPU seconds so far of every process of the run: this one (the load client) and
        every broker and ZooKeeper of every cluster it holds (for ``background_cpu``)."""
        t = os.times()
        out = {"driver": t.user + t.system}
        for arch, c in self.clusters.items():
            if isinstance(c, ProcessCluster):
                out |= {f"{arch}/{k}": v for k, v in c.cpu_seconds().items()}
                if c.delay is not None:
                    out[f"{arch}/delay:{c.delay.pid}"] = process_cpu_seconds(c.delay.pid)
        return out

    # --- the end ---------------------------------------------------------------------------
    def died(self, exc: BaseException) -> None:
        """The run cannot go on (a cluster process exited, a host vanished): one line."""
        self.outcome.incomplete = True
        self.outcome.errors.append(str(exc))
        print(f"twinbench: error: {exc}", file=sys.stderr)

    def finish(self) -> None:
        for log in self.logs.values():
            log.finish(incomplete=self.outcome.incomplete or self.outcome.interrupted,
                       background=self.background.summary())
        if self.progress.enabled:
            for side in self.sides:
                if self.records[side.index]:
                    title = f"{side.arch} {self.workload.name}" + (
                        f" [{side.label}]" if side.label else "")
                    self.console.print(summary_table(title, self.records[side.index],
                                                     self.coordination[side.index]))


def _read(cluster: ProcessCluster | ExternalCluster) -> counters.Reading | None:
    """The counters of a cluster the run started; None for an external one."""
    return counters.read(cluster) if isinstance(cluster, ProcessCluster) else None


def _change(cluster: ProcessCluster | ExternalCluster, before: counters.Reading | None,
            after: counters.Reading | None, sampler: MetricsSampler | None = None
            ) -> counters.Delta:
    if isinstance(cluster, ExternalCluster):
        if sampler is None:
            return counters.unmeasured()
        # --metrics-url: what its endpoints serve under the architectures' names.
        return counters.scraped(sampler.samples, scrapeable_columns())
    if before is None or after is None:
        return counters.unmeasured()
    return counters.delta(cluster.spec.architecture, before, after)


def merge_options(*layers: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Options blocks by name, a later layer's keys over an earlier's (the command line's over
    the workload's)."""
    out: dict[str, dict[str, Any]] = {}
    for layer in layers:
        for name, block in layer.items():
            out[name] = {**out.get(name, {}), **block}
    return out


def _rtts(wl: Workload) -> tuple[float, ...]:
    """The round-trip times a workload sweeps (none without the rtt study)."""
    return wl.study(RTT) or ()


def scrapeable_columns() -> dict[str, tuple[str, ...]]:
    """coordination.csv's generic columns -> the coordinator counters every architecture
    names for them (what a --metrics-url endpoint may serve)."""
    out: dict[str, tuple[str, ...]] = {"coord_messages": (), "coord_bytes": ()}
    for a in architectures.entries():
        for column, name in (("coord_messages", a.coordination.messages),
                             ("coord_bytes", a.coordination.bytes)):
            # A sum over sources (``a:x+b:y``) needs what an endpoint alone cannot serve.
            if name is not None and name.startswith("coordinator:") and "+" not in name:
                out[column] += (name,)
    return out


def _check_hosts(wl: Workload) -> None:
    """What a run on hosts does not do (yet): one line each."""
    if wl.network != "loopback":
        raise UserError(f"workload {wl.name}: network: {wl.network} applies to a cluster on "
                        "this machine; with --hosts every process has its host's address")
    _refuse(wl, lambda entry: entry.refuse_hosts)


# warmup_until_steady (harness/architectures/entry.py): two warm-up sessions in a row within
# this fraction of each other's records/s, or this many sessions at most.
STEADY_TOLERANCE = 0.10
STEADY_MAX_SESSIONS = 20


def _steady(rates: list[float]) -> bool:
    """Whether warm-up may stop: the last two sessions agree, or the cap is reached."""
    if len(rates) >= STEADY_MAX_SESSIONS:
        return True
    if len(rates) < 2 or max(rates[-2:]) <= 0:
        return False
    a, b = rates[-2:]
    return abs(a - b) <= STEADY_TOLERANCE * max(a, b)


def _check_policies(wl: Workload, arches: tuple[str, ...]) -> None:
    """Every architecture of the run applies at least one of the workload's metadata_check
    policies (real Kafka applies cached alone: it is measured in those cells only)."""
    for arch in arches:
        applies = architectures.get(arch).metadata_checks
        if not set(wl.metadata_check) & set(applies):
            asked = ", ".join(wl.metadata_check)
            raise UserError(
                f"workload {wl.name}: metadata_check: {asked} has no equivalent on {arch} (it "
                f"applies {architectures.choice(applies)} only); sweep [{asked}, "
                f"{applies[0]}] to measure it in those cells beside the others")


def _check_external(wl: Workload) -> None:
    """What a cluster twinbench did not start cannot do (harness/cluster/external.py)."""
    if wl.restart != "never":
        raise UserError(f"workload {wl.name}: restart: {wl.restart} needs a cluster twinbench "
                        "starts; not --bootstrap")
    if len(wl.metadata_check) > 1:
        raise UserError(f"workload {wl.name}: metadata_check is a setting of the twins' "
                        "brokers; an external cluster cannot sweep it")
    _refuse(wl, lambda entry: entry.refuse_external)


def _refuse(wl: Workload, why: Callable[[Any], Callable[[Any], str | None]]) -> None:
    """The first of the workload's studies that refuses the run, as one line."""
    for entry in studies.entries():
        config = wl.study(entry)
        if config is not None and (reason := why(entry)(config)) is not None:
            raise UserError(f"workload {wl.name}: {reason}")


def broker_settings(wl: Workload) -> tuple[str, ...]:
    """Command-line settings of every broker the workload gives: a metadata workload's limits
    (what its cases were checked against when the file was loaded), min.insync.replicas."""
    args: tuple[str, ...] = ()
    if wl.min_insync_replicas is not None:
        args += ("--min-insync-replicas", str(wl.min_insync_replicas))
    for entry in studies.entries():
        config = wl.study(entry)
        if config is not None:
            args += entry.broker_args(config)
    return args


def run(opts: RunOptions) -> RunOutcome:
    """Run the workload; always stops every process it started. Never raises for Ctrl-C."""
    with conditions.tuning(opts.tune) as tuned:
        return _run(opts, tuned)


def _run(opts: RunOptions, tuned: dict[str, str]) -> RunOutcome:
    state = _Run(opts)
    state.tuned = tuned
    # Before any cluster starts: measuring the client's ceiling needs the machine to itself.
    state.resolve_client_ceiling()
    t0 = time.monotonic()
    completed = False
    try:
        state.open_fleet()
        with state.progress:
            run_async(state.main())
        completed = True
    except (KeyboardInterrupt, asyncio.CancelledError):
        lost = state.fleet.lost if state.fleet is not None else None
        if lost is None:
            state.outcome.interrupted = True
            print("twinbench: interrupted; stopping the cluster, partial results kept "
                  "(manifest marked incomplete)", file=sys.stderr)
        else:
            state.died(lost)
    except (ClusterDied, HostLost) as exc:
        state.died(exc)
    finally:
        if not completed:
            # Whatever ended the run early (including a bug or a UserError on its way to the
            # CLI), the run logs must not claim to be complete.
            state.outcome.incomplete = True
        # A second Ctrl-C during clean-up must not leave processes behind.
        with _sigint_ignored():
            state.stop_clusters()
            state.remove_security_files()
            state.finish()
            if state.fleet is not None:
                state.fleet.close()
    elapsed = time.monotonic() - t0
    for path in state.outcome.run_dirs:
        print(path)
    if state.progress.enabled:
        state.console.print(
            f"{state.total} sessions planned, {elapsed:.1f} s: {state.timed_s:.1f} s measured, "
            f"{elapsed - state.timed_s:.1f} s harness overhead")
    if any(state.outcome.failed_cells.values()):
        cells = "; ".join(f"{label or opts.arch}: {', '.join(c)}"
                          for label, c in state.outcome.failed_cells.items())
        print(f"twinbench: FAILED: data was lost or reordered in {cells}", file=sys.stderr)
    return state.outcome


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
