"""The ``twinbench`` command line.

Subcommands map one-to-one onto the pipeline stages of design.md. User mistakes (bad arguments,
missing files, unreachable services) print one line ``twinbench: error: ...`` and exit 2; a
traceback means a bug in twinbench.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from brokers.core.cli import OneLineParser, add_broker_arguments, serve
from brokers.core.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="twinbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    broker = sub.add_parser("broker", help="run one single-node broker in the foreground")
    add_broker_arguments(broker)
    return parser


def cmd_broker(args: argparse.Namespace) -> int:
    from brokers.core.local_coordinator import LocalCoordinator

    return serve(args, lambda _args, config: LocalCoordinator(
        config.node_id, config.data_dir / "coordinator"))


COMMANDS = {"broker": cmd_broker}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except (UserError, OSError) as exc:
        # OSError here is the environment (port in use, permissions, disk full), not a bug.
        print(f"twinbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
