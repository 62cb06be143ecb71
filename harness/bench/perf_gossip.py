"""`make perf-gossip`: what does authenticated gossip cost? CPU per gossip packet, with and
without the cluster key.

The DSBS state machine (``SwimNode``) runs a cluster on the in-memory network with the LOCAL
timers (``simnet.py``: the same code the broker runs, minus the sockets, whose cost does not
depend on the key). Each repetition runs the same seeded steady state twice, keyed and
insecure, in alternating order (A B / B A, so drift on a shared machine hits both alike), and
divides the process CPU time by the datagrams sent (each is also received once). The difference
is what HMAC-SHA256 signing and checking adds to one packet's send + receive; a microbenchmark
of ``Authenticator.sign`` + ``verify`` alone at the measured mean packet size is printed too.

Run against another tree (say, main before authentication existed) with that tree's packages
first on the path: ``cd OTHER && PYTHONPATH=. python /path/to/harness/bench/perf_gossip.py``; on a
tree without keys only the insecure side is measured.

Prints one line per side, ``hmac_us_per_packet=...`` last, and nothing else (no files).
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time

from brokers.dsbs_broker.config import GossipConfig
from brokers.dsbs_broker.gossip.simnet import SimNet
from harness.bench.common import interleaved

KEY = b"perf gossip key: 32 bytes, fixed"


def _keys_supported() -> bool:
    return "key" in inspect.signature(SimNet).parameters


def run_once(keyed: bool, members: int, seconds: float, seed: int) -> tuple[float, int, int]:
    """(CPU seconds, packets, bytes) of ``seconds`` simulated seconds of steady state."""
    if _keys_supported():
        net = SimNet(GossipConfig.LOCAL, seed=seed, key=KEY if keyed else None)
    else:
        net = SimNet(GossipConfig.LOCAL, seed=seed)
    net.add_converged(members)
    for i in range(20):  # something for anti-entropy digests and piggybacks to carry
        net.nodes[i % members].add_topic(_topic(f"perf-{i}", i % members), net.now)
    net.run_for(2.0)  # past the initial dissemination
    p0, b0 = net.stats.packets, net.stats.bytes
    t0 = time.process_time()
    net.run_for(seconds)
    cpu = time.process_time() - t0
    return cpu, net.stats.packets - p0, net.stats.bytes - b0


def _topic(name: str, creator: int):
    from brokers.dsbs_broker.packets.wire import TopicRecord

    return TopicRecord(name, 1, creator, 1, 1, (creator,))


def hmac_micro(size: int, n: int = 200_000) -> float:
    """Microseconds for one sign + one verify of a ``size``-byte datagram."""
    from brokers.dsbs_broker.packets import wire
    from brokers.dsbs_broker.packets.auth import TAG_BYTES, Authenticator

    auth = Authenticator(KEY)
    unsigned = bytearray(max(size - TAG_BYTES, wire.HEADER_SIZE + 1))
    unsigned[3] = wire.FLAG_HMAC
    body = bytes(unsigned)
    t0 = time.process_time()
    for _ in range(n):
        auth.verify(auth.sign(body))
    return (time.process_time() - t0) / n * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.bench.perf_gossip",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=5, help="cluster size (default 5)")
    ap.add_argument("--seconds", type=float, default=20.0,
                    help="simulated seconds measured per run (default 20)")
    ap.add_argument("--reps", type=int, default=5, help="A/B repetitions (default 5)")
    args = ap.parse_args(argv)
    sides = [True, False] if _keys_supported() else [False]
    per_packet: dict[bool, list[float]] = {s: [] for s in sides}
    sizes: dict[bool, list[float]] = {s: [] for s in sides}
    rates: dict[bool, list[float]] = {s: [] for s in sides}
    for rep in range(args.reps):
        order = interleaved(sides, rep)
        for keyed in order:
            cpu, packets, nbytes = run_once(keyed, args.members, args.seconds, seed=rep)
            per_packet[keyed].append(cpu / packets * 1e6)
            sizes[keyed].append(nbytes / packets)
            rates[keyed].append(packets / args.seconds / args.members)
    for keyed in sides:
        xs = per_packet[keyed]
        print(f"{'keyed   ' if keyed else 'insecure'} cpu_us_per_packet median="
              f"{statistics.median(xs):.2f} min={min(xs):.2f} max={max(xs):.2f} "
              f"packet_bytes={statistics.fmean(sizes[keyed]):.0f} packets_per_member_s="
              f"{statistics.fmean(rates[keyed]):.1f} (n={len(xs)}, {args.members} members, "
              f"{args.seconds:g} s each)")
    mean_size = statistics.fmean(sizes[sides[0]])
    if len(sides) == 2:
        diff = statistics.median(per_packet[True]) - statistics.median(per_packet[False])
        print(f"sign_verify_micro_us={hmac_micro(round(mean_size)):.2f} at {mean_size:.0f} B "
              f"({hmac_micro(1400):.2f} at 1400 B)")
        print(f"hmac_us_per_packet={diff:.2f}")
    else:
        print("(this tree has no gossip keys)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
