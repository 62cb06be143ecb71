"""The ``twinbench`` command line.

Subcommands map one-to-one onto the pipeline stages of design.md. User mistakes (bad arguments,
missing files, unreachable services) print one line ``twinbench: error: ...`` and exit 2; a
traceback means a bug in twinbench.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from brokers.core.errors import UserError


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad argument on one line instead of usage + error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(f"{message} (see '{self.prog} --help')")


def parse_hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _flush_policy(text: str):
    from brokers.core.config import FlushPolicy

    try:
        return FlushPolicy.parse(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="twinbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    broker = sub.add_parser("broker", help="run one single-node broker in the foreground")
    broker.add_argument("--listen", type=parse_hostport, default=("127.0.0.1", 9092),
                        metavar="HOST:PORT", help="address to accept Kafka clients on (port 0: "
                        "any free port; the chosen one is printed as listening=HOST:PORT)")
    broker.add_argument("--data-dir", type=Path, required=True, metavar="DIR",
                        help="directory for partition logs and local state")
    broker.add_argument("--flush", type=_flush_policy, default="os",
                        metavar="every_batch|interval_ms:N|os",
                        help="when appended data is fsynced (default: os)")
    broker.add_argument("--node-id", type=int, default=0, help="broker id (default 0)")
    broker.add_argument("--storage", choices=("segment", "null"), default="segment",
                        help="'null' acknowledges without storing (the perf baseline)")
    broker.add_argument("--metadata-check", choices=("cached", "per_request"), default="cached",
                        help="consult the coordination store on every produce/fetch, or not")
    broker.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return parser


def cmd_broker(args: argparse.Namespace) -> int:
    from brokers.core.broker import Broker, configure_logging, run_broker
    from brokers.core.config import BrokerConfig, StorageConfig
    from brokers.core.local_coordinator import LocalCoordinator
    from brokers.core.logs import NullLogStore

    configure_logging(args.log_level)
    host, port = args.listen
    config = BrokerConfig(
        node_id=args.node_id, host=host, port=port, data_dir=args.data_dir,
        storage=StorageConfig(flush=args.flush), metadata_check=args.metadata_check,
    )
    try:
        args.data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot use data directory {args.data_dir}: {exc.strerror}") from None

    def make() -> Broker:
        coordinator = LocalCoordinator(config.node_id, config.data_dir / "coordinator")
        store = NullLogStore() if args.storage == "null" else None
        return Broker(config, coordinator, store)

    return run_broker(make)


COMMANDS = {"broker": cmd_broker}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except UserError as exc:
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        # Environment problems the user can fix: port in use, permissions, disk full.
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
