"""The Apache Kafka releases the harness runs, pinned (docs/real-kafka.md says why these)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

POMS = Path(__file__).resolve().parent / "poms"


@dataclass(frozen=True, slots=True)
class Release:
    # Kafka's version string, as Maven Central publishes kafka_2.13.
    version: str
    # Coordination modes this release runs in: "zookeeper" (3.x only) and "kraft".
    modes: tuple[str, ...]
    # The logging stack its broker needs on the class path (the POMs name none):
    # "reload4j" (3.x, Log4j 1 API) or "log4j2" (4.x).
    logging: str

    @property
    def pom(self) -> Path:
        return POMS / f"kafka-{self.version}.pom.xml"

    @property
    def broker_jar(self) -> str:
        return f"kafka_2.13-{self.version}.jar"

    @property
    def tools_jar(self) -> str:
        return f"kafka-tools-{self.version}.jar"

    @property
    def required(self) -> tuple[str, ...]:
        """The jars a resolution must hold to be complete."""
        return (self.broker_jar, self.tools_jar)


@dataclass(frozen=True, slots=True)
class Agent:
    """A Java agent the Kafka JVMs load beside any release (resolved like a release, into a
    directory of its own)."""

    # Its cache directory's name (a release's is its version).
    version: str
    # The agent's jar, the one file a JVM's -javaagent names.
    jar: str

    @property
    def pom(self) -> Path:
        return POMS / f"{self.version}.pom.xml"

    @property
    def required(self) -> tuple[str, ...]:
        return (self.jar,)


# 3.9.2: the last line that runs on ZooKeeper as well as KRaft (one code base, two coordinators:
# the real-world twin pair). 4.1.1: KRaft only, the design that replaced ZooKeeper.
RELEASES: dict[str, Release] = {
    "3.9.2": Release("3.9.2", ("zookeeper", "kraft"), "reload4j"),
    "4.1.1": Release("4.1.1", ("kraft",), "log4j2"),
}

# The Prometheus JMX exporter: what reads Kafka's own metrics (the quorum's traffic) for the
# harness (harness/kafka/jmx.py).
JMX_EXPORTER = Agent("jmx-exporter-1.0.1", "jmx_prometheus_javaagent-1.0.1.jar")
