"""`make perf-delay`: what the network delay line (harness/netdelay) itself adds.

Two namespaces on a bridge (harness/cluster/netns.py), an echo server in the first, and TCP
ping-pong (32 bytes, TCP_NODELAY, one round trip in flight) to it from the root namespace (the path
of the load client and ZooKeeper: the line holds the whole rtt at the server side) and from the
second namespace (the path between brokers: rtt/2 at each end). Measured without the line (bare veth
and bridge) and with it at each rtt asked for; per path and rtt: the median and p99 round trip, and
the median's excess over bare veth plus the rtt asked for, which is the line's own added latency
(the wake-up latency of its process, which sleeps until the next packet is due).

Then its CPU: a flood of pipelined round trips (``--window`` in flight) at rtt 0 and at 1 ms,
the daemon's CPU seconds (psutil) over the packets it released: what each packet costs the
machine on top of the kernel's own work (the line runs on the load client's CPU in a run, so
it is never counted as a broker's).

Prints one line per measurement and ends with ``line_added_us=<median excess at rtt 0, root
path>`` and ``line_cpu_us_per_packet=<at rtt 0>``; needs root and iptables (one line otherwise).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from brokers.core.errors import UserError
from harness.cluster.netns import NetnsNetwork
from harness.cluster.processes import ManagedProcess
from harness.netdelay.control import NetworkDelay

PORT = 7000
PAYLOAD = b"x" * 32

_ECHO = """
import asyncio, sys
async def echo(reader, writer):
    sock = writer.get_extra_info("socket")
    sock.setsockopt(__import__("socket").IPPROTO_TCP, __import__("socket").TCP_NODELAY, 1)
    while data := await reader.read(65536):
        writer.write(data)
    writer.close()
async def main():
    server = await asyncio.start_server(echo, sys.argv[1], int(sys.argv[2]))
    print("listening", flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


def ping(host: str, count: int, window: int = 1) -> list[float]:
    """Round-trip times (s) of ``count`` 32-byte messages, ``window`` in flight at a time."""
    with socket.create_connection((host, PORT), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times: list[float] = []
        sent: list[float] = []
        pending = b""
        while len(times) < count:
            while len(sent) - len(times) < window and len(sent) < count:
                sent.append(time.perf_counter())
                sock.sendall(PAYLOAD)
            pending += sock.recv(65536)
            while len(pending) >= len(PAYLOAD):
                pending = pending[len(PAYLOAD):]
                times.append(time.perf_counter() - sent[len(times)])
        return times


def _ping_from(namespace: str | None, host: str, count: int, window: int = 1) -> list[float]:
    if namespace is None:
        return ping(host, count, window)
    out = subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-m",
                          "harness.bench.perf_delay", "--ping", host, "--count", str(count),
                          "--window", str(window)],
                         capture_output=True, text=True, timeout=600, check=True)
    return [float(x) for x in json.loads(out.stdout)]


def _summary(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1e6, ordered[int(len(ordered) * 0.99)] * 1e6


def measure(rtts: list[float], count: int, flood: int, window: int) -> dict[str, float]:
    net = NetnsNetwork().create(2)
    work = Path(tempfile.mkdtemp(prefix="twinbench-perf-delay-"))
    server = ManagedProcess(["ip", "netns", "exec", net.hosts[0].namespace, sys.executable, "-c",
                             _ECHO, net.hosts[0].address, str(PORT)],
                            name="echo server", log_path=work / "echo.log")
    delay: NetworkDelay | None = None
    paths = {"root": None, "peer": net.hosts[1].namespace}
    out: dict[str, float] = {}
    try:
        server.start().wait_for_line("listening", 30)
        target = net.hosts[0].address
        bare = {}
        for path, ns in paths.items():
            _ping_from(ns, target, count // 10)  # warm-up
            bare[path], p99 = _summary(_ping_from(ns, target, count))
            print(f"path={path} line=none median_us={bare[path]:.0f} p99_us={p99:.0f}")
        delay = NetworkDelay(net, work).start(0.0)
        for rtt in rtts:
            delay.set_rtt(rtt)
            for path, ns in paths.items():
                median, p99 = _summary(_ping_from(ns, target, count))
                added = median - bare[path] - rtt * 1000
                print(f"path={path} rtt_ms={rtt:g} median_us={median:.0f} p99_us={p99:.0f} "
                      f"added_us={added:.0f}")
                out[f"added_us_{path}_{rtt:g}"] = added
        proc = psutil.Process(delay.pid)
        for rtt in (0.0, 1.0):
            delay.set_rtt(rtt)
            before, cpu0, t0 = delay.stats(), proc.cpu_times(), time.perf_counter()
            _ping_from(None, target, flood, window)
            elapsed = time.perf_counter() - t0
            after, cpu1 = delay.stats(), proc.cpu_times()
            packets = sum(after.packets.values()) - sum(before.packets.values())
            cpu = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
            per_packet = cpu / packets * 1e6 if packets else float("nan")
            print(f"flood rtt_ms={rtt:g} window={window} round_trips_per_s={flood / elapsed:.0f} "
                  f"packets={packets} line_cpu_s={cpu:.3f} cpu_us_per_packet={per_packet:.1f} "
                  f"line_cpu_share={cpu / elapsed:.2f}")
            out[f"cpu_us_per_packet_{rtt:g}"] = per_packet
    finally:
        if delay is not None:
            delay.stop()
        server.stop()
        net.destroy()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.bench.perf_delay",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--rtt", default="0,0.5,1,2,5,10",
                        help="round trips to measure, ms, comma-separated")
    parser.add_argument("--count", type=int, default=2000, help="round trips per measurement")
    parser.add_argument("--flood", type=int, default=40000, help="round trips of the CPU flood")
    parser.add_argument("--window", type=int, default=16, help="round trips in flight (flood)")
    parser.add_argument("--ping", metavar="HOST", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ping:  # the helper run inside a namespace
        print(json.dumps(ping(args.ping, args.count, args.window)))
        return 0
    try:
        rtts = [float(x) for x in args.rtt.split(",")]
        result = measure(rtts, args.count, args.flood, args.window)
    except (UserError, ValueError) as exc:
        print(f"perf-delay: error: {exc}", file=sys.stderr)
        return 2
    print(f"line_added_us={result.get('added_us_root_0', float('nan')):.0f}")
    print(f"line_cpu_us_per_packet={result['cpu_us_per_packet_0']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
