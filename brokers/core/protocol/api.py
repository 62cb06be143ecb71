"""API keys, advertised versions, and the request/response registries.

``SUPPORTED`` is what ApiVersions advertises. ``SERVED`` is what the broker actually serves:
identical except Produce, which is advertised from v0 (librdkafka < 2.11 disables compression
unless v0 is in range, KAFKA-18659) but served only from v3 (magic 2 batches); a Produce v0-2
request decodes fine and should be answered with UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from enum import IntEnum

from brokers.core.errors import UnsupportedVersion
from brokers.core.protocol.framing import frame
from brokers.core.protocol.header import (
    RequestHeader,
    encode_response_header,
    response_header_flexible,
)
from brokers.core.protocol.messages import (
    acls,
    alter_configs,
    api_versions,
    create_partitions,
    create_topics,
    delete_groups,
    delete_records,
    delete_topics,
    describe_configs,
    describe_groups,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl,
    sync_group,
    transactions,
)
from brokers.core.protocol.primitives import Buffer, Parts
from brokers.core.protocol.schema import Message


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    SASL_AUTHENTICATE = 36
    OFFSET_FOR_LEADER_EPOCH = 23
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47


# Advertised (min, max) per API; docs/kafka-protocol.md says why each bound is where it is.
SUPPORTED: dict[ApiKey, tuple[int, int]] = {
    ApiKey.PRODUCE: (0, 9),
    ApiKey.FETCH: (4, 12),
    ApiKey.LIST_OFFSETS: (1, 6),
    ApiKey.METADATA: (1, 11),
    ApiKey.OFFSET_COMMIT: (2, 8),
    ApiKey.OFFSET_FETCH: (1, 7),
    ApiKey.FIND_COORDINATOR: (0, 3),
    ApiKey.JOIN_GROUP: (0, 7),
    ApiKey.HEARTBEAT: (0, 4),
    ApiKey.LEAVE_GROUP: (0, 4),
    ApiKey.SYNC_GROUP: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.LIST_GROUPS: (0, 4),
    ApiKey.SASL_HANDSHAKE: (0, 1),
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (0, 5),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.INIT_PRODUCER_ID: (0, 4),
    ApiKey.SASL_AUTHENTICATE: (0, 2),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 3),
    ApiKey.DESCRIBE_ACLS: (0, 2),
    ApiKey.CREATE_ACLS: (0, 2),
    ApiKey.DELETE_ACLS: (0, 2),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.ALTER_CONFIGS: (0, 1),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.ADD_PARTITIONS_TO_TXN: (0, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: (0, 3),
    ApiKey.END_TXN: (0, 3),
    ApiKey.WRITE_TXN_MARKERS: (0, 1),
    ApiKey.TXN_OFFSET_COMMIT: (0, 3),
}

# Every API whose codecs exist and are tested; an API defined but not yet served would be
# listed here and left out of SUPPORTED (a client seeing it advertised would start using it).
DEFINED: dict[ApiKey, tuple[int, int]] = {**SUPPORTED}

# Produce v0-2 is advertised, not served (see the module docstring).
_FIRST_SERVED_PRODUCE = 3
SERVED: dict[ApiKey, tuple[int, int]] = {
    **SUPPORTED, ApiKey.PRODUCE: (_FIRST_SERVED_PRODUCE, SUPPORTED[ApiKey.PRODUCE][1])}

_PAIRS: dict[ApiKey, tuple[type[Message], type[Message]]] = {
    ApiKey.PRODUCE: (produce.ProduceRequest, produce.ProduceResponse),
    ApiKey.FETCH: (fetch.FetchRequest, fetch.FetchResponse),
    ApiKey.LIST_OFFSETS: (list_offsets.ListOffsetsRequest, list_offsets.ListOffsetsResponse),
    ApiKey.METADATA: (metadata.MetadataRequest, metadata.MetadataResponse),
    ApiKey.OFFSET_COMMIT: (offset_commit.OffsetCommitRequest, offset_commit.OffsetCommitResponse),
    ApiKey.OFFSET_FETCH: (offset_fetch.OffsetFetchRequest, offset_fetch.OffsetFetchResponse),
    ApiKey.FIND_COORDINATOR: (find_coordinator.FindCoordinatorRequest,
                              find_coordinator.FindCoordinatorResponse),
    ApiKey.JOIN_GROUP: (join_group.JoinGroupRequest, join_group.JoinGroupResponse),
    ApiKey.HEARTBEAT: (heartbeat.HeartbeatRequest, heartbeat.HeartbeatResponse),
    ApiKey.LEAVE_GROUP: (leave_group.LeaveGroupRequest, leave_group.LeaveGroupResponse),
    ApiKey.SYNC_GROUP: (sync_group.SyncGroupRequest, sync_group.SyncGroupResponse),
    ApiKey.DESCRIBE_GROUPS: (describe_groups.DescribeGroupsRequest,
                             describe_groups.DescribeGroupsResponse),
    ApiKey.LIST_GROUPS: (list_groups.ListGroupsRequest, list_groups.ListGroupsResponse),
    ApiKey.API_VERSIONS: (api_versions.ApiVersionsRequest, api_versions.ApiVersionsResponse),
    ApiKey.CREATE_TOPICS: (create_topics.CreateTopicsRequest,
                           create_topics.CreateTopicsResponse),
    ApiKey.DELETE_TOPICS: (delete_topics.DeleteTopicsRequest,
                           delete_topics.DeleteTopicsResponse),
    ApiKey.DELETE_RECORDS: (delete_records.DeleteRecordsRequest,
                            delete_records.DeleteRecordsResponse),
    ApiKey.INIT_PRODUCER_ID: (init_producer_id.InitProducerIdRequest,
                              init_producer_id.InitProducerIdResponse),
    ApiKey.SASL_HANDSHAKE: (sasl.SaslHandshakeRequest, sasl.SaslHandshakeResponse),
    ApiKey.SASL_AUTHENTICATE: (sasl.SaslAuthenticateRequest, sasl.SaslAuthenticateResponse),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (offset_for_leader_epoch.OffsetForLeaderEpochRequest,
                                     offset_for_leader_epoch.OffsetForLeaderEpochResponse),
    ApiKey.DESCRIBE_ACLS: (acls.DescribeAclsRequest, acls.DescribeAclsResponse),
    ApiKey.CREATE_ACLS: (acls.CreateAclsRequest, acls.CreateAclsResponse),
    ApiKey.DELETE_ACLS: (acls.DeleteAclsRequest, acls.DeleteAclsResponse),
    ApiKey.DESCRIBE_CONFIGS: (describe_configs.DescribeConfigsRequest,
                              describe_configs.DescribeConfigsResponse),
    ApiKey.CREATE_PARTITIONS: (create_partitions.CreatePartitionsRequest,
                               create_partitions.CreatePartitionsResponse),
    ApiKey.ALTER_CONFIGS: (alter_configs.AlterConfigsRequest, alter_configs.AlterConfigsResponse),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (alter_configs.IncrementalAlterConfigsRequest,
                                       alter_configs.IncrementalAlterConfigsResponse),
    ApiKey.DELETE_GROUPS: (delete_groups.DeleteGroupsRequest, delete_groups.DeleteGroupsResponse),
    ApiKey.OFFSET_DELETE: (delete_groups.OffsetDeleteRequest, delete_groups.OffsetDeleteResponse),
    ApiKey.ADD_PARTITIONS_TO_TXN: (transactions.AddPartitionsToTxnRequest,
                                   transactions.AddPartitionsToTxnResponse),
    ApiKey.ADD_OFFSETS_TO_TXN: (transactions.AddOffsetsToTxnRequest,
                                transactions.AddOffsetsToTxnResponse),
    ApiKey.END_TXN: (transactions.EndTxnRequest, transactions.EndTxnResponse),
    ApiKey.WRITE_TXN_MARKERS: (transactions.WriteTxnMarkersRequest,
                               transactions.WriteTxnMarkersResponse),
    ApiKey.TXN_OFFSET_COMMIT: (transactions.TxnOffsetCommitRequest,
                               transactions.TxnOffsetCommitResponse),
}
# Keyed by int: an ApiKey is one, and a request header's key is looked up without a conversion.
REQUESTS: dict[int, type[Message]] = {k: v[0] for k, v in _PAIRS.items()}
RESPONSES: dict[int, type[Message]] = {k: v[1] for k, v in _PAIRS.items()}

# Plain-int keyed copies: the server looks keys up straight from the wire, and building an
# IntEnum member from an arbitrary int would raise ValueError for unknown keys.
_SUPPORTED_INT: dict[int, tuple[int, int]] = {int(k): v for k, v in SUPPORTED.items()}
_DEFINED_INT: dict[int, tuple[int, int]] = {int(k): v for k, v in DEFINED.items()}


def is_supported(api_key: int, version: int) -> bool:
    """Is (api_key, version) inside the advertised range? Unknown keys are unsupported."""
    rng = _SUPPORTED_INT.get(api_key)
    return rng is not None and rng[0] <= version <= rng[1]


def is_served(api_key: int, version: int) -> bool:
    """Like ``is_supported`` but excluding the advertised-only Produce v0-2."""
    if api_key == ApiKey.PRODUCE and version < _FIRST_SERVED_PRODUCE:
        return False
    return is_supported(api_key, version)


def _check(api_key: int, version: int) -> None:
    """The codecs speak every defined version; what is advertised and served is checked
    before a request is decoded (``is_served``, in dispatch)."""
    rng = _DEFINED_INT.get(api_key)
    if rng is None or not rng[0] <= version <= rng[1]:
        raise UnsupportedVersion(f"api_key {api_key} v{version} is not supported")


def decode_request(api_key: int, version: int, body: Buffer) -> Message:
    """Decode a request body. Raises UnsupportedVersion (a KafkaError, code 35) for an unknown
    key or an unadvertised version, ProtocolViolation for malformed bytes."""
    _check(api_key, version)
    return REQUESTS[api_key].decode(body, version)


def encode_request(api_key: int, version: int, obj: Message) -> Parts:
    _check(api_key, version)
    return obj.encode(version)


def decode_response(api_key: int, version: int, body: Buffer) -> Message:
    _check(api_key, version)
    return RESPONSES[api_key].decode(body, version)


def encode_response(api_key: int, version: int, obj: Message) -> Parts:
    _check(api_key, version)
    return obj.encode(version)


def api_versions_response(throttle_time_ms: int = 0) -> api_versions.ApiVersionsResponse:
    """The broker's normal ApiVersions answer: every advertised range, error 0."""
    return api_versions.ApiVersionsResponse(
        error_code=0,
        api_keys=[api_versions.ApiVersion(int(k), lo, hi) for k, (lo, hi) in SUPPORTED.items()],
        throttle_time_ms=throttle_time_ms,
    )


def api_versions_fallback() -> api_versions.ApiVersionsResponse:
    """KIP-511: the answer to an ApiVersions version we do not support (e.g. v3+ from
    kafka-python 3 or librdkafka): error 35 and only ApiVersions' own range, in v0 format, so
    the client retries with a version we speak. Encode it with ``encode(0)``."""
    lo, hi = SUPPORTED[ApiKey.API_VERSIONS]
    return api_versions.ApiVersionsResponse(
        error_code=UnsupportedVersion.code,
        api_keys=[api_versions.ApiVersion(ApiKey.API_VERSIONS, lo, hi)],
    )


_FALLBACK_BODY = b"".join(api_versions_fallback().encode(0))


def api_versions_fallback_frame(correlation_id: int) -> Parts:
    """The complete framed fallback response (size + response header v0 + v0 body)."""
    return frame([encode_response_header(correlation_id), _FALLBACK_BODY])


def response_frame(correlation_id: int, api_key: int, version: int, obj: Message) -> Parts:
    """Size prefix + response header (v0, or v1 for a flexible version) + encoded body, as a
    buffer list for writelines()."""
    head = encode_response_header(correlation_id, response_header_flexible(api_key, version))
    return frame([head, *encode_response(api_key, version, obj)])


def request_frame(header: RequestHeader, obj: Message) -> Parts:
    """Size prefix + request header (v1 or v2) + encoded body (client side)."""
    return frame([header.encode(), *encode_request(header.api_key, header.api_version, obj)])
