"""The per-record key check of compacted topics (KIP-467): which records have no key, in every
codec and across batches, the record errors built from them, and malformed records."""

from __future__ import annotations

import pytest

from brokers.core.errors import CorruptMessage, InvalidRecord
from brokers.core.protocol.records import HEADER_SIZE
from brokers.core.record_checks import RecordError, RecordsRejected, check_keys, keyless_records
from tests.support.record_builder import build_batch


def _every_tenth_keyless(n: int = 100) -> list[tuple[bytes | None, bytes]]:
    return [(None if i % 10 == 0 else b"k%d" % i, b"value %d" % i) for i in range(n)]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])  # none, gzip, snappy, lz4, zstd
def test_keyless_records_are_found_in_every_codec(codec: int) -> None:
    batch = build_batch(_every_tenth_keyless(), timestamp_ms=1, compression=codec)
    assert keyless_records(batch) == list(range(0, 100, 10))


def test_an_empty_key_is_a_key_and_indexes_run_across_batches() -> None:
    first = build_batch([(b"", b"a"), (None, b"b")], timestamp_ms=1)
    second = build_batch([(None, b"c"), (b"k", b"d")], timestamp_ms=1, compression=1)
    assert keyless_records(first + second) == [1, 2]
    assert keyless_records(memoryview(build_batch([(b"k", None)], timestamp_ms=1))) == []


def test_check_keys_builds_one_record_error_per_keyless_record() -> None:
    check_keys(build_batch([(b"k", b"v")], timestamp_ms=1), "t", 0)  # all keyed: nothing
    with pytest.raises(RecordsRejected) as info:
        check_keys(build_batch(_every_tenth_keyless(30), timestamp_ms=1), "orders", 3)
    err = info.value
    assert isinstance(err, InvalidRecord) and err.code == 87
    message = "Compacted topic cannot accept message without key in topic partition orders-3."
    assert err.record_errors == (RecordError(0, message), RecordError(10, message),
                                 RecordError(20, message))
    assert "3 record(s) without a key" in err.message and "orders-3" in err.message


def test_a_record_overrunning_its_batch_is_corrupt() -> None:
    raw = bytearray(build_batch([(None, b"v")], timestamp_ms=1))
    raw[HEADER_SIZE] = 0x7E  # the first record claims 63 bytes
    with pytest.raises(CorruptMessage, match="overruns"):
        keyless_records(bytes(raw))
    short = bytearray(build_batch([(b"key", b"v")], timestamp_ms=1))
    del short[-4:]  # the record's tail is gone, the header still claims it
    short[8:12] = (len(short) - 12).to_bytes(4, "big")
    with pytest.raises(CorruptMessage):
        keyless_records(bytes(short))
