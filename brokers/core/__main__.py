"""``python -m brokers.core``: one broker on its own, with the single-node coordinator.

The core's options only (brokers/core/cli.py); the coordinator is ``LocalCoordinator``: no
peer, no coordination store. `twinbench broker` runs the same broker in the foreground, and
the harness's ``local`` architecture runs this module.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from brokers.core.cli import OneLineParser, add_broker_arguments, run_main, single_node

PROG = "python -m brokers.core"


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    add_broker_arguments(parser)
    return run_main(PROG, parser, argv, single_node)


if __name__ == "__main__":
    sys.exit(main())
