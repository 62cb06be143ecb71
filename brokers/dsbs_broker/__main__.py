"""``python -m brokers.dsbs_broker``: one Decentralized Stateful Broker.

Same options as `twinbench broker`, plus the gossip endpoint, the seeds to join through, the
gossip timing preset, the cluster key (or an explicit choice of unauthenticated gossip) and the
limits on what gossip may make a broker hold. No external service is needed: brokers find each
other by gossip.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from brokers.core.cli import OneLineParser, add_broker_arguments, run_main
from brokers.dsbs_broker.config import DsbsConfig, GossipConfig, GossipLimits, parse_address
from brokers.dsbs_broker.coordinator import DsbsCoordinator
from brokers.dsbs_broker.packets.auth import load_key_file

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
    auth = parser.add_mutually_exclusive_group(required=True)
    auth.add_argument("--gossip-key-file", metavar="FILE",
                      help="the cluster key (>= 32 bytes, mode 0600), shared by every broker: "
                      "gossip packets carry an HMAC-SHA256 tag under it")
    auth.add_argument("--gossip-insecure", action="store_true",
                      help="unauthenticated gossip, for experiments only: anyone who can reach "
                      "the gossip port can forge membership, topics and offsets")
    # --max-topics and --max-partitions-per-topic are the core's (every broker has them); here
    # they also bound what gossip may teach this broker.
    limits = GossipLimits()
    parser.add_argument("--gossip-max-members", type=int, metavar="N",
                        default=limits.max_members,
                        help="node ids a broker remembers, dead ones included "
                        "(default %(default)s)")

    defaults = DsbsConfig()
    parser.add_argument("--offset-commit-acks", type=int, metavar="N",
                        default=defaults.offset_commit_acks,
                        help="successor coordinators that must hold a committed offset before "
                        "it is acknowledged (default %(default)s; 0: the paper's lazy "
                        "replication, which loses commits when the coordinator dies)")

    def make(args, config, datadir):
        host, port = _gossip_endpoint(args.gossip)
        seeds = tuple(s.strip() for s in args.seeds.split(",") if s.strip())
        key = load_key_file(args.gossip_key_file) if args.gossip_key_file else None
        return DsbsCoordinator(config.node_id, config.data_dir, DsbsConfig(
            gossip_host=host, gossip_port=port, seeds=seeds,
            gossip=PRESETS[args.gossip_preset], gossip_key=key,
            gossip_insecure=args.gossip_insecure, offset_commit_acks=args.offset_commit_acks,
            limits=GossipLimits(max_topic_partitions=args.max_partitions_per_topic,
                                max_topics=args.max_topics,
                                max_members=args.gossip_max_members)), datadir=datadir)

    return run_main(PROG, parser, argv, make)


if __name__ == "__main__":
    sys.exit(main())
