# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31), versions 0-2 (2 flexible).

No authorizer exists, so every ACL request is answered SECURITY_DISABLED, as a Kafka broker
without ``authorizer.class.name`` does; the bodies are still decoded in full so a malformed
one is refused like any other. pattern_type 3 = LITERAL (the spec's default).
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import INT8, INT16, INT32, STRING, ArrayOf, Message, Struct, f

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
LITERAL = 3


@dataclass(slots=True)
class DescribeAclsRequest(Message):
    API_KEY = DESCRIBE_ACLS
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(DESCRIBE_ACLS)
    resource_type_filter: int = f(INT8, "0+")
    resource_name_filter: str | None = f(STRING, "0+", nullable="0+", default=None)
    pattern_type_filter: int = f(INT8, "1+", default=LITERAL)
    principal_filter: str | None = f(STRING, "0+", nullable="0+", default=None)
    host_filter: str | None = f(STRING, "0+", nullable="0+", default=None)
    operation: int = f(INT8, "0+")
    permission_type: int = f(INT8, "0+")


@dataclass(slots=True)
class AclDescription(Struct):
    principal: str = f(STRING, "0+")
    host: str = f(STRING, "0+")
    operation: int = f(INT8, "0+")
    permission_type: int = f(INT8, "0+")


@dataclass(slots=True)
class DescribeAclsResource(Struct):
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    pattern_type: int = f(INT8, "1+", default=LITERAL)
    acls: list[AclDescription] = f(ArrayOf(AclDescription), "0+")


@dataclass(slots=True)
class DescribeAclsResponse(Message):
    API_KEY = DESCRIBE_ACLS
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(DESCRIBE_ACLS)
    throttle_time_ms: int = f(INT32, "0+")
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    resources: list[DescribeAclsResource] = f(ArrayOf(DescribeAclsResource), "0+")


@dataclass(slots=True)
class AclCreation(Struct):
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    resource_pattern_type: int = f(INT8, "1+", default=LITERAL)
    principal: str = f(STRING, "0+")
    host: str = f(STRING, "0+")
    operation: int = f(INT8, "0+")
    permission_type: int = f(INT8, "0+")


@dataclass(slots=True)
class CreateAclsRequest(Message):
    API_KEY = CREATE_ACLS
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(CREATE_ACLS)
    creations: list[AclCreation] = f(ArrayOf(AclCreation), "0+")


@dataclass(slots=True)
class AclCreationResult(Struct):
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)


@dataclass(slots=True)
class CreateAclsResponse(Message):
    API_KEY = CREATE_ACLS
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(CREATE_ACLS)
    throttle_time_ms: int = f(INT32, "0+")
    results: list[AclCreationResult] = f(ArrayOf(AclCreationResult), "0+")


@dataclass(slots=True)
class DeleteAclsFilter(Struct):
    resource_type_filter: int = f(INT8, "0+")
    resource_name_filter: str | None = f(STRING, "0+", nullable="0+", default=None)
    pattern_type_filter: int = f(INT8, "1+", default=LITERAL)
    principal_filter: str | None = f(STRING, "0+", nullable="0+", default=None)
    host_filter: str | None = f(STRING, "0+", nullable="0+", default=None)
    operation: int = f(INT8, "0+")
    permission_type: int = f(INT8, "0+")


@dataclass(slots=True)
class DeleteAclsRequest(Message):
    API_KEY = DELETE_ACLS
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(DELETE_ACLS)
    filters: list[DeleteAclsFilter] = f(ArrayOf(DeleteAclsFilter), "0+")


@dataclass(slots=True)
class DeleteAclsMatchingAcl(Struct):
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    pattern_type: int = f(INT8, "1+", default=LITERAL)
    principal: str = f(STRING, "0+")
    host: str = f(STRING, "0+")
    operation: int = f(INT8, "0+")
    permission_type: int = f(INT8, "0+")


@dataclass(slots=True)
class DeleteAclsFilterResult(Struct):
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    matching_acls: list[DeleteAclsMatchingAcl] = f(ArrayOf(DeleteAclsMatchingAcl), "0+")


@dataclass(slots=True)
class DeleteAclsResponse(Message):
    API_KEY = DELETE_ACLS
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(DELETE_ACLS)
    throttle_time_ms: int = f(INT32, "0+")
    filter_results: list[DeleteAclsFilterResult] = f(ArrayOf(DeleteAclsFilterResult), "0+")
