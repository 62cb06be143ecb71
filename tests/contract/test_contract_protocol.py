"""The API level real clients negotiate: Kafka 2.8's, flexible versions included.

librdkafka logs every request it sends with its version (``debug=protocol``), so the test reads
what a current client actually chose against each architecture, and checks that the whole
produce / group consume / commit cycle works at those versions.
"""

from __future__ import annotations

import logging
import re
import uuid

import pytest

from brokers.core.errors import InvalidRequest
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.api_versions import ApiVersionsRequest
from harness.cluster.kafka_probe import KafkaProbe

pytestmark = [pytest.mark.integration, pytest.mark.interop]

_SENT = re.compile(r"Sent (\w+)Request \(v(\d+)")


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.versions: dict[str, set[int]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        for m in _SENT.finditer(record.getMessage()):
            self.versions.setdefault(m.group(1), set()).add(int(m.group(2)))


def test_librdkafka_speaks_the_flexible_versions_end_to_end(cluster):
    ck = pytest.importorskip("confluent_kafka")
    seen = _Lines()
    log = logging.getLogger(f"twinbench.test.rdkafka.{uuid.uuid4().hex[:6]}")
    log.addHandler(seen)
    log.setLevel(logging.DEBUG)
    common = {"bootstrap.servers": cluster.bootstrap, "debug": "protocol", "logger": log}
    topic, group = f"flex-{uuid.uuid4().hex[:10]}", f"flex-{uuid.uuid4().hex[:8]}"
    producer = ck.Producer(common)
    for i in range(20):
        producer.produce(topic, f"f{i}".encode())
    assert producer.flush(30) == 0
    consumer = ck.Consumer({**common, "group.id": group, "auto.offset.reset": "earliest",
                            "enable.auto.commit": False})
    consumer.subscribe([topic])
    got: list[bytes] = []
    for _ in range(120):
        if len(got) == 20:
            break
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    assert got == [f"f{i}".encode() for i in range(20)]
    # librdkafka picks min(its maximum, ours): each of these is the flexible version.
    wanted = {"ApiVersion": 3, "Produce": 9, "Fetch": 12, "Metadata": 11, "ListOffsets": 6,
              "OffsetCommit": 8, "OffsetFetch": 7}
    for name, version in wanted.items():
        assert version in seen.versions.get(name, set()), (name, seen.versions)


def test_api_versions_v3_names_its_software_or_gets_invalid_request(cluster):
    b = cluster.brokers[0]
    with KafkaProbe(b.host, b.port) as probe:
        ok = probe.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("twinbench-test", "1.0"))
        assert ok.error_code == 0
        ranges = {k.api_key: (k.min_version, k.max_version) for k in ok.api_keys}
        assert ranges[ApiKey.API_VERSIONS] == (0, 3) and ranges[ApiKey.FETCH][1] == 12
        bad = probe.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("no spaces!", "1.0"))
        assert bad.error_code == InvalidRequest.code and bad.api_keys  # versions still listed
        # The connection stays usable.
        assert probe.request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest("a", "b")).error_code == 0
