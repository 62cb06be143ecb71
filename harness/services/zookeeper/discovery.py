"""Finding what a local ZooKeeper server needs: a Java runtime and the ZooKeeper jars.

Searched in this order: an explicit path (``ZooKeeperConfig.java`` / ``.home``), then
``$JAVA_HOME`` and ``java`` on PATH for Java; ``$ZOOKEEPER_HOME`` (an Apache release) and then
Debian's ``zookeeper`` package under ``/usr/share/java`` for the jars. None means "not here";
provisioning then tries the next way to get a ZooKeeper.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

DEBIAN_JAVA_DIR = Path("/usr/share/java")
# The class that runs a server, standalone or as an ensemble member.
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"


def find_java(explicit: str | None = None) -> str | None:
    """The java executable: explicit path, then ``$JAVA_HOME/bin/java``, then ``java`` on PATH."""
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def manifest_class_path(jar: Path) -> list[str]:
    """The ``Class-Path`` entries of a jar's manifest (Debian lists dependencies there)."""
    try:
        with zipfile.ZipFile(jar) as zf:
            text = zf.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return []
    # Manifest lines wrap at 72 bytes; a continuation line starts with one space.
    text = text.replace("\r\n", "\n").replace("\n ", "")
    for line in text.splitlines():
        if line.startswith("Class-Path:"):
            return line.split(":", 1)[1].split()
    return []


def find_classpath(home: Path | None = None, java_dir: Path = DEBIAN_JAVA_DIR) -> list[Path] | None:
    """Jars to run a ZooKeeper server, or None when no installation is found.

    * ``home`` (or ``ZOOKEEPER_HOME``): an Apache release ships every dependency, logback and
      its config included, in ``lib/``; ``conf/`` goes first so its logback.xml is found.
    * Debian: ``zookeeper.jar``'s manifest names its dependencies (netty, jute, slf4j-api,
      metrics, jetty, snappy...), so the JVM loads them itself. Missing manifest entries are
      fine as long as the server does not need them (jline is only for the CLI; the admin
      server, which needs jetty, is disabled). Debian's jar ships no slf4j *binding*, so we add
      slf4j-simple, which logs to stderr, i.e. to our log file; without one slf4j is silent.
    """
    home_env = os.environ.get("ZOOKEEPER_HOME")
    if home is None and home_env:
        home = Path(home_env)
    if home is not None:
        jars = sorted((home / "lib").glob("*.jar")) + sorted(home.glob("zookeeper-*.jar"))
        if not any(j.name.startswith("zookeeper-") for j in jars):
            return None
        conf = home / "conf"
        return ([conf] if conf.is_dir() else []) + jars
    main = java_dir / "zookeeper.jar"
    if not main.is_file():
        return None
    jars = [main]
    listed = {Path(p).name for p in manifest_class_path(main)}
    for extra in ("zookeeper-jute.jar", "slf4j-api.jar", "slf4j-simple.jar"):
        p = java_dir / extra
        if p.is_file() and (extra == "slf4j-simple.jar" or extra not in listed):
            jars.append(p)
    return jars
