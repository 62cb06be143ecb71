#!/usr/bin/env bash
# Installs the Debian packages twinbench needs when they are missing: a Java runtime and the
# ZooKeeper jars (the zk broker runs against a real ZooKeeper), kcat for interop checks,
# iproute2 (`ip netns`, for the network partitions of the fault workloads) and iptables (the
# delay line of the round-trip-time workloads queues packets with it, harness/netdelay), the
# OpenSSH server that the multi-host tests run inside network namespaces (test hosts),
# Prometheus (the metrics tests scrape brokers with the real server), and Debian's Docker engine
# with debootstrap: provisioning's testcontainers branch (a machine with Docker and no Java)
# runs in the tests too, on a ZooKeeper image built here from Debian's package when absent
# (harness/services/zookeeper/build_image.sh), since no image registry need be reachable.
# As root it uses apt-get; otherwise it says what to install and continues (tests that need a
# missing tool skip with that reason locally; CI runs as root, so nothing is skipped there).
# On CI (CI=true, as .ci/run sets it) a missing piece is an error here, named, rather than a
# skipped test later: CI must run every test (tests/support/selection.py).
set -euo pipefail

ci=0
case "${CI:-}" in true|TRUE|True|1|yes) ci=1 ;; esac
# On CI: say what is missing and stop; elsewhere: say it and go on.
need() {
  if [ "$ci" -eq 1 ]; then
    echo "setup: CI cannot run every test: $*" >&2
    exit 1
  fi
  echo "setup: $*" >&2
}

missing=()
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
if [ -z "${ZOOKEEPER_HOME:-}" ] && [ ! -f /usr/share/java/zookeeper.jar ]; then
  missing+=(zookeeper)
fi
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
# Maven resolves the pinned Apache Kafka releases (harness/kafka/resolve.py).
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v iptables-legacy >/dev/null 2>&1 || missing+=(iptables)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
root=0
[ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 && root=1
if [ "$root" -eq 1 ]; then
  # The engine is wanted only where we may run it (root); elsewhere Docker is the user's own.
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
fi

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$root" -eq 1 ]; then
    echo "setup: installing ${missing[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing system packages: ${missing[*]}." >&2
    echo "setup: install them (Debian: sudo apt-get install ${missing[*]}), or set ZOOKEEPER_HOME" >&2
    echo "setup: to a ZooKeeper release; tests that need them will be skipped until then." >&2
  fi
fi

if [ "$root" -ne 1 ]; then
  [ ${#missing[@]} -eq 0 ] || need "missing system packages (${missing[*]}) and not root to install them"
  [ "$ci" -eq 0 ] || need "not root (network namespaces, the failing disk and the Docker engine need root)"
  exit 0
fi
# After installing, every tool the tests use must be here (an apt mirror can lack one).
for tool in java mvn kcat ip iptables-legacy prometheus dockerd debootstrap; do
  command -v "$tool" >/dev/null 2>&1 || need "$tool is still missing after apt-get install"
done
[ -x /usr/sbin/sshd ] || need "/usr/sbin/sshd is still missing after apt-get install"
[ -n "${ZOOKEEPER_HOME:-}" ] || [ -f /usr/share/java/zookeeper.jar ] ||
  need "the ZooKeeper jars are still missing after apt-get install"
# The Docker engine: started when it does not answer (no init system starts it here), with its
# bridge inside 198.18.0.0/15 (the last /24, which harness/cluster/netns.py never takes) and without
# iptables rules or masquerading: containers reach nothing beyond this machine.
if ! docker info >/dev/null 2>&1; then
  echo "setup: starting the Docker engine (log: /var/log/twinbench-dockerd.log)" >&2
  setsid nohup dockerd --bip 198.19.255.1/24 --iptables=false --ip6tables=false \
    --ip-masq=false >/var/log/twinbench-dockerd.log 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  if ! docker info >/dev/null 2>&1; then
    tail -5 /var/log/twinbench-dockerd.log >&2
    need "the Docker engine did not start (log above; the testcontainers test will be skipped)"
    exit 0
  fi
fi
"$(dirname "$0")/services/zookeeper/build_image.sh"
