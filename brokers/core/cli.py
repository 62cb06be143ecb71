"""Command-line plumbing shared by every broker entry point.

`twinbench broker`, ``python -m brokers.zk_broker`` and ``python -m brokers.dsbs_broker`` take
the same core options (listeners and their TLS/SASL settings, data directory, flush policy,
metadata check, storage, and the limits named after Kafka's settings) and differ only in how
they build their Coordinator. User mistakes print one line ``<prog>: error: ...`` and exit 2; a
broker that halts because its data directory failed (at start-up or later) prints one such line
and exits 1.

The data directory is locked before the coordinator is built: its local state lives there too.
"""

from __future__ import annotations

import argparse
import resource
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from brokers.core.config import (
    BrokerConfig,
    FlushMode,
    FlushPolicy,
    ListenerConfig,
    SecurityConfig,
    StorageConfig,
)
from brokers.core.coordinator import Coordinator
from brokers.core.datadir import DataDir
from brokers.core.errors import BrokerHalted, KafkaStorageError, UserError
from brokers.core.local_coordinator import LocalCoordinator
from brokers.core.replication.config import ReplicationConfig
from brokers.core.security.listeners import Listener, SecurityProtocol

CoordinatorFactory = Callable[[argparse.Namespace, BrokerConfig, DataDir], Coordinator]

# Descriptors beyond connections and segment files: listening socket, event loop, the lock,
# state files, index files being written, coordinator sockets, gossip, standard streams.
FD_RESERVE = 128


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument as a UserError (one line) instead of usage text."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{message} (see '{self.prog} --help')")


def parse_hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _flush_policy(text: str) -> FlushPolicy:
    try:
        return FlushPolicy.parse(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_broker_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--listen", type=parse_hostport, default=None,
                        metavar="HOST:PORT", help="address to accept Kafka clients on, "
                        "PLAINTEXT (default 127.0.0.1:9092; port 0: any free port; the chosen "
                        "one is printed as listening=HOST:PORT)")
    parser.add_argument("--listener", type=_listener, action="append", default=None,
                        metavar="PROTOCOL://HOST:PORT",
                        help="a listener, PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (Kafka's "
                        "listeners); repeatable, instead of --listen. The first is the one "
                        "Metadata names; each is printed as listener=PROTOCOL://HOST:PORT")
    parser.add_argument("--data-dir", type=_path, required=True, metavar="DIR",
                        help="directory for partition logs and local state")
    parser.add_argument("--flush", type=_flush_policy, default="os",
                        metavar="every_batch|interval_ms:N|os",
                        help="when appended data is fsynced (default: os)")
    parser.add_argument("--node-id", type=int, default=0, help="broker id (default 0)")
    parser.add_argument("--storage", choices=("segment", "null"), default="segment",
                        help="'null' acknowledges without storing (the perf baseline)")
    parser.add_argument("--metadata-check", choices=("cached", "per_request"), default="cached",
                        help="consult the coordination store on every produce/fetch, or not")
    parser.add_argument("--advertised-host", default=None,
                        help="host clients are told to connect to (default: the listen host)")
    parser.add_argument("--num-partitions", type=int, default=BrokerConfig.default_partitions,
                        metavar="N", help="partitions of an auto-created topic, and of a "
                        "CreateTopics asking for -1 (num.partitions; default %(default)s)")
    parser.add_argument("--auto-create-topics", action=argparse.BooleanOptionalAction,
                        default=BrokerConfig.auto_create_topics,
                        help="create a topic a client names in Metadata when the client allows "
                        "it (auto.create.topics.enable; default on)")
    parser.add_argument("--metrics", type=parse_hostport, default=None, metavar="HOST:PORT",
                        help="serve Prometheus metrics at http://HOST:PORT/metrics (port 0: any "
                        "free port, printed as metrics=HOST:PORT); off by default")
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    sec, dc = parser.add_argument_group(
        "security", "TLS and SASL listeners (Kafka's ssl.* and sasl.* settings)"), SecurityConfig
    sec.add_argument("--ssl-certfile", type=_path, metavar="PEM",
                     help="certificate chain SSL and SASL_SSL listeners present")
    sec.add_argument("--ssl-keyfile", type=_path, metavar="PEM", help="its private key")
    sec.add_argument("--ssl-cafile", type=_path, metavar="PEM",
                     help="require client certificates signed by this CA (ssl.client.auth="
                     "required; default: none asked)")
    sec.add_argument("--ssl-truststore", type=_path, metavar="PEM",
                     help="CA this broker trusts when it fetches from another broker's TLS "
                     "listener (replication; ssl.truststore.location; default: the system's)")
    sec.add_argument("--sasl-mechanisms", type=_mechanisms, default=dc.sasl_mechanisms,
                     metavar="M[,M...]", help="mechanisms SASL listeners offer "
                     "(sasl.enabled.mechanisms; default "
                     f"{','.join(dc.sasl_mechanisms)})")
    sec.add_argument("--sasl-credentials-file", type=_path, metavar="FILE",
                     help="user=password per line, mode 0600: the users SASL listeners accept "
                     "with every mechanism")
    limits = parser.add_argument_group(
        "limits", "what clients may hold of the broker (Kafka's setting names where it has one)")
    lc, bc, sc = ListenerConfig, BrokerConfig, StorageConfig
    limits.add_argument("--max-connections", type=int, default=lc.max_connections, metavar="N",
                        help="client connections open at once; more are closed on accept "
                        "(max.connections; default %(default)s)")
    limits.add_argument("--max-connections-per-ip", type=int, metavar="N",
                        default=lc.max_connections_per_ip,
                        help="client connections open at once from one address "
                        "(max.connections.per.ip; default %(default)s)")
    limits.add_argument("--connections-max-idle-ms", type=int, metavar="MS",
                        default=lc.connections_max_idle_ms,
                        help="close a connection idle this long (connections.max.idle.ms; "
                        "default %(default)s)")
    limits.add_argument("--queued-max-request-bytes", type=int, metavar="BYTES",
                        default=lc.queued_max_request_bytes,
                        help="per connection: unanswered request bytes plus unsent answer "
                        "bytes before the broker stops reading from it "
                        "(queued.max.request.bytes; default %(default)s)")
    limits.add_argument("--request-memory-bytes", type=int, metavar="BYTES",
                        default=lc.request_memory_bytes,
                        help="broker-wide: request bytes held for all connections, unfinished "
                        "frames included; at the limit large holders stop being read, past "
                        "9/8 of it the largest is closed (default %(default)s)")
    limits.add_argument("--max-partitions-per-topic", type=int, metavar="N",
                        default=bc.max_partitions_per_topic,
                        help="more is INVALID_PARTITIONS (default %(default)s)")
    limits.add_argument("--max-topics", type=int, metavar="N", default=bc.max_topics,
                        help="topics in the cluster; one more is POLICY_VIOLATION "
                        "(default %(default)s)")
    limits.add_argument("--group-max-size", type=int, metavar="N", default=bc.group_max_size,
                        help="members plus pending member ids per consumer group "
                        "(group.max.size; default %(default)s)")
    limits.add_argument("--max-open-segments", type=int, metavar="N",
                        default=sc.max_open_segments,
                        help="segment files open at once; the least recently used is closed "
                        "and reopened on use (default %(default)s)")
    rc = ReplicationConfig()
    repl = parser.add_argument_group("replication (partitions with more than one replica)")
    repl.add_argument("--min-insync-replicas", type=int, metavar="N",
                      default=rc.min_insync_replicas,
                      help="in-sync replicas acks=all needs when a topic sets none "
                      "(min.insync.replicas; default %(default)s)")
    repl.add_argument("--replica-lag-time-max-ms", type=int, metavar="MS",
                      default=rc.replica_lag_time_max_ms,
                      help="a follower not caught up for this long leaves the ISR "
                      "(replica.lag.time.max.ms; default %(default)s)")


def _listener(text: str) -> Listener:
    try:
        return Listener.parse(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _mechanisms(text: str) -> tuple[str, ...]:
    return tuple(m.strip().upper() for m in text.split(",") if m.strip())


def _listeners(args: argparse.Namespace) -> tuple[Listener, ...]:
    if args.listener and args.listen:
        raise UserError("give --listener or --listen, not both")
    if args.listener:
        return tuple(args.listener)
    host, port = args.listen or ("127.0.0.1", 9092)
    return (Listener(SecurityProtocol.PLAINTEXT, host, port),)


def _path(text: str):
    from pathlib import Path

    return Path(text)


def config_from_args(args: argparse.Namespace) -> BrokerConfig:
    first, *extra = _listeners(args)
    try:
        args.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot use data directory {args.data_dir}: {exc.strerror}") from None
    return BrokerConfig(
        node_id=args.node_id, host=first.host, port=first.port, data_dir=args.data_dir,
        protocol=first.protocol, extra_listeners=tuple(extra), metrics=args.metrics,
        security=SecurityConfig(
            ssl_certfile=args.ssl_certfile, ssl_keyfile=args.ssl_keyfile,
            ssl_cafile=args.ssl_cafile, ssl_truststore=args.ssl_truststore,
            sasl_mechanisms=args.sasl_mechanisms,
            sasl_credentials_file=args.sasl_credentials_file),
        storage=StorageConfig(flush=args.flush, max_open_segments=args.max_open_segments),
        metadata_check=args.metadata_check, advertised_host=args.advertised_host,
        max_partitions_per_topic=args.max_partitions_per_topic, max_topics=args.max_topics,
        group_max_size=args.group_max_size, default_partitions=args.num_partitions,
        auto_create_topics=args.auto_create_topics,
        replication=ReplicationConfig(
            min_insync_replicas=args.min_insync_replicas,
            replica_lag_time_max_ms=args.replica_lag_time_max_ms,
        ),
        listener=ListenerConfig(
            max_connections=args.max_connections,
            max_connections_per_ip=args.max_connections_per_ip,
            connections_max_idle_ms=args.connections_max_idle_ms,
            queued_max_request_bytes=args.queued_max_request_bytes,
            request_memory_bytes=args.request_memory_bytes,
        ),
    )


def reserve_descriptors(config: BrokerConfig) -> int:
    """Make sure the process may open what the limits allow; returns the soft limit now set.

    Connections and segment files are bounded, so their sum plus a reserve is what the broker
    can ever hold. The soft RLIMIT_NOFILE is raised to that when the hard limit allows; when it
    does not, the limits cannot be honoured and starting would only fail later, under load.
    """
    need = config.listener.max_connections + config.storage.max_open_segments + FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and need > hard:
        raise UserError(
            f"--max-connections {config.listener.max_connections} + --max-open-segments "
            f"{config.storage.max_open_segments} + {FD_RESERVE} reserved need {need} file "
            f"descriptors, but this process may open {hard} (ulimit -Hn); lower the limits "
            f"or raise the ulimit")
    if soft != resource.RLIM_INFINITY and soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        return need
    return soft


def serve(args: argparse.Namespace, make_coordinator: CoordinatorFactory) -> int:
    """Run one broker in the foreground with the coordinator the factory builds."""
    from brokers.core.broker import Broker, configure_logging, run_broker
    from brokers.core.logs import NullLogStore

    configure_logging(args.log_level)
    config = config_from_args(args)
    reserve_descriptors(config)
    # Locked before the coordinator exists: it may rewrite its state files when built.
    datadir = DataDir(config.data_dir).lock()
    try:
        def make() -> Broker:
            store = NullLogStore() if args.storage == "null" else None
            return Broker(config, make_coordinator(args, config, datadir), store, datadir)

        return run_broker(make)
    finally:
        datadir.unlock()


def single_node(args: argparse.Namespace, config: BrokerConfig, datadir: DataDir) -> Coordinator:
    """The single-node coordinator of ``python -m brokers.core`` and `twinbench broker`."""
    # Offset commits are as durable as the log: fsynced before the ack under every_batch.
    return LocalCoordinator(config.node_id, config.data_dir / "coordinator", datadir=datadir,
                            fsync_offsets=config.storage.flush.mode is FlushMode.EVERY_BATCH)


def run_main(prog: str, parser: argparse.ArgumentParser, argv: Sequence[str] | None,
             make_coordinator: CoordinatorFactory) -> int:
    """Parse, serve, and turn user errors into one line and exit code 2."""
    try:
        return serve(parser.parse_args(argv), make_coordinator)
    except (UserError, OSError) as exc:
        # OSError here is the environment (port in use, permissions, disk full), not a bug.
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except (BrokerHalted, KafkaStorageError) as exc:
        # The data directory failed, at start-up (recovery, state files) or while serving.
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
