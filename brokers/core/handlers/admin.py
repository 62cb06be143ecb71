"""ApiVersions, InitProducerId, and the ACL APIs (SECURITY_DISABLED: no authorizer)."""

from __future__ import annotations

import logging
import re

from brokers.core.errors import InvalidRequest, KafkaError, SecurityDisabled
from brokers.core.handlers.context import BrokerContext, Call, fenced_code
from brokers.core.protocol.api import SUPPORTED
from brokers.core.protocol.messages.acls import (
    AclCreationResult,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsFilterResult,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from brokers.core.protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
)
from brokers.core.protocol.messages.init_producer_id import (
    InitProducerIdRequest,
    InitProducerIdResponse,
)

log = logging.getLogger("twinbench.admin")

_ADVERTISED = [ApiVersion(api_key=int(k), min_version=lo, max_version=hi)
               for k, (lo, hi) in sorted(SUPPORTED.items())]


# KIP-511: what a client software name or version may look like.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle_api_versions(
    ctx: BrokerContext, call: Call, req: ApiVersionsRequest
) -> ApiVersionsResponse:
    if call.api_version >= 3 and not (_SOFTWARE.fullmatch(req.client_software_name)
                                      and _SOFTWARE.fullmatch(req.client_software_version)):
        # Kafka answers INVALID_REQUEST and still lists its versions, so the client can retry.
        return ApiVersionsResponse(error_code=InvalidRequest.code, api_keys=_ADVERTISED)
    if call.api_version >= 3:
        log.debug("%s at %s runs %s %s", call.client_id, call.peer, req.client_software_name,
                  req.client_software_version)
    return ApiVersionsResponse(error_code=0, api_keys=_ADVERTISED)


async def handle_init_producer_id(
    ctx: BrokerContext, call: Call, req: InitProducerIdRequest
) -> InitProducerIdResponse:
    """An idempotent producer (no transactional id) gets a cluster-unique id at epoch 0; a
    transactional one asks the transaction coordinator (brokers/core/transactions)."""
    try:
        if req.transactional_id is None:
            producer_id, epoch = await ctx.coordinator.allocate_producer_id(), 0
        else:
            if not req.transactional_id:
                raise InvalidRequest("an empty transactional id")
            txn = ctx.transactions()
            producer_id, epoch = await txn.init_producer_id(
                req.transactional_id, req.transaction_timeout_ms,
                (req.producer_id, req.producer_epoch) if call.api_version >= 3 else None)
    except KafkaError as exc:
        return InitProducerIdResponse(error_code=fenced_code(exc, call.api_version, 4),
                                      producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(error_code=0, producer_id=producer_id, producer_epoch=epoch)


# Kafka's words when no authorizer is configured.
_NO_AUTHORIZER = "No Authorizer is configured on the broker"


def handle_describe_acls(
    ctx: BrokerContext, call: Call, req: DescribeAclsRequest
) -> DescribeAclsResponse:
    return DescribeAclsResponse(error_code=SecurityDisabled.code, error_message=_NO_AUTHORIZER)


def handle_create_acls(
    ctx: BrokerContext, call: Call, req: CreateAclsRequest
) -> CreateAclsResponse:
    return CreateAclsResponse(results=[
        AclCreationResult(error_code=SecurityDisabled.code, error_message=_NO_AUTHORIZER)
        for _ in req.creations])


def handle_delete_acls(
    ctx: BrokerContext, call: Call, req: DeleteAclsRequest
) -> DeleteAclsResponse:
    return DeleteAclsResponse(filter_results=[
        DeleteAclsFilterResult(error_code=SecurityDisabled.code, error_message=_NO_AUTHORIZER)
        for _ in req.filters])
