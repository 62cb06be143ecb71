#!/usr/bin/env bash
# Installs the Debian packages twinbench needs when they are missing: a Java runtime and the
# ZooKeeper jars (the zk broker runs against a real ZooKeeper), kcat for interop checks, and
# iproute2 (`ip netns`, for the network partitions of the fault workloads), and the OpenSSH
# server that the multi-host tests run inside network namespaces (test hosts).
# As root it uses apt-get; otherwise it says what to install and continues (tests that need a
# missing tool skip with that reason locally; CI runs as root, so nothing is skipped there).
set -euo pipefail

missing=()
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
if [ -z "${ZOOKEEPER_HOME:-}" ] && [ ! -f /usr/share/java/zookeeper.jar ]; then
  missing+=(zookeeper)
fi
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing ${missing[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: missing system packages: ${missing[*]}." >&2
  echo "setup: install them (Debian: sudo apt-get install ${missing[*]}), or set ZOOKEEPER_HOME" >&2
  echo "setup: to a ZooKeeper release; tests that need them will be skipped until then." >&2
fi
