# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""DescribeConfigs (key 32), versions 0-4 (4 flexible). Resource type 2 = topic, 4 = broker
(named by its id). configuration_keys null = every config. v0 has is_default; v1 replaces it
with config_source and adds synonyms; v3 adds the config type and documentation."""

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

API_KEY = 32
TOPIC, BROKER = 2, 4  # resource types
# config_source values
TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
# config_type values
CONFIG_TYPES = {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6,
                "LIST": 7, "CLASS": 8, "PASSWORD": 9}


@dataclass(slots=True)
class DescribeConfigsResource(Struct):
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    configuration_keys: list[str] | None = f(ArrayOf(STRING), "0+", nullable="0+", default=None)


@dataclass(slots=True)
class DescribeConfigsRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 4)
    FLEXIBLE = flexible_from(API_KEY)
    resources: list[DescribeConfigsResource] = f(ArrayOf(DescribeConfigsResource), "0+")
    include_synonyms: bool = f(BOOL, "1+", default=False)
    include_documentation: bool = f(BOOL, "3+", default=False)


@dataclass(slots=True)
class DescribeConfigsSynonym(Struct):
    name: str = f(STRING, "1+")
    value: str | None = f(STRING, "1+", nullable="0+", default=None)
    source: int = f(INT8, "1+")


@dataclass(slots=True)
class DescribeConfigsResourceResult(Struct):
    name: str = f(STRING, "0+")
    value: str | None = f(STRING, "0+", nullable="0+", default=None)
    read_only: bool = f(BOOL, "0+")
    is_default: bool = f(BOOL, "0")
    config_source: int = f(INT8, "1+", default=-1)
    is_sensitive: bool = f(BOOL, "0+")
    synonyms: list[DescribeConfigsSynonym] = f(ArrayOf(DescribeConfigsSynonym), "1+")
    config_type: int = f(INT8, "3+", default=0)
    documentation: str | None = f(STRING, "3+", nullable="0+", default=None)


@dataclass(slots=True)
class DescribeConfigsResult(Struct):
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    resource_type: int = f(INT8, "0+")
    resource_name: str = f(STRING, "0+")
    configs: list[DescribeConfigsResourceResult] = f(ArrayOf(DescribeConfigsResourceResult),
                                                     "0+")


@dataclass(slots=True)
class DescribeConfigsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 4)
    FLEXIBLE = flexible_from(API_KEY)
    throttle_time_ms: int = f(INT32, "0+")
    results: list[DescribeConfigsResult] = f(ArrayOf(DescribeConfigsResult), "0+")
