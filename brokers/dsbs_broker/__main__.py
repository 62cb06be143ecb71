"""``python -m brokers.dsbs_broker``: one Decentralized Stateful Broker.

Same options as `twinbench broker`, plus the gossip endpoint, the seeds to join through, and
the gossip timing preset. No external service is needed: brokers find each other by gossip.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from brokers.core.cli import OneLineParser, add_broker_arguments, run_main
from brokers.dsbs_broker.config import DsbsConfig, GossipConfig, parse_address
from brokers.dsbs_broker.coordinator import DsbsCoordinator

PROG = "python -m brokers.dsbs_broker"
PRESETS = {"lan": GossipConfig.LAN, "local": GossipConfig.LOCAL}


def _gossip_endpoint(text: str) -> tuple[str, int]:
    """``host:port`` where, unlike a seed address, port 0 (pick a free one) is allowed."""
    host, _, port = text.rpartition(":")
    return (host, 0) if port == "0" and host else parse_address(text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    add_broker_arguments(parser)
    parser.add_argument("--gossip", default="127.0.0.1:0", metavar="HOST:PORT",
                        help="UDP address for gossip (port 0: any free port)")
    parser.add_argument("--seeds", default="", metavar="HOST:PORT[,...]",
                        help="gossip addresses to join through (our own may be listed)")
    parser.add_argument("--gossip-preset", choices=sorted(PRESETS), default="lan",
                        help="gossip timers: lan (1 s period) or local (fast, one host)")

    def make(args, config, datadir):
        host, port = _gossip_endpoint(args.gossip)
        seeds = tuple(s.strip() for s in args.seeds.split(",") if s.strip())
        return DsbsCoordinator(config.node_id, config.data_dir, DsbsConfig(
            gossip_host=host, gossip_port=port, seeds=seeds,
            gossip=PRESETS[args.gossip_preset]), datadir=datadir)

    return run_main(PROG, parser, argv, make)


if __name__ == "__main__":
    sys.exit(main())
