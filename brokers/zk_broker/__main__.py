"""``python -m brokers.zk_broker``: one broker coordinated by a real ZooKeeper.

Same options as `twinbench broker`, plus where ZooKeeper is. ZooKeeper unreachable at start-up
is a one-line error and exit code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from brokers.core.cli import OneLineParser, add_broker_arguments, run_main
from brokers.zk_broker.acl import load_digest
from brokers.zk_broker.config import DATA_PATHS, ZkCoordinatorConfig
from brokers.zk_broker.coordinator import ZkCoordinator

PROG = "python -m brokers.zk_broker"


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    add_broker_arguments(parser)
    parser.add_argument(
        "--zookeeper",
        required=True,
        metavar="HOST:PORT[,...][/chroot]",
        help="ZooKeeper connect string (zookeeper.connect)",
    )
    parser.add_argument(
        "--zk-session-timeout-ms",
        type=int,
        default=ZkCoordinatorConfig.session_timeout_ms,
        help="ZooKeeper session timeout (zookeeper.session.timeout.ms)",
    )
    parser.add_argument(
        "--zk-data-path",
        choices=DATA_PATHS,
        default=ZkCoordinatorConfig.data_path,
        help="client for the data path's znode reads/writes: direct (an asyncio session) or "
        "kazoo (the main session; ~0.45 ms of thread hand-offs per request)",
    )
    parser.add_argument(
        "--zk-auth-file",
        metavar="FILE",
        help="one line user:password (mode 0600): authenticate to ZooKeeper with it (digest) "
        "and create every znode writable by that identity only, readable by anyone "
        "(zookeeper.set.acl)",
    )
    parser.add_argument(
        "--unclean-leader-election",
        action="store_true",
        help="when no in-sync replica of a partition is alive, elect a live replica outside "
        "the ISR, which may lack acknowledged records (unclean.leader.election.enable; off)",
    )
    return run_main(
        PROG,
        parser,
        argv,
        lambda args, config, _datadir: ZkCoordinator(
            ZkCoordinatorConfig(
                connect=args.zookeeper,
                session_timeout_ms=args.zk_session_timeout_ms,
                data_path=args.zk_data_path,
                digest=load_digest(args.zk_auth_file) if args.zk_auth_file else None,
                security_protocol=config.listeners[0].protocol.value,
                unclean_leader_election=args.unclean_leader_election,
            ),
            config.node_id,
        ),
    )


if __name__ == "__main__":
    sys.exit(main())
