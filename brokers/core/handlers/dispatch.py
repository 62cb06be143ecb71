"""RequestDispatcher: one request frame in, one response frame (or awaitable of one) out.

Order of checks, each with the answer clients expect:

1. A frame too short for a header, or an unknown API key: the stream cannot be trusted or
   answered in a format the client understands, so the connection is closed (as Kafka does).
2. ApiVersions at a version we do not speak: the KIP-511 fallback (v0 body, error 35).
3. Another API at an unserved version: UNSUPPORTED_VERSION in that API's response when the
   codec can encode it (Produce v0-2, advertised for librdkafka's sake: answered by
   ``produce.answer_unserved``), else a closed connection.
4. A body that does not decode: closed connection.
5. The handler; its response is framed under the request's correlation id.

Every request that passes check 1 is counted by API (``requests_by_api``, reported as
``BrokerCounters.kafka_requests``): how many Kafka requests a workload takes per 1,000 records
is deterministic for a given client and code, which the CI regression's exact layer checks.

``observer``, when set (only while the broker serves metrics: brokers/core/request_meter.py),
sees every decoded request with its response (None for acks=0) before it is framed: what the
metrics read per topic and error code. Unset, it costs one comparison per request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from brokers.core.errors import ProtocolViolation
from brokers.core.handlers import (
    admin,
    configs,
    fetch,
    groups,
    metadata,
    offsets,
    produce,
    replication,
    sasl,
    transactions,
)
from brokers.core.handlers.context import BrokerContext, Call
from brokers.core.protocol.api import (
    REQUESTS,
    RESPONSES,
    ApiKey,
    api_versions_fallback_frame,
    is_served,
    response_frame,
)
from brokers.core.protocol.header import RequestHeader, peek_header
from brokers.core.protocol.messages.produce import ProduceRequest
from brokers.core.protocol.schema import Message
from brokers.core.server import Buffers

Handler = Callable[[BrokerContext, Call, Any], Message | Awaitable[Message | None] | None]
# (api key, decoded request, its response or None when none is sent)
Observer = Callable[[int, Any, Message | None], None]

HANDLERS: dict[int, Handler] = {
    ApiKey.PRODUCE: produce.handle_produce,
    ApiKey.FETCH: fetch.handle_fetch,
    ApiKey.LIST_OFFSETS: offsets.handle_list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: replication.handle_offset_for_leader_epoch,
    ApiKey.METADATA: metadata.handle_metadata,
    ApiKey.OFFSET_COMMIT: offsets.handle_offset_commit,
    ApiKey.OFFSET_FETCH: offsets.handle_offset_fetch,
    ApiKey.FIND_COORDINATOR: groups.handle_find_coordinator,
    ApiKey.JOIN_GROUP: groups.handle_join_group,
    ApiKey.HEARTBEAT: groups.handle_heartbeat,
    ApiKey.LEAVE_GROUP: groups.handle_leave_group,
    ApiKey.SYNC_GROUP: groups.handle_sync_group,
    ApiKey.DESCRIBE_GROUPS: groups.handle_describe_groups,
    ApiKey.LIST_GROUPS: groups.handle_list_groups,
    ApiKey.SASL_HANDSHAKE: sasl.handle_sasl_handshake,
    ApiKey.API_VERSIONS: admin.handle_api_versions,
    ApiKey.CREATE_TOPICS: metadata.handle_create_topics,
    ApiKey.DELETE_TOPICS: metadata.handle_delete_topics,
    ApiKey.DELETE_RECORDS: offsets.handle_delete_records,
    ApiKey.INIT_PRODUCER_ID: admin.handle_init_producer_id,
    ApiKey.SASL_AUTHENTICATE: sasl.handle_sasl_authenticate,
    ApiKey.DESCRIBE_ACLS: admin.handle_describe_acls,
    ApiKey.CREATE_ACLS: admin.handle_create_acls,
    ApiKey.DELETE_ACLS: admin.handle_delete_acls,
    ApiKey.DESCRIBE_CONFIGS: configs.handle_describe_configs,
    ApiKey.CREATE_PARTITIONS: metadata.handle_create_partitions,
    ApiKey.ALTER_CONFIGS: configs.handle_alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: configs.handle_incremental_alter_configs,
    ApiKey.DELETE_GROUPS: groups.handle_delete_groups,
    ApiKey.OFFSET_DELETE: groups.handle_offset_delete,
    ApiKey.WRITE_TXN_MARKERS: transactions.handle_write_txn_markers,
    ApiKey.ADD_PARTITIONS_TO_TXN: transactions.handle_add_partitions_to_txn,
    ApiKey.ADD_OFFSETS_TO_TXN: transactions.handle_add_offsets_to_txn,
    ApiKey.END_TXN: transactions.handle_end_txn,
    ApiKey.TXN_OFFSET_COMMIT: transactions.handle_txn_offset_commit,
}


class RequestDispatcher:
    def __init__(self, ctx: BrokerContext) -> None:
        self._ctx = ctx
        # Plain-int keys: the lookup happens on every request with a key straight off the wire.
        self._handlers = {int(k): (h, REQUESTS[ApiKey(k)]) for k, h in HANDLERS.items()}
        # Indexed by API key: one list increment per request, no name lookup on the hot path.
        self._counts = [0] * (max(self._handlers) + 1)
        self.observer: Observer | None = None

    def requests_by_api(self) -> dict[str, int]:
        """Requests received so far by API, lower-case Kafka names; APIs never seen left out."""
        return {ApiKey(k).name.lower(): n for k, n in enumerate(self._counts) if n}

    def dispatch(self, frame: memoryview, peer: str) -> Buffers | Awaitable[Buffers | None] | None:
        api_key, version, correlation_id = peek_header(frame)
        entry = self._handlers.get(api_key)
        if entry is None:
            raise ProtocolViolation(f"unknown api key {api_key}")
        self._counts[api_key] += 1
        if not is_served(api_key, version):
            return self._unsupported(api_key, version, correlation_id, frame)
        header, body_at = RequestHeader.decode(frame)
        handler, request_cls = entry
        request = request_cls.decode(frame[body_at:], version)
        result = handler(self._ctx, Call(version, header.client_id, peer), request)
        if result is None:
            if self.observer is not None:
                self.observer(api_key, request, None)
            return None
        if isinstance(result, Message):
            if self.observer is not None:
                self.observer(api_key, request, result)
            return response_frame(correlation_id, api_key, version, result)
        return self._finish(result, correlation_id, api_key, version, request)

    async def _finish(
        self, pending: Awaitable[Message | None], correlation_id: int, api_key: int,
        version: int, request: Any,
    ) -> Buffers | None:
        response = await pending
        if self.observer is not None:
            self.observer(api_key, request, response)
        if response is None:
            return None
        return response_frame(correlation_id, api_key, version, response)

    def _unsupported(
        self, api_key: int, version: int, correlation_id: int, frame: memoryview
    ) -> Buffers | None:
        if api_key == ApiKey.API_VERSIONS:
            return api_versions_fallback_frame(correlation_id)
        lo, hi = RESPONSES[ApiKey(api_key)].VERSIONS
        if api_key == ApiKey.PRODUCE and lo <= version <= hi:
            header, body_at = RequestHeader.decode(frame)
            response = produce.answer_unserved(
                ProduceRequest.decode(frame[body_at:], version), version, header.client_id)
            if response is None:
                return None
            return response_frame(correlation_id, api_key, version, response)
        raise ProtocolViolation(f"api key {api_key} v{version} is not supported")
