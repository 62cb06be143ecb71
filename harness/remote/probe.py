"""Small questions the driver asks a host over SSH, answered on stdout.

    python -m harness.remote.probe ports N ADDRESS   N free TCP ports on ADDRESS (JSON list)
    python -m harness.remote.probe clock             for each line read, this host's clock
                                                     (time.time_ns()), until end of input
    python -m harness.remote.probe zookeeper         {"java": PATH, "classpath": [...]}, or
                                                     {"error": why no ZooKeeper can run here}

The clock echo runs in one session so that every sample costs a network round trip, not a
process start: the driver keeps the sample with the shortest round trip (harness/remote/ssh.py).
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> int:
    what = argv[0] if argv else ""
    if what == "ports" and len(argv) == 3:
        from harness.cluster.machines import free_ports

        print(json.dumps(free_ports(int(argv[1]), argv[2])))
        return 0
    if what == "clock":
        for _ in sys.stdin:
            sys.stdout.write(f"{time.time_ns()}\n")
            sys.stdout.flush()
        return 0
    if what == "zookeeper":
        from harness.services.zookeeper.discovery import find_classpath, find_java

        java, classpath = find_java(None), find_classpath(None)
        if java is None:
            answer: dict[str, object] = {"error": "no java (apt-get install "
                                         "default-jre-headless, or set JAVA_HOME)"}
        elif classpath is None:
            answer = {"error": "no ZooKeeper jars (apt-get install zookeeper, or set "
                      "ZOOKEEPER_HOME)"}
        else:
            answer = {"java": java, "classpath": [str(p) for p in classpath]}
        print(json.dumps(answer))
        return 0
    print(f"usage: python -m harness.remote.probe ports N ADDRESS | clock | zookeeper (got "
          f"{' '.join(argv)!r})", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
