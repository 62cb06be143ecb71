"""``python -m brokers.raft_broker``: one broker of the Raft twin (KRaft's combined mode).

Same options as `twinbench broker`, plus this node's Raft listener, every member's Raft address
(``--raft-peers``, its own included), which of them vote (``--voters``; the rest are learners),
and the cluster key (or an explicit choice of unauthenticated Raft). No external service: the
voters among the brokers keep the metadata log (combined mode), or dedicated controllers do
(``python -m brokers.raft_broker.controller``), and then every broker is a learner.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from brokers.core.cli import OneLineParser, add_broker_arguments, run_main
from brokers.raft_broker.cli import add_quorum_arguments, quorum_config
from brokers.raft_broker.coordinator import RaftCoordinator

PROG = "python -m brokers.raft_broker"


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    add_broker_arguments(parser)
    add_quorum_arguments(parser)

    def make(args, config, datadir):
        return RaftCoordinator(config.node_id, config.data_dir,
                               quorum_config(args, config.node_id), datadir=datadir)

    return run_main(PROG, parser, argv, make)


if __name__ == "__main__":
    sys.exit(main())
