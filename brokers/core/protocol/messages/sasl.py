# ruff: noqa: RUF009  -- schema.f() returns a dataclasses.field(); ruff cannot see that.
"""SaslHandshake (key 17), versions 0-1, and SaslAuthenticate (key 36), versions 0-2.

SaslHandshake names the mechanism the client wants; the answer lists the ones enabled. After a
v0 handshake the SASL tokens travel as bare size-prefixed frames (no Kafka header); after v1
they travel inside SaslAuthenticate requests. SaslHandshake is never flexible (Kafka 2.8);
SaslAuthenticate v1 adds ``session_lifetime_ms`` to the answer (0 = no re-authentication
required, KIP-368) and v2 is flexible.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokers.core.protocol.header import flexible_from
from brokers.core.protocol.schema import BYTES, INT16, INT64, STRING, ArrayOf, Message, f

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


@dataclass(slots=True)
class SaslHandshakeRequest(Message):
    API_KEY = SASL_HANDSHAKE
    VERSIONS = (0, 1)
    FLEXIBLE = flexible_from(SASL_HANDSHAKE)
    mechanism: str = f(STRING, "0+")


@dataclass(slots=True)
class SaslHandshakeResponse(Message):
    API_KEY = SASL_HANDSHAKE
    VERSIONS = (0, 1)
    FLEXIBLE = flexible_from(SASL_HANDSHAKE)
    error_code: int = f(INT16, "0+")
    mechanisms: list[str] = f(ArrayOf(STRING), "0+")


@dataclass(slots=True)
class SaslAuthenticateRequest(Message):
    API_KEY = SASL_AUTHENTICATE
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(SASL_AUTHENTICATE)
    auth_bytes: bytes = f(BYTES, "0+")


@dataclass(slots=True)
class SaslAuthenticateResponse(Message):
    API_KEY = SASL_AUTHENTICATE
    VERSIONS = (0, 2)
    FLEXIBLE = flexible_from(SASL_AUTHENTICATE)
    error_code: int = f(INT16, "0+")
    error_message: str | None = f(STRING, "0+", nullable="0+", default=None)
    auth_bytes: bytes = f(BYTES, "0+")
    session_lifetime_ms: int = f(INT64, "1+")
