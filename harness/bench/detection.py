"""How long until every surviving DSBS broker declares a SIGKILLed peer dead (a benchmark).

``python -m harness.bench.detection [--preset local|lan] [--trials N] [--brokers N]`` starts a DSBS
cluster per trial, SIGKILLs the last broker, and polls every survivor's Metadata until the
victim is gone from it; it prints the slowest survivor's time per trial. Polling costs ~1 ms per
probe, so the figures are upper bounds by that much.
"""

from __future__ import annotations

import argparse
import sys
import time

from brokers.core.errors import UserError
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec


def detection_time(preset: str, brokers: int) -> float:
    spec = ClusterSpec("dsbs", brokers=brokers, options={"dsbs": {"gossip_preset": preset}})
    with ProcessCluster(spec) as cluster:
        victim = cluster.brokers[-1]
        survivors = cluster.brokers[:-1]
        killed = time.monotonic()
        cluster.kill_broker(victim.node_id)
        pending = {b.node_id: b for b in survivors}
        slowest = 0.0
        while pending:
            for node_id, b in list(pending.items()):
                with KafkaProbe(b.host, b.port) as probe:
                    if victim.port not in {x.port for x in probe.metadata([]).brokers}:
                        slowest = time.monotonic() - killed
                        del pending[node_id]
            if time.monotonic() - killed > 120:
                raise UserError("a survivor still lists the killed broker after 120 s")
            time.sleep(0.005)
        return slowest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.detection",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=("local", "lan"), default="local")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--brokers", type=int, default=3)
    args = parser.parse_args(argv)
    times = [detection_time(args.preset, args.brokers) for _ in range(args.trials)]
    print(f"preset={args.preset} brokers={args.brokers} detection_s="
          + ",".join(f"{t:.2f}" for t in times) + f" max={max(times):.2f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as exc:
        print(f"detection: error: {exc}", file=sys.stderr)
        sys.exit(2)
