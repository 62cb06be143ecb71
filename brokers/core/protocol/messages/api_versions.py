# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""ApiVersions (key 18), versions 0-2. v3+ is flexible; see ``api.api_versions_fallback``."""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.schema import INT16, INT32, ArrayOf, Message, Struct, f

API_KEY = 18


@dataclass(slots=True)
class ApiVersionsRequest(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 2)
    # v0-2 bodies are empty; client_software_name/version only exist in flexible v3+.


@dataclass(slots=True)
class ApiVersion(Struct):
    api_key: int = f(INT16, "0+")
    min_version: int = f(INT16, "0+")
    max_version: int = f(INT16, "0+")


@dataclass(slots=True)
class ApiVersionsResponse(Message):
    API_KEY = API_KEY
    VERSIONS = (0, 2)
    error_code: int = f(INT16, "0+")
    api_keys: list[ApiVersion] = f(ArrayOf(ApiVersion), "0+")
    throttle_time_ms: int = f(INT32, "1+")
