"""The command-line options every Raft member shares, broker (``__main__.py``) or dedicated
controller (``controller.py``): its Raft listener, the members, the voters, the cluster key and
id, the controller's session timeout; and the ``RaftBrokerConfig`` they make."""

from __future__ import annotations

import argparse

from brokers.core.cli import parse_hostport
from brokers.raft_broker.config import RaftBrokerConfig, load_key_file


def parse_peers(text: str) -> dict[int, tuple[str, int]]:
    """``ID=HOST:PORT,...`` -> {id: (host, port)}."""
    out: dict[int, tuple[str, int]] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        node, eq, addr = item.partition("=")
        if not eq or not node.strip().isdigit():
            raise argparse.ArgumentTypeError(f"expected ID=HOST:PORT, got {item!r}")
        host, port = parse_hostport(addr.strip())
        if port == 0:
            raise argparse.ArgumentTypeError(f"{item!r}: a peer's port cannot be 0")
        if int(node) in out:
            raise argparse.ArgumentTypeError(f"node {int(node)} is listed twice")
        out[int(node)] = (host, port)
    return out


def parse_ids(text: str) -> tuple[int, ...]:
    items = [s.strip() for s in text.split(",") if s.strip()]
    if not all(s.isdigit() for s in items):
        raise argparse.ArgumentTypeError(f"expected node ids, comma-separated, got {text!r}")
    return tuple(int(s) for s in items)


def add_quorum_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--raft", type=parse_hostport, default=("127.0.0.1", 0),
                        metavar="HOST:PORT",
                        help="TCP address of this node's Raft listener (port 0: any free port, "
                        "for a quorum of one)")
    parser.add_argument("--raft-peers", type=parse_peers, default=None,
                        metavar="ID=HOST:PORT[,...]",
                        help="every member's Raft address, this node's included (default: "
                        "this node alone)")
    parser.add_argument("--voters", type=parse_ids, default=None, metavar="ID[,ID...]",
                        help="the members that vote, an odd number (default: this node "
                        "alone); the others are learners that replicate the log")
    auth = parser.add_mutually_exclusive_group(required=True)
    auth.add_argument("--raft-key-file", metavar="FILE",
                      help="the cluster key (>= 32 bytes, mode 0600), shared by every member: "
                      "Raft messages carry an HMAC-SHA256 tag under it")
    auth.add_argument("--raft-insecure", action="store_true",
                      help="unauthenticated Raft, for experiments only: anyone who can reach a "
                      "Raft port can vote and write the cluster's metadata")
    defaults = RaftBrokerConfig(insecure=True)
    parser.add_argument("--cluster-id", default=defaults.cluster_id, metavar="ID",
                        help="the cluster's id, the same on every member: served in Metadata, "
                        "kept in the Raft directory on first start, and exchanged on every "
                        "Raft connection (a node of another id is refused; default "
                        "%(default)s)")
    parser.add_argument("--session-timeout", type=float, metavar="SECONDS",
                        default=defaults.session_timeout_s,
                        help="the controller fences a broker silent this long "
                        "(default %(default)s)")


def quorum_config(args: argparse.Namespace, node_id: int) -> RaftBrokerConfig:
    """The options above as a config (UserError naming the first bad one)."""
    host, port = args.raft
    peers = args.raft_peers if args.raft_peers is not None else {node_id: args.raft}
    voters = args.voters if args.voters is not None else (node_id,)
    key = load_key_file(args.raft_key_file) if args.raft_key_file else None
    return RaftBrokerConfig(
        listen_host=host, listen_port=port, peers=peers, voters=voters, key=key,
        insecure=args.raft_insecure, session_timeout_s=args.session_timeout,
        cluster_id=args.cluster_id)
