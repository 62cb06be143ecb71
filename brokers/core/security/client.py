"""A client's side of a secured listener: its settings and the SASL exchange, sans-IO.

``ClientSecurity`` is what a client needs to reach a TLS or SASL listener: the protocol, the
CA it trusts, and (SASL) a mechanism, user and password. ``SaslClientExchange`` is the
client's half of Kafka's SASL exchange as a state machine: it returns the next request
(SaslHandshake v1, then SaslAuthenticate v1 carrying PLAIN's or SCRAM's tokens) and takes each
answer, until ``next`` returns None (authenticated) or raises ``AuthenticationError``. The
harness's blocking probe and the load client's asyncio connection both drive it.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from pathlib import Path

from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from brokers.core.protocol.schema import Message
from brokers.core.security.listeners import SecurityProtocol
from brokers.core.security.plain import client_token
from brokers.core.security.scram import HASHES, ScramClient, ScramError
from brokers.core.security.tls import client_context

HANDSHAKE_VERSION, AUTHENTICATE_VERSION = 1, 1
Request = tuple[int, int, Message]  # (api key, version, body)


class AuthenticationError(ConnectionError):
    """The broker refused the client's credentials (or could not prove it knows them)."""


@dataclass(frozen=True)
class ClientSecurity:
    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    # PEM CA the client trusts for the broker's certificate (TLS protocols).
    cafile: Path | None = None
    mechanism: str = "SCRAM-SHA-512"
    username: str = ""
    password: str = field(default="", repr=False)

    def ssl_context(self) -> ssl.SSLContext | None:
        return client_context(self.cafile) if self.protocol.tls else None

    def librdkafka_properties(self) -> dict[str, str]:
        """The same settings as a librdkafka client (confluent-kafka, kcat -F) reads them."""
        props = {"security.protocol": self.protocol.value}
        if self.protocol.tls and self.cafile is not None:
            props["ssl.ca.location"] = str(self.cafile)
        if self.protocol.sasl:
            props.update({"sasl.mechanism": self.mechanism, "sasl.username": self.username,
                          "sasl.password": self.password})
        return props


class SaslClientExchange:
    def __init__(self, security: ClientSecurity) -> None:
        if security.mechanism != "PLAIN" and security.mechanism not in HASHES:
            raise AuthenticationError(f"SASL mechanism {security.mechanism!r} is not one this "
                                      f"client speaks")
        self._sec = security
        self._scram = (ScramClient(security.mechanism, security.username, security.password)
                       if security.mechanism in HASHES else None)
        self._step = 0

    def first(self) -> Request:
        return (ApiKey.SASL_HANDSHAKE, HANDSHAKE_VERSION,
                SaslHandshakeRequest(self._sec.mechanism))

    def next(self, response: Message) -> Request | None:
        """The request after ``response`` (the answer to the previous one), or None once
        authenticated."""
        self._step += 1
        if isinstance(response, SaslHandshakeResponse):
            if response.error_code:
                raise AuthenticationError(
                    f"SASL mechanism {self._sec.mechanism} refused (error "
                    f"{response.error_code}; the broker offers {', '.join(response.mechanisms)})")
            token = (self._scram.first() if self._scram is not None
                     else client_token(self._sec.username, self._sec.password))
            return self._authenticate(token)
        if not isinstance(response, SaslAuthenticateResponse):
            raise AuthenticationError(f"unexpected answer {type(response).__name__}")
        if response.error_code:
            raise AuthenticationError(response.error_message
                                      or f"SASL error {response.error_code}")
        try:
            if self._scram is None or self._step == 3:
                if self._scram is not None:
                    self._scram.verify(response.auth_bytes)
                return None
            return self._authenticate(self._scram.final(response.auth_bytes))
        except ScramError as exc:
            raise AuthenticationError(f"SCRAM exchange failed: {exc}") from None

    @staticmethod
    def _authenticate(token: bytes) -> Request:
        return (ApiKey.SASL_AUTHENTICATE, AUTHENTICATE_VERSION, SaslAuthenticateRequest(token))
