"""Kafka's own Java client, the reference implementation of the protocol, against every
architecture: an admin round trip (create, describe, list, delete), an idempotent producer at
acks=all, a consumer group that reads every record in order and commits, its offsets and state
read back through the admin client, and a new member that resumes from the commit with nothing
left to read. The client is Kafka 3.9.2's (the release `make setup` resolves); the program is
tests/support/java/JavaClientRoundTrip.java, run in the JVM's source-file mode."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

from harness.kafka.releases import RELEASES
from harness.kafka.resolve import cached, lib_dir

pytestmark = [pytest.mark.integration, pytest.mark.interop]

PROGRAM = Path(__file__).resolve().parents[1] / "support" / "java" / "JavaClientRoundTrip.java"
RELEASE = RELEASES["3.9.2"]
RECORDS = 500


def test_kafkas_java_client_round_trip(cluster, tmp_path):
    if cached(RELEASE) is None:
        pytest.skip("Kafka 3.9.2 is not resolved here (make setup resolves it)")
    quiet = tmp_path / "log4j.properties"  # the client's INFO lines would bury the steps
    quiet.write_text("log4j.rootLogger=WARN, stderr\n"
                     "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                     "log4j.appender.stderr.Target=System.err\n"
                     "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
                     "log4j.appender.stderr.layout.ConversionPattern=%p %m (%c)%n\n")
    suffix = uuid.uuid4().hex[:8]
    done = subprocess.run(
        ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", f"-Dlog4j.configuration=file:{quiet}",
         "-cp", f"{lib_dir(RELEASE)}/*", str(PROGRAM), cluster.bootstrap, f"java-{suffix}",
         f"java-group-{suffix}", str(RECORDS)],
        capture_output=True, text=True, timeout=240)
    steps = {}
    for line in done.stdout.splitlines():
        event = json.loads(line)
        assert "error" not in event, f"{event['error']}\n{done.stderr[-3000:]}"
        steps[event.pop("step")] = event
    assert done.returncode == 0, done.stderr[-3000:]
    assert steps == {
        "create": {"partitions": 2, "listed": True},
        "produce": {"acked": RECORDS, "dense_offsets": True},
        "consume": {"records": RECORDS, "committed": RECORDS, "group_state": "Empty"},
        "resume": {"records": 0},
        "delete": {"gone": True},
    }
