#!/usr/bin/env bash
# Builds the ZooKeeper container image that provisioning's testcontainers branch runs
# (harness/services/zookeeper/provision.py, CONTAINER_IMAGE), when a Docker engine answers and no image
# of that name exists yet: a Debian root made by debootstrap with Debian's zookeeper package,
# imported as the image. It is for machines that reach no image registry (CI); a laptop that can
# pull the official image never needs it, and an image already present is never rebuilt.
#
# Usage: build_image.sh [IMAGE]   (default zookeeper:3.8). Needs root and debootstrap; about a
# minute and a half on the 2-core VM, ~600 MB. The image honours the two settings provisioning
# passes, as the official image does: ZOO_4LW_COMMANDS_WHITELIST and ZOO_ADMINSERVER_ENABLED.
set -euo pipefail

image="${1:-zookeeper:3.8}"
suite="${TWINBENCH_IMAGE_SUITE:-bookworm}"
mirror="${TWINBENCH_IMAGE_MIRROR:-http://deb.debian.org/debian}"

if docker image inspect "$image" >/dev/null 2>&1; then
  exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  echo "build_image: debootstrap is missing (apt-get install debootstrap)" >&2
  exit 1
fi

root="$(mktemp -d /tmp/twinbench-zk-image.XXXXXX)"
trap 'rm -rf "$root"' EXIT
echo "build_image: building $image from a $suite root with Debian's zookeeper (about a minute)" >&2
# apt's own package cache: the host's Java and zookeeper packages, which setup_system.sh has just
# installed, are found there instead of being downloaded again.
cache=()
[ -d /var/cache/apt/archives ] && cache=(--cache-dir=/var/cache/apt/archives)
debootstrap --variant=minbase "${cache[@]}" --include=zookeeper "$suite" "$root" "$mirror" \
  >"$root.log" 2>&1 || {
  echo "build_image: debootstrap failed; its log:" >&2
  tail -20 "$root.log" >&2
  rm -f "$root.log"
  exit 1
}
rm -f "$root.log"
# What a server never reads: package caches and lists, documentation, translations.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
  "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/locale

cat >"$root/usr/local/bin/zookeeper-server" <<'EOF'
#!/bin/sh
# Entry point: a standalone server on port 2181 with data in /data, configured like the
# official image from the same two environment variables.
set -e
mkdir -p /data /conf
cat >/conf/zoo.cfg <<CFG
dataDir=/data
clientPort=2181
tickTime=2000
initLimit=5
syncLimit=2
maxClientCnxns=0
4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}
admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-true}
CFG
# zookeeper.jar's manifest names its dependencies; slf4j-simple logs to stderr.
cp=/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar
exec java -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain /conf/zoo.cfg
EOF
chmod 0755 "$root/usr/local/bin/zookeeper-server"

tar -C "$root" -c . | docker import \
  --change 'CMD ["/usr/local/bin/zookeeper-server"]' \
  --change 'EXPOSE 2181' \
  --change 'LABEL org.twinbench.built-by=harness/services/zookeeper/build_image.sh' \
  - "$image" >/dev/null
echo "build_image: $image ready" >&2
