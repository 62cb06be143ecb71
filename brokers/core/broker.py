"""The broker application: storage + coordinator + dispatcher + server, and their timers.

``Broker`` wires the pieces and owns the background duties (fsync on the ``interval_ms`` flush
policy, retention, group session expiry). ``run_broker`` is the process entry point shared by
`twinbench broker`, ``python -m brokers.zk_broker`` and ``python -m brokers.dsbs_broker``: it
starts the broker, prints ``listener=PROTOCOL://HOST:PORT`` per listener and then
``listening=HOST:PORT`` (the first listener) once connections are accepted, and shuts down
cleanly (data flushed, exit 0) on SIGINT/SIGTERM. When the data directory fails (a write,
fsync or read error: ``DataDir``), the broker stops by itself and ``run_broker`` raises
``BrokerHalted``, which the CLI prints as one line (exit 1).

Counters from outside, without a server: on SIGUSR1 the broker writes
``<data_dir>/counters.json`` (atomically: temp file + rename) holding ``node_id``,
``written_unix_ns``, ``coordinator`` (``Coordinator.counters()``: zk requests, gossip packets...)
and ``broker`` (this process's CPU seconds, open connections, uptime), both written by the
counters contract (brokers/core/counters.py). The workload driver signals every broker before
and after each try and subtracts (harness/driver/counters.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import ssl
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from brokers.core import fsyncs
from brokers.core.allocator import pin_mmap_threshold
from brokers.core.atomic_file import replace_file
from brokers.core.config import BrokerConfig, FlushMode
from brokers.core.coordinator import BrokerInfo, ClusterView, Coordinator, TopicPartition
from brokers.core.counters import BrokerCounters
from brokers.core.datadir import DataDir
from brokers.core.errors import BrokerHalted, KafkaStorageError
from brokers.core.groups import GroupConfig, GroupCoordinator
from brokers.core.handlers import BrokerContext, RequestDispatcher
from brokers.core.logs import LogStore
from brokers.core.notify import AppendNotifier
from brokers.core.protocol.consumer_protocol import ConsumerProtocolAssignment
from brokers.core.replication.fetcher import Fetchers
from brokers.core.replication.manager import ReplicaManager
from brokers.core.security.connection import SaslGate
from brokers.core.security.listeners import Listener
from brokers.core.server import Dispatcher, KafkaServer
from brokers.core.storage import LogManager
from brokers.core.topic_config import produce_rules_by_topic
from brokers.core.transactions.coordinator import TransactionCoordinator, TransactionStore
from brokers.core.transactions.sender import BrokerConnections

if TYPE_CHECKING:  # imported when --metrics asks for them (prometheus-client)
    from brokers.core.metrics import MetricsExporter

log = logging.getLogger("twinbench.broker")

GROUP_TICK_S = 0.1  # session expiry and rebalance deadlines are checked this often
# Transaction timeouts are checked, and prepared transactions resumed, this often (Kafka checks
# timeouts every 10 s by default; a second keeps a timed-out transaction from holding the
# last stable offset back much longer than its own timeout).
TXN_TICK_S = 1.0


def parse_consumer_assignment(data: bytes) -> list[TopicPartition]:
    """Partitions named in a "consumer" protocol assignment (for the ownership registry)."""
    if not data:
        return []
    assignment = ConsumerProtocolAssignment.decode(data)
    return [TopicPartition(t.topic, p) for t in assignment.assigned_partitions
            for p in t.partitions]


class Broker:
    def __init__(
        self, config: BrokerConfig, coordinator: Coordinator, store: LogStore | None = None,
        datadir: DataDir | None = None,
    ) -> None:
        self.config = config
        self.coordinator = coordinator
        # The entry points pass the data directory they locked; without one, the log manager
        # locks its own directory.
        self.store: LogStore = store or LogManager(
            config.data_dir / "logs", config.storage, datadir)
        # Why the broker halted (its data directory failed); None while healthy.
        self.failure: str | None = None
        self._on_halt: Callable[[], None] | None = None
        self.store.on_failure(self._storage_failed)
        if datadir is not None:
            datadir.on_failure(self._storage_failed)
        self.groups = GroupCoordinator(
            coordinator,
            GroupConfig(
                min_session_timeout_ms=config.group_min_session_timeout_ms,
                max_session_timeout_ms=config.group_max_session_timeout_ms,
                initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                max_size=config.group_max_size,
            ),
            parse_assignment=parse_consumer_assignment,
        )
        self.notifier = AppendNotifier()
        self.context = BrokerContext(config, coordinator, self.store, self.groups, self.notifier)
        self.replicas = ReplicaManager(
            config.node_id, config.replication, coordinator, self.store, self.notifier,
            self.context.producers.forget)
        self.context.replicas = self.replicas
        self.fetchers = Fetchers(self.replicas, coordinator, self.store)
        # Transactions, where the architecture keeps their records (brokers/core/transactions).
        self.txn_connections = BrokerConnections()
        if isinstance(coordinator, TransactionStore):
            self.context.txn = TransactionCoordinator(coordinator, coordinator,
                                                      self.txn_connections)
        self.replicas.on_following_changed = self.fetchers.refresh
        self.requests = RequestDispatcher(self.context)
        dispatcher: Dispatcher = self.requests
        self.metrics: MetricsExporter | None = None
        if config.metrics is not None:
            from brokers.core.metrics import MetricsExporter
            from brokers.core.request_meter import MeteredDispatcher

            meter = MeteredDispatcher(dispatcher)
            dispatcher = meter
            self.metrics = MetricsExporter(meter, self.counters, coordinator.counters,
                                           lambda: self.server.in_flight(), config.data_dir,
                                           queued=lambda: self.server.queued())
            self.requests.observer = self.metrics.responses.observe
        self.server = KafkaServer(dispatcher, config.max_frame_bytes, config.listener)
        # Where the metrics endpoint listens, once started.
        self.metrics_address: tuple[str, int] | None = None
        self.address: tuple[str, int] | None = None
        # Every listener as bound (port 0 replaced by the port chosen), the first registered.
        self.bound: list[Listener] = []
        self._sasl: SaslGate | None = None
        self._tls: ssl.SSLContext | None = None
        self._prepare_security()
        self._timers: list[asyncio.Task[None]] = []
        self._started_monotonic = time.monotonic()

    def _prepare_security(self) -> None:
        """TLS context and SASL credentials, only when a listener needs them (read once, so
        a bad file stops the broker before it listens)."""
        listeners, sec = self.config.listeners, self.config.security
        if any(lst.protocol.tls for lst in listeners):
            from brokers.core.security.tls import server_context

            assert sec.ssl_certfile is not None and sec.ssl_keyfile is not None  # config checked
            self._tls = server_context(sec.ssl_certfile, sec.ssl_keyfile, sec.ssl_cafile)
        if any(lst.protocol.sasl for lst in listeners):
            from brokers.core.security.credentials import load_credentials
            from brokers.core.security.mechanisms import MechanismRegistry

            assert sec.sasl_credentials_file is not None  # config checked
            credentials = load_credentials(sec.sasl_credentials_file, sec.sasl_mechanisms)
            self._sasl = SaslGate(MechanismRegistry(sec.sasl_mechanisms, credentials))
        first = listeners[0].protocol
        if first.tls or first.sasl:
            # Followers fetch from a leader's registered (first) listener: they speak its
            # protocol, trusting --ssl-truststore and logging in as the credentials file's
            # first user (Kafka's inter-broker settings, one listener for both).
            from brokers.core.security.client import ClientSecurity

            user, password = ("", "")
            if first.sasl:
                user, password = next(iter(credentials.passwords.items()))
            self.fetchers.security = ClientSecurity(first, sec.ssl_truststore,
                                                    sec.sasl_mechanisms[0], user, password)
            self.txn_connections.security = self.fetchers.security

    async def _listen(self, listener: Listener) -> Listener:
        protocol = listener.protocol
        gate = self._sasl if protocol.sasl else None
        host, port = await self.server.start(
            listener.host, listener.port, self._tls if protocol.tls else None,
            gate.connection if gate is not None else None)
        return Listener(protocol, host, port)

    async def start(self) -> tuple[str, int]:
        recovered = self.store.load_existing()
        if recovered:
            log.info("recovered %d partition logs", len(recovered))
        try:
            for listener in self.config.listeners:
                self.bound.append(await self._listen(listener))
        except BaseException:
            await self.server.stop()
            raise
        host, port = self.bound[0].host, self.bound[0].port
        self.address = (host, port)
        me = BrokerInfo(self.config.node_id, self.config.advertised_host or host, port)
        # Before start(): a coordinator may learn of deletions while it loads its state.
        self.coordinator.on_topic_deleted(self._topic_deleted)
        try:
            await self.coordinator.start(me)
        except BaseException:
            await self.server.stop()
            raise
        self.coordinator.subscribe(lambda _view: self.notifier.wake_all())
        # Topic configs reach the logs (retention, segment size) and the produce path (a
        # compacted topic's key check, max.message.bytes) with every view change.
        self.coordinator.subscribe(self._apply_topic_configs)
        self._apply_topic_configs(self.coordinator.cluster())
        # Leaders, followers and ISRs of replicated partitions follow the view too.
        self.coordinator.subscribe(self.replicas.apply_view)
        self.replicas.apply_view(self.coordinator.cluster())
        storage = self.config.storage
        if storage.flush.mode is FlushMode.INTERVAL_MS:
            self._every(storage.flush.interval_ms / 1000, self._flush)
        # Always: any topic may carry its own retention.ms / retention.bytes.
        self._every(storage.retention_check_interval_ms / 1000, self._retention)
        self._every(GROUP_TICK_S, self._group_tick)
        if self.context.txn is not None:
            self._every(TXN_TICK_S, self.context.txn.tick)
        if self.metrics is not None and self.config.metrics is not None:
            self.metrics_address = self.metrics.start(*self.config.metrics)
        return host, port

    def _apply_topic_configs(self, view: ClusterView) -> None:
        configs = {name: t.configs for name, t in view.topics.items()}
        self.store.configure_topics(configs)
        self.context.topic_rules = produce_rules_by_topic(configs)

    def _topic_deleted(self, topic: str) -> None:
        """A deletion event: the topic's logs and idempotence tables go; fetches waiting on
        it wake up and find it gone."""
        try:
            self.store.delete_topic(topic)
        except KafkaStorageError:
            log.exception("deleting the logs of topic %r failed", topic)
        self.context.producers.forget_topic(topic)
        if self.metrics is not None:
            self.metrics.responses.forget_topic(topic)
        self.notifier.wake_all()

    def _storage_failed(self, reason: str) -> None:
        if self.failure is not None:
            return
        self.failure = reason
        if self._on_halt is not None:
            self._on_halt()

    def on_halt(self, callback: Callable[[], None]) -> None:
        """``callback()`` when the broker must stop by itself (its data directory failed)."""
        self._on_halt = callback
        if self.failure is not None:
            callback()

    def _every(self, period_s: float, duty: Callable[[], Awaitable[None]]) -> None:
        async def loop() -> None:
            while True:
                await asyncio.sleep(period_s)
                try:
                    await duty()
                except KafkaStorageError:
                    if self.failure is not None:
                        return  # the data directory is offline and the broker is halting
                    log.exception("periodic duty %s failed", duty.__name__)
                except Exception:
                    # A failing duty must not silently stop: log and try again next period.
                    log.exception("periodic duty %s failed", duty.__name__)

        self._timers.append(asyncio.get_running_loop().create_task(loop()))

    async def _flush(self) -> None:
        self.store.flush_dirty()

    async def _retention(self) -> None:
        deleted = self.store.enforce_retention(int(time.time() * 1000))
        if deleted:
            log.info("retention deleted %d segments", deleted)

    async def _group_tick(self) -> None:
        self.groups.tick()

    def counters(self) -> BrokerCounters:
        """Broker-level counters (the coordinator has its own): CPU, connections, uptime, Kafka
        requests by API, fsyncs."""
        t = os.times()
        return BrokerCounters(
            cpu_user_s=t.user,
            cpu_system_s=t.system,
            connections=float(len(self.server.connections)),
            connections_refused=self.server.refused_total,
            sasl_authentications=0 if self._sasl is None else self._sasl.authentications,
            sasl_authentication_failures=0 if self._sasl is None else self._sasl.failures,
            uptime_s=time.monotonic() - self._started_monotonic,
            kafka_requests=self.requests.requests_by_api(),
            fsyncs=fsyncs.count(),
        )

    def dump_counters(self) -> None:
        """Write ``<data_dir>/counters.json`` atomically (the SIGUSR1 handler)."""
        path = self.config.data_dir / "counters.json"
        try:
            doc = {
                "node_id": self.config.node_id,
                "written_unix_ns": time.time_ns(),
                "coordinator": self.coordinator.counters().to_json(),
                "broker": self.counters().to_json(),
            }
        except KeyError:
            # A count the coordinator keeps that its counter class does not declare (a bug the
            # unit tests catch): no file beats a file that leaves it out.
            log.exception("counters break their contract; %s not written", path)
            return
        try:
            self.config.data_dir.mkdir(parents=True, exist_ok=True)
            # Atomic so the harness never reads half a file; not durable: a snapshot read right
            # after the signal, stale after a crash anyway.
            replace_file(path, json.dumps(doc, sort_keys=True), sync_file=False, sync_dir=False)
        except OSError:
            log.exception("could not write %s", path)

    async def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()
        for timer in self._timers:
            with contextlib.suppress(asyncio.CancelledError):
                await timer
        self._timers.clear()
        if self.metrics is not None:
            self.metrics.stop()
        await self.server.stop()
        if self.context.txn is not None:
            await self.context.txn.close()
        self.txn_connections.close()
        await self.fetchers.close()
        await self.replicas.close()
        self.notifier.wake_all()
        await self.groups.close()
        # A KafkaStorageError while the broker halts is the failure already reported (the data
        # directory went offline): closing goes on, and run_broker says why it stopped.
        try:
            await self.coordinator.close()
        except KafkaStorageError:
            if self.failure is None:
                raise
        finally:
            try:
                self.store.close()
            except KafkaStorageError:
                if self.failure is None:
                    raise


def install_event_loop_policy() -> str:
    """Use uvloop when it is installed (the fastest server shape measured, docs/architecture.md);
    name the loop. Pins the allocator's mmap threshold first (allocator.py: TLS reads)."""
    pin_mmap_threshold()
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a pinned dependency
        return "asyncio"
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return "uvloop"


def run_broker(make_broker: Callable[[], Broker]) -> int:
    """Run a broker in the foreground until SIGINT/SIGTERM; returns the exit code."""
    install_event_loop_policy()

    async def main() -> int:
        broker = make_broker()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        # Installed before "listening=" is printed: SIGUSR1's default action kills a process.
        loop.add_signal_handler(signal.SIGUSR1, broker.dump_counters)
        broker.on_halt(stop.set)
        host, port = await broker.start()
        for listener in broker.bound:
            print(f"listener={listener}", flush=True)
        if broker.metrics_address is not None:
            print("metrics={}:{}".format(*broker.metrics_address), flush=True)
        # Last: the line launchers wait for, naming the registered (first) listener.
        print(f"listening={host}:{port}", flush=True)
        try:
            await stop.wait()
        finally:
            log.info("shutting down")
            await broker.stop()
        if broker.failure is not None:
            raise BrokerHalted(
                f"data directory {broker.config.data_dir} failed ({broker.failure}); "
                f"the broker stopped")
        return 0

    return asyncio.run(main())


def configure_logging(level: str = "INFO") -> None:
    """Log lines go to stderr so stdout carries only the machine-readable lines."""
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
