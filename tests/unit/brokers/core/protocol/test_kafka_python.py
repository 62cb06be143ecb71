"""Cross-check against kafka-python 3 (an independent implementation of the same specs):
bytes we encode must decode with kafka-python and re-encode to the identical bytes, and
requests built by kafka-python must decode with ours. This guards against spec misreadings
that a self-consistent round trip cannot catch."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokers.core.protocol.api import REQUESTS, RESPONSES, SUPPORTED, ApiKey
from brokers.core.protocol.messages import metadata, produce
from brokers.core.protocol.primitives import join
from brokers.core.protocol.records import decode_records, iter_batches
from tests.support.record_builder import build_batch
from tests.unit.brokers.core.protocol.test_messages import PAIR_IDS, PAIRS, struct_strategy

kp_protocol = pytest.importorskip("kafka.protocol")

_KP_MODULES = ["kafka.protocol.metadata", "kafka.protocol.producer", "kafka.protocol.consumer",
               "kafka.protocol.admin", "kafka.protocol.sasl"]


def kp_class(name: str) -> Any:
    for mod in _KP_MODULES:
        cls = getattr(importlib.import_module(mod), name, None)
        if cls is not None:
            return cls
    pytest.skip(f"kafka-python has no {name}")


@pytest.mark.parametrize(("key", "version"), PAIRS, ids=PAIR_IDS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_our_bytes_are_kafka_pythons_bytes(key: ApiKey, version: int, data: st.DataObject
                                           ) -> None:
    for cls in (REQUESTS[key], RESPONSES[key]):
        kp = kp_class(cls.__name__)
        obj = data.draw(struct_strategy(cls, version))
        if cls.__name__ == "ApiVersionsResponse":
            # Clients read any ApiVersions error body as v0 (the KIP-511 fallback shape),
            # so a v1+ body with an error is never sent; kafka-python would misparse it.
            obj.error_code = 0
        raw = join(obj.encode(version))
        try:
            decoded = kp.decode(raw, version=version)
        except AttributeError:
            # kafka-python 3 follows Kafka 4's specs, which dropped some early versions
            # (DeleteTopics v0); the round-trip tests still cover ours.
            lo, hi = kp.valid_versions
            if lo <= version <= hi:
                raise
            pytest.skip(f"kafka-python has no {cls.__name__} v{version}")
        # kafka-python's DeleteTopicsRequest.encode (a v6 convenience) sets the version on a
        # decoded object, which has no header to update, and fails: its base encode is the
        # codec under test.
        encode = kp.__mro__[1].encode if cls.__name__ == "DeleteTopicsRequest" else kp.encode
        assert bytes(encode(decoded)) == raw


def test_kafka_python_produce_request_decodes_with_ours() -> None:
    kp = kp_class("ProduceRequest")
    batch = build_batch([(b"k", b"v")], timestamp_ms=5)
    for version in range(3, 9):
        req = kp(transactional_id="tx", acks=-1, timeout_ms=30000, topic_data=[
            kp.TopicProduceData(name="topic", partition_data=[
                kp.TopicProduceData.PartitionProduceData(index=2, records=batch)])],
            version=version)
        ours = produce.ProduceRequest.decode(bytes(req.encode()), version)
        assert ours.transactional_id == "tx" and ours.acks == -1 and ours.timeout_ms == 30000
        part = ours.topic_data[0].partition_data[0]
        assert (ours.topic_data[0].name, part.index, bytes(part.records)) == ("topic", 2, batch)


def test_kafka_python_metadata_request_and_response_decode_with_ours() -> None:
    kp_req, kp_resp = kp_class("MetadataRequest"), kp_class("MetadataResponse")
    for version in range(1, 12):
        req = kp_req(topics=[kp_req.MetadataRequestTopic(name="a")], version=version,
                     **({"allow_auto_topic_creation": False} if version >= 4 else {}))
        ours = metadata.MetadataRequest.decode(bytes(req.encode()), version)
        assert [t.name for t in ours.topics or []] == ["a"]
        assert ours.allow_auto_topic_creation is (version < 4)
        assert metadata.MetadataRequest.decode(bytes(kp_req(topics=None, version=version)
                                                     .encode()), version).topics is None
    ours_resp = metadata.MetadataResponse(
        brokers=[metadata.MetadataResponseBroker(1, "127.0.0.1", 9092, None)],
        cluster_id="c", controller_id=1, topics=[metadata.MetadataResponseTopic(
            error_code=0, name="a", is_internal=False,
            partitions=[metadata.MetadataResponsePartition(0, 0, 1, 0, [1], [1], [])])])
    for version in range(1, 12):
        kp_obj = kp_resp.decode(join(ours_resp.encode(version)), version=version)
        assert kp_obj.brokers[0].host == "127.0.0.1" and kp_obj.controller_id == 1
        assert kp_obj.topics[0].partitions[0].leader_id == 1


def test_record_batches_interoperate_with_kafka_python() -> None:
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=7, producer_epoch=1, base_sequence=0,
                                        batch_size=1 << 20)
    builder.append(0, timestamp=1000, key=b"k0", value=b"v0", headers=[("h", b"x")])
    builder.append(1, timestamp=1005, key=None, value=b"v1", headers=[])
    theirs = bytes(builder.build())
    (h,) = iter_batches(theirs, verify_crc=True)
    assert (h.producer_id, h.producer_epoch, h.records_count, h.last_offset_delta) == (7, 1, 2, 1)
    recs = decode_records(theirs)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs] == [
        (0, 1000, b"k0", b"v0", [("h", b"x")]), (1, 1005, None, b"v1", [])]

    ours = build_batch([(b"a", b"b"), (None, b"c")], 40, timestamp_ms=2000)
    batch = DefaultRecordBatch(bytearray(ours))
    assert batch.validate_crc()
    got = [(r.offset, r.timestamp, r.key, r.value) for r in batch]
    assert got == [(40, 2000, b"a", b"b"), (41, 2000, None, b"c")]


def test_supported_table_is_within_kafka_pythons_known_versions() -> None:
    for key, (_lo, hi) in SUPPORTED.items():
        assert kp_class(REQUESTS[key].__name__).max_version >= hi
