"""`python -m harness.bench.perf_security`: what TLS and SASL cost each twin.

For every architecture, a cluster with PLAINTEXT listeners and one with SASL_SSL listeners
(SCRAM-SHA-512; throwaway certificates and users from harness/cluster/certs.py), or any two listener
protocols (``--protocols SSL,SASL_SSL``), each driven by the load client's synchronous
producer (the paper's), interleaved A B B A per architecture so drift on this shared machine
hits both sides alike. Prints records/s and the brokers' CPU per record (process CPU time,
medians of the repetitions) per architecture and protocol, and the second protocol's over the
first's. The clusters are
the ones `twinbench cluster --security-protocol` starts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from brokers.core.security.client import ClientSecurity
from brokers.core.security.listeners import SecurityProtocol
from harness import architectures
from harness.bench.common import interleaved
from harness.bench.single import produce_sync
from harness.cluster.certs import make_run_security
from harness.cluster.running import ProcessCluster
from harness.cluster.spec import ClusterSpec
from workloads.cluster import ClusterClientConfig
from workloads.connection import ConnectionConfig
from workloads.connection import run as run_async

PROTOCOLS = ("PLAINTEXT", "SASL_SSL")
MECHANISM = "SCRAM-SHA-512"


def _protocols(text: str) -> tuple[str, str]:
    known = [p.value for p in SecurityProtocol]
    names = tuple(p.strip().upper() for p in text.split(","))
    if len(names) != 2 or len(set(names)) != 2 or not set(names) <= set(known):
        raise argparse.ArgumentTypeError(
            f"two different protocols of {', '.join(known)}, e.g. SSL,SASL_SSL")
    return names[0], names[1]


async def _produce(bootstrap: str, security: ClientSecurity | None, msg_size: int, batch: int,
                   count: int) -> float:
    config = ClusterClientConfig(bootstrap=tuple(bootstrap.split(",")),
                                 connection=ConnectionConfig(security=security))
    return (await produce_sync(bootstrap, msg_size, batch, count, config)).rps


def _broker_cpu_s(cluster: ProcessCluster) -> float:
    """User+system CPU seconds of every broker so far (ZooKeeper's left out: the listeners'
    protocol is the brokers' business)."""
    return sum(v for k, v in cluster.cpu_seconds().items() if k.startswith("broker-"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.perf_security",
                                     description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--arch", choices=[*architectures.under_test(), "both"], default="both")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--messages", type=int, default=300_000,
                        help="records per session (default %(default)s: about a second or more)")
    parser.add_argument("--repetitions", type=int, default=2, help="A B B A rounds")
    parser.add_argument("--msg-size", type=int, default=32)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--protocols", type=_protocols, default=PROTOCOLS,
                        help="the two listener protocols compared (default %(default)s)")
    args = parser.parse_args(argv)
    protocols: tuple[str, str] = args.protocols
    # "both": every architecture under test that runs this many brokers (local runs one).
    arches = ([a for a in architectures.under_test()
               if architectures.get(a).max_brokers >= args.brokers]
              if args.arch == "both" else [args.arch])
    with tempfile.TemporaryDirectory(prefix="twinbench-perf-security-") as tmp:
        root = Path(tmp)
        files = make_run_security(root / "security")
        print(f"{'arch':6} {'protocol':10} {'records/s':>12} {'broker us/rec':>14}  samples",
              flush=True)
        for arch in arches:
            rps: dict[str, list[float]] = {p: [] for p in protocols}
            cpu: dict[str, list[float]] = {p: [] for p in protocols}
            for rnd in range(args.repetitions):
                order = interleaved(protocols, rnd)
                for protocol in order:
                    spec = ClusterSpec(arch, brokers=args.brokers,
                                       options={"dsbs": {"gossip_preset": "local"}},
                                       data_dir=root / f"{arch}-{protocol}-{rnd}",
                                       security_protocol=protocol,
                                       ssl_certfile=files.server_pem,
                                       ssl_keyfile=files.server_pem,
                                       ssl_ca_location=files.ca_pem,
                                       sasl_mechanisms=(MECHANISM,),
                                       sasl_credentials_file=files.credentials)
                    with ProcessCluster(spec) as cluster:
                        security = (None if protocol == "PLAINTEXT"
                                    else spec.client_security())
                        before = _broker_cpu_s(cluster)
                        rps[protocol].append(run_async(_produce(
                            cluster.bootstrap, security, args.msg_size, args.batch,
                            args.messages)))
                        cpu[protocol].append(
                            (_broker_cpu_s(cluster) - before) / args.messages * 1e6)
                    print(f"  {arch} {protocol} round {rnd}: {rps[protocol][-1]:,.0f} rec/s, "
                          f"{cpu[protocol][-1]:.2f} broker us/rec", file=sys.stderr, flush=True)
            for protocol in protocols:
                print(f"{arch:6} {protocol:10} {statistics.median(rps[protocol]):>12,.0f} "
                      f"{statistics.median(cpu[protocol]):>14.2f}  "
                      f"{', '.join(f'{x:,.0f}' for x in rps[protocol])}", flush=True)
            first, second = protocols
            ratio = statistics.median(rps[second]) / statistics.median(rps[first])
            cost = statistics.median(cpu[second]) / statistics.median(cpu[first])
            print(f"{arch:6} {second}/{first} = {ratio:.3f} records/s, {cost:.3f} broker CPU "
                  "per record", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
