"""``python -m harness.kafka.resolve``: every pinned Kafka release's jars, from Maven, once.

Each release resolves into ``<cache>/<version>/lib`` (``.cache/kafka`` in the checkout, which git
ignores) with Maven's dependency plugin (``copy-dependencies``, runtime scope) run on the
release's dependency-only POM. Maven writes into a fresh directory that replaces the old one
only when complete, and a stamp beside it records the POM's digest and the jars: a second run
whose POM is unchanged and whose jars are all there runs no Maven at all. Missing Java or Maven
is one line naming what to install. The JMX exporter agent the Kafka JVMs load
(``JMX_EXPORTER``, harness/kafka/jmx.py) resolves the same way, into a directory of its own.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from brokers.core.errors import UserError
from harness.kafka.releases import JMX_EXPORTER, RELEASES, Agent, Release

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "kafka"
STAMP = "resolved.json"
# The dependency plugin by its full coordinates, so the resolution does not depend on which
# version the local Maven would pick.
COPY_DEPENDENCIES = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies"
MAVEN_TIMEOUT_S = 900.0
INSTALL_HINT = "install a JDK 17 and Maven 3.8 (Debian: openjdk-17-jdk-headless maven)"


# What resolves: a release, or the agent the releases' JVMs load.
Resolvable = Release | Agent
BUNDLES: dict[str, Resolvable] = {**RELEASES, JMX_EXPORTER.version: JMX_EXPORTER}


@dataclass(frozen=True)
class Resolved:
    release: Resolvable
    lib: Path  # every jar of the release's class path
    jars: int
    cached: bool  # nothing was resolved this time


def pom_digest(release: Resolvable) -> str:
    return hashlib.sha256(release.pom.read_bytes()).hexdigest()


def lib_dir(release: Resolvable, cache: Path = CACHE) -> Path:
    return cache / release.version / "lib"


def cached(release: Resolvable, cache: Path = CACHE) -> Resolved | None:
    """The release's jars if a complete resolution of its current POM is there."""
    lib = lib_dir(release, cache)
    try:
        stamp = json.loads((lib.parent / STAMP).read_text())
    except (OSError, ValueError):
        return None
    jars = stamp.get("jars") if isinstance(stamp, dict) else None
    if (not isinstance(jars, list) or stamp.get("pom_sha256") != pom_digest(release)
            or not all((lib / str(name)).is_file() for name in jars)):
        return None
    return Resolved(release, lib, len(jars), True)


def check_tools() -> str:
    """The mvn to run; UserError (one line) when Java or Maven is missing."""
    mvn = shutil.which("mvn")
    if shutil.which("java") is None or mvn is None:
        missing = " and ".join(n for n in ("java", "mvn") if shutil.which(n) is None)
        raise UserError(f"resolving Apache Kafka needs {missing} on the PATH: {INSTALL_HINT}")
    return mvn


def resolve(release: Resolvable, cache: Path = CACHE, mvn: str | None = None) -> Resolved:
    """The release's jars, resolved by Maven unless a complete resolution is cached."""
    hit = cached(release, cache)
    if hit is not None:
        return hit
    mvn = mvn or check_tools()
    home = cache / release.version
    home.mkdir(parents=True, exist_ok=True)
    fresh = home / "lib.new"
    shutil.rmtree(fresh, ignore_errors=True)
    command = [mvn, "-B", "-q", "-f", str(release.pom), COPY_DEPENDENCIES,
               f"-DoutputDirectory={fresh}", "-DincludeScope=runtime"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        raise UserError(f"Kafka {release.version}: Maven did not finish in "
                        f"{MAVEN_TIMEOUT_S:.0f} s (is Maven Central reachable?)") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stdout + done.stderr).splitlines()
                 if ln.startswith("[ERROR]")]
        why = lines[0].removeprefix("[ERROR]").strip() if lines else f"exit {done.returncode}"
        raise UserError(f"Kafka {release.version}: Maven could not resolve {release.pom.name}: "
                        f"{why}")
    jars = sorted(p.name for p in fresh.glob("*.jar"))
    for needed in release.required:
        if needed not in jars:
            raise UserError(f"Kafka {release.version}: {needed} missing from what Maven resolved")
    lib = lib_dir(release, cache)
    shutil.rmtree(lib, ignore_errors=True)
    os.replace(fresh, lib)
    stamp = {"version": release.version, "pom_sha256": pom_digest(release), "jars": jars}
    (home / STAMP).write_text(json.dumps(stamp, indent=1) + "\n")
    return Resolved(release, lib, len(jars), False)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.kafka.resolve", description=(
        "Resolve the pinned Apache Kafka releases from Maven into the checkout's cache."))
    p.add_argument("--version", action="append", choices=sorted(BUNDLES),
                   help="only this release or agent (default: every pinned one)")
    p.add_argument("--cache", type=Path, default=CACHE, help=f"default {CACHE}")
    args = p.parse_args(argv)
    try:
        for version in args.version or sorted(BUNDLES):
            got = resolve(BUNDLES[version], args.cache)
            how = "cached" if got.cached else "resolved"
            print(f"kafka {version}: {got.jars} jars in {got.lib} ({how})")
    except UserError as exc:
        print(f"python -m harness.kafka.resolve: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
