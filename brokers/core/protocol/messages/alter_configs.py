# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""AlterConfigs (key 33), versions 0-1, and IncrementalAlterConfigs (key 44), versions 0-1
(1 flexible). Resource types as DescribeConfigs (2 topic, 4 broker).

AlterConfigs replaces a resource's whole set of configs (one not named returns to its
default); IncrementalAlterConfigs changes the named ones by ``config_operation``: 0 SET,
1 DELETE (back to the default), 2 APPEND and 3 SUBTRACT (list-valued configs only).
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import (
    BOOL,
    INT8,
    INT16,
    INT32,
    STRING,
    ArrayOf,
    Message,
    Struct,
    f,
)

ALTER_KEY = 33
INCREMENTAL_KEY = 44
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # config_operation


@dataclass(slots=True)
class AlterableConfig(Struct):
    name: str = f(STRING, "0+")
    value: str | None = f(STRING, "0+", nullable="0+", default=None)


@dataclass(slots=True)
class AlterConfigsResource(Struct):
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    configs: list[AlterableConfig] = f(ArrayOf(AlterableConfig), "0+")


@dataclass(slots=True)
class AlterConfigsRequest(Message):
    API_KEY = ALTER_KEY
    VERSIONS = (0, 1)
    FLEXIBLE = flexible_from(ALTER_KEY)
    resources: list[AlterConfigsResource] = f(ArrayOf(AlterConfigsResource), "0+")
    validate_only: bool = f(BOOL, "0+", default=False)


@dataclass(slots=True)
class AlterConfigsResourceResponse(Struct):
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")


@dataclass(slots=True)
class AlterConfigsResponse(Message):
    API_KEY = ALTER_KEY
    VERSIONS = (0, 1)
    FLEXIBLE = flexible_from(ALTER_KEY)
    throttle_time_ms: int = f(INT32, "0+")
    responses: list[AlterConfigsResourceResponse] = f(ArrayOf(AlterConfigsResourceResponse), "0+")


@dataclass(slots=True)
class AlterableConfigOp(Struct):
    name: str = f(STRING, "0+")
    config_operation: int = f(INT8, "0+")
    value: str | None = f(STRING, "0+", nullable="0+", default=None)


@dataclass(slots=True)
class IncrementalAlterConfigsResource(Struct):
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    configs: list[AlterableConfigOp] = f(ArrayOf(AlterableConfigOp), "0+")


@dataclass(slots=True)
class IncrementalAlterConfigsRequest(Message):
    API_KEY = INCREMENTAL_KEY
    VERSIONS = (0, 1)
    FLEXIBLE = flexible_from(INCREMENTAL_KEY)
    resources: list[IncrementalAlterConfigsResource] = f(
        ArrayOf(IncrementalAlterConfigsResource), "0+")
    validate_only: bool = f(BOOL, "0+", default=False)


@dataclass(slots=True)
class IncrementalAlterConfigsResponse(Message):
    API_KEY = INCREMENTAL_KEY
    VERSIONS = (0, 1)
    FLEXIBLE = flexible_from(INCREMENTAL_KEY)
    throttle_time_ms: int = f(INT32, "0+")
    responses: list[AlterConfigsResourceResponse] = f(ArrayOf(AlterConfigsResourceResponse), "0+")
