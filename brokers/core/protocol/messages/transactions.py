# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""The transaction APIs at Kafka 2.8's versions: AddPartitionsToTxn (24), AddOffsetsToTxn (25),
EndTxn (26), WriteTxnMarkers (27) and TxnOffsetCommit (28).

A transactional producer names each partition (AddPartitionsToTxn) and each group whose offsets
it commits (AddOffsetsToTxn) to its transaction coordinator before writing there, writes its
batches (Produce, transactional bit set) and offsets (TxnOffsetCommit, to the group's
coordinator), then ends the transaction (EndTxn). The transaction coordinator then writes a
commit or abort marker into every partition of the transaction (WriteTxnMarkers, broker to
broker). docs/transactions.md has the design; this module only defines the wire forms.
Versions: 24-26 and 28 are flexible from v3, WriteTxnMarkers from v1.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    BOOL,
    INT16,
    INT32,
    INT64,
    STRING,
    ArrayOf,
    Message,
    Struct,
    f,
)

ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
WRITE_TXN_MARKERS = 27
TXN_OFFSET_COMMIT = 28


# --- AddPartitionsToTxn (24) ------------------------------------------------------------------
@dataclass(slots=True)
class AddPartitionsToTxnTopic(Struct):
    name: str = f(STRING, "0+")
    partitions: list[int] = f(ArrayOf(INT32), "0+")


@dataclass(slots=True)
class AddPartitionsToTxnRequest(Message):
    API_KEY = ADD_PARTITIONS_TO_TXN
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(ADD_PARTITIONS_TO_TXN)
    transactional_id: str = f(STRING, "0+")
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT16, "0+")
    topics: list[AddPartitionsToTxnTopic] = f(ArrayOf(AddPartitionsToTxnTopic), "0+")


@dataclass(slots=True)
class AddPartitionsToTxnPartitionResult(Struct):
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")


@dataclass(slots=True)
class AddPartitionsToTxnTopicResult(Struct):
    name: str = f(STRING, "0+")
    results: list[AddPartitionsToTxnPartitionResult] = f(
        ArrayOf(AddPartitionsToTxnPartitionResult), "0+")


@dataclass(slots=True)
class AddPartitionsToTxnResponse(Message):
    API_KEY = ADD_PARTITIONS_TO_TXN
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(ADD_PARTITIONS_TO_TXN)
    throttle_time_ms: int = f(INT32, "0+", default=0)
    results: list[AddPartitionsToTxnTopicResult] = f(
        ArrayOf(AddPartitionsToTxnTopicResult), "0+")


# --- AddOffsetsToTxn (25) ---------------------------------------------------------------------
@dataclass(slots=True)
class AddOffsetsToTxnRequest(Message):
    API_KEY = ADD_OFFSETS_TO_TXN
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(ADD_OFFSETS_TO_TXN)
    transactional_id: str = f(STRING, "0+")
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT16, "0+")
    group_id: str = f(STRING, "0+")


@dataclass(slots=True)
class AddOffsetsToTxnResponse(Message):
    API_KEY = ADD_OFFSETS_TO_TXN
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(ADD_OFFSETS_TO_TXN)
    throttle_time_ms: int = f(INT32, "0+", default=0)
    error_code: int = f(INT16, "0+", default=0)


# --- EndTxn (26) ------------------------------------------------------------------------------
@dataclass(slots=True)
class EndTxnRequest(Message):
    API_KEY = END_TXN
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(END_TXN)
    transactional_id: str = f(STRING, "0+")
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT16, "0+")
    committed: bool = f(BOOL, "0+")


@dataclass(slots=True)
class EndTxnResponse(Message):
    API_KEY = END_TXN
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(END_TXN)
    throttle_time_ms: int = f(INT32, "0+", default=0)
    error_code: int = f(INT16, "0+", default=0)


# --- WriteTxnMarkers (27) ---------------------------------------------------------------------
@dataclass(slots=True)
class WritableTxnMarkerTopic(Struct):
    name: str = f(STRING, "0+")
    partition_indexes: list[int] = f(ArrayOf(INT32), "0+")


@dataclass(slots=True)
class WritableTxnMarker(Struct):
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT16, "0+")
    transaction_result: bool = f(BOOL, "0+")  # True: commit
    topics: list[WritableTxnMarkerTopic] = f(ArrayOf(WritableTxnMarkerTopic), "0+")
    coordinator_epoch: int = f(INT32, "0+")


@dataclass(slots=True)
class WriteTxnMarkersRequest(Message):
    API_KEY = WRITE_TXN_MARKERS
    VERSIONS = (0, 1)
    FLEXIBLE = flexible_from(WRITE_TXN_MARKERS)
    markers: list[WritableTxnMarker] = f(ArrayOf(WritableTxnMarker), "0+")


@dataclass(slots=True)
class WritableTxnMarkerPartitionResult(Struct):
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")


@dataclass(slots=True)
class WritableTxnMarkerTopicResult(Struct):
    name: str = f(STRING, "0+")
    partitions: list[WritableTxnMarkerPartitionResult] = f(
        ArrayOf(WritableTxnMarkerPartitionResult), "0+")


@dataclass(slots=True)
class WritableTxnMarkerResult(Struct):
    producer_id: int = f(INT64, "0+")
    topics: list[WritableTxnMarkerTopicResult] = f(
        ArrayOf(WritableTxnMarkerTopicResult), "0+")


@dataclass(slots=True)
class WriteTxnMarkersResponse(Message):
    API_KEY = WRITE_TXN_MARKERS
    VERSIONS = (0, 1)
    FLEXIBLE = flexible_from(WRITE_TXN_MARKERS)
    markers: list[WritableTxnMarkerResult] = f(ArrayOf(WritableTxnMarkerResult), "0+")


# --- TxnOffsetCommit (28) ---------------------------------------------------------------------
@dataclass(slots=True)
class TxnOffsetCommitRequestPartition(Struct):
    partition_index: int = f(INT32, "0+")
    committed_offset: int = f(INT64, "0+")
    committed_leader_epoch: int = f(INT32, "2+", default=-1)
    committed_metadata: str | None = f(STRING, "0+", nullable="0+", default=None)


@dataclass(slots=True)
class TxnOffsetCommitRequestTopic(Struct):
    name: str = f(STRING, "0+")
    partitions: list[TxnOffsetCommitRequestPartition] = f(
        ArrayOf(TxnOffsetCommitRequestPartition), "0+")


@dataclass(slots=True)
class TxnOffsetCommitRequest(Message):
    API_KEY = TXN_OFFSET_COMMIT
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(TXN_OFFSET_COMMIT)
    transactional_id: str = f(STRING, "0+")
    group_id: str = f(STRING, "0+")
    producer_id: int = f(INT64, "0+")
    producer_epoch: int = f(INT16, "0+")
    generation_id: int = f(INT32, "3+", default=-1)
    member_id: str = f(STRING, "3+", default="")
    group_instance_id: str | None = f(STRING, "3+", nullable="3+", default=None)
    topics: list[TxnOffsetCommitRequestTopic] = f(ArrayOf(TxnOffsetCommitRequestTopic), "0+")


@dataclass(slots=True)
class TxnOffsetCommitResponsePartition(Struct):
    partition_index: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")


@dataclass(slots=True)
class TxnOffsetCommitResponseTopic(Struct):
    name: str = f(STRING, "0+")
    partitions: list[TxnOffsetCommitResponsePartition] = f(
        ArrayOf(TxnOffsetCommitResponsePartition), "0+")


@dataclass(slots=True)
class TxnOffsetCommitResponse(Message):
    API_KEY = TXN_OFFSET_COMMIT
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(TXN_OFFSET_COMMIT)
    throttle_time_ms: int = f(INT32, "0+", default=0)
    topics: list[TxnOffsetCommitResponseTopic] = f(ArrayOf(TxnOffsetCommitResponseTopic), "0+")
