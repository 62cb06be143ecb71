# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""ApiVersions (key 18), versions 0-3; v3 is flexible (KIP-511: the client names its software,
the response may carry feature tags). A version above 3 gets ``api.api_versions_fallback``.
Responses always use response header v0, whatever the version (see :mod:`header`)."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import INT16, INT32, INT64, STRING, ArrayOf, Message, Struct, f

API_KEY = 18


@dataclass(slots=True)
class ApiVersionsRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(API_KEY)
    # v0-2 bodies are empty.
    client_software_name: str = f(STRING, "3+")
    client_software_version: str = f(STRING, "3+")


@dataclass(slots=True)
class ApiVersion(Struct):
    api_key: int = f(INT16, "0+")
    min_version: int = f(INT16, "0+")
    max_version: int = f(INT16, "0+")


@dataclass(slots=True)
class SupportedFeatureKey(Struct):
    name: str = f(STRING, "3+")
    min_version: int = f(INT16, "3+")
    max_version: int = f(INT16, "3+")


@dataclass(slots=True)
class FinalizedFeatureKey(Struct):
    name: str = f(STRING, "3+")
    max_version_level: int = f(INT16, "3+")
    min_version_level: int = f(INT16, "3+")


@dataclass(slots=True)
class ApiVersionsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 3)
    FLEXIBLE = flexible_from(API_KEY)
    error_code: int = f(INT16, "0+")
    api_keys: list[ApiVersion] = f(ArrayOf(ApiVersion), "0+")
    throttle_time_ms: int = f(INT32, "1+")
    # Feature flags (KIP-584): tagged, so a broker without features simply omits them.
    supported_features: list[SupportedFeatureKey] = f(ArrayOf(SupportedFeatureKey), "3+", tag=0)
    finalized_features_epoch: int = f(INT64, "3+", default=-1, tag=1)
    finalized_features: list[FinalizedFeatureKey] = f(ArrayOf(FinalizedFeatureKey), "3+", tag=2)
