"""``python -m tests.support.shared_dir_arch``: one broker of a shared-directory cluster."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from brokers.core.cli import OneLineParser, add_broker_arguments, run_main
from tests.support.shared_dir_arch.coordinator import SharedDirCoordinator

PROG = "python -m tests.support.shared_dir_arch"


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    add_broker_arguments(parser)
    parser.add_argument("--shared-dir", required=True, type=Path,
                        help="the directory every broker of the cluster shares")
    return run_main(PROG, parser, argv, lambda args, config, datadir: SharedDirCoordinator(
        config.node_id, config.data_dir / "coordinator", args.shared_dir, datadir=datadir))


if __name__ == "__main__":
    sys.exit(main())
