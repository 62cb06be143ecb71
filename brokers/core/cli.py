"""Command-line plumbing shared by every broker entry point.

`twinbench broker`, ``python -m brokers.zk_broker`` and ``python -m brokers.dsbs_broker`` take
the same core options (listen address, data directory, flush policy, metadata check, storage)
and differ only in how they build their Coordinator. User mistakes print one line
``<prog>: error: ...`` and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from brokers.core.config import BrokerConfig, FlushPolicy, StorageConfig
from brokers.core.coordinator import Coordinator
from brokers.core.errors import UserError

CoordinatorFactory = Callable[[argparse.Namespace, BrokerConfig], Coordinator]


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad argument as a UserError (one line) instead of usage text."""

    def error(self, message: str) -> None:  # type: ignore[override]
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
    parser.add_argument("--listen", type=parse_hostport, default=("127.0.0.1", 9092),
                        metavar="HOST:PORT", help="address to accept Kafka clients on (port 0: "
                        "any free port; the chosen one is printed as listening=HOST:PORT)")
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
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"))


def _path(text: str):
    from pathlib import Path

    return Path(text)


def config_from_args(args: argparse.Namespace) -> BrokerConfig:
    host, port = args.listen
    try:
        args.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot use data directory {args.data_dir}: {exc.strerror}") from None
    return BrokerConfig(
        node_id=args.node_id, host=host, port=port, data_dir=args.data_dir,
        storage=StorageConfig(flush=args.flush), metadata_check=args.metadata_check,
        advertised_host=args.advertised_host,
    )


def serve(args: argparse.Namespace, make_coordinator: CoordinatorFactory) -> int:
    """Run one broker in the foreground with the coordinator the factory builds."""
    from brokers.core.broker import Broker, configure_logging, run_broker
    from brokers.core.logs import NullLogStore

    configure_logging(args.log_level)
    config = config_from_args(args)

    def make() -> Broker:
        store = NullLogStore() if args.storage == "null" else None
        return Broker(config, make_coordinator(args, config), store)

    return run_broker(make)


def run_main(prog: str, parser: argparse.ArgumentParser, argv: Sequence[str] | None,
             make_coordinator: CoordinatorFactory) -> int:
    """Parse, serve, and turn user errors into one line and exit code 2."""
    try:
        return serve(parser.parse_args(argv), make_coordinator)
    except (UserError, OSError) as exc:
        # OSError here is the environment (port in use, permissions, disk full), not a bug.
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
