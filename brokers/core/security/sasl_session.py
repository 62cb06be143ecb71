"""The SASL exchange of one connection, as a Kafka broker runs it: a sans-IO state machine.

Phases, and what each accepts (anything else ends the connection, as Kafka's
SaslServerAuthenticator does):

* ``HANDSHAKE``: ApiVersions (handed to the dispatcher: clients ask before authenticating)
  and SaslHandshake. A mechanism that is not enabled is answered UNSUPPORTED_SASL_MECHANISM
  with the enabled list, then the connection is closed. A SaslAuthenticate is answered
  ILLEGAL_SASL_STATE and closed; any other request is closed without an answer (Kafka cannot
  answer it either: it has not parsed it).
* ``AUTHENTICATE`` (after SaslHandshake v1): SaslAuthenticate requests carry the tokens. A
  failed exchange is answered SASL_AUTHENTICATION_FAILED (the reason goes to the log only) and
  closed; a second SaslHandshake is answered ILLEGAL_SASL_STATE and closed.
* ``TOKENS`` (after SaslHandshake v0): the tokens come as bare frames and go back as bare
  frames; a failure closes the connection without an answer.
* ``DONE``: authenticated; the connection stops asking the session anything.

``receive`` returns a ``Step`` saying what to write, whether to close, and what to count.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from brokers.core.errors import (
    IllegalSaslState,
    ProtocolViolation,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanism,
)
from brokers.core.protocol.api import ApiKey, is_served, response_frame
from brokers.core.protocol.framing import frame as make_frame
from brokers.core.protocol.header import RequestHeader, peek_header
from brokers.core.protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from brokers.core.protocol.primitives import Parts
from brokers.core.protocol.schema import Message
from brokers.core.security.mechanisms import (
    AuthenticationFailed,
    MechanismRegistry,
    ServerMechanism,
)

_M = TypeVar("_M", bound=Message)

# sasl.server.max.receive.size: the largest frame read before the client has authenticated.
MAX_UNAUTHENTICATED_FRAME = 512 * 1024


class Phase(Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    TOKENS = "tokens"
    DONE = "done"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Step:
    # Frame to write (before closing, when ``close`` is set too).
    reply: Parts | None = None
    # Hand this frame to the dispatcher as on a plaintext connection (ApiVersions).
    forward: bool = False
    # Close the connection (after ``reply``); the reason, for the log.
    close: str | None = None
    # The client is now authenticated as this user.
    user: str | None = None
    # A wrong password or a failed exchange (counted), as opposed to a protocol error.
    failed: bool = False


class SaslSession:
    def __init__(self, registry: MechanismRegistry) -> None:
        self._registry = registry
        self.phase = Phase.HANDSHAKE
        self._mechanism: ServerMechanism | None = None
        self._mechanism_name = ""
        self.user: str | None = None

    def receive(self, frame: memoryview) -> Step:
        if self.phase is Phase.TOKENS:
            return self._token(bytes(frame))
        if self.phase is Phase.DONE:
            return Step(forward=True)
        if self.phase is Phase.CLOSED:
            return Step(close="frame after the SASL exchange ended")
        api_key, version, correlation_id = peek_header(frame)
        if api_key == ApiKey.API_VERSIONS and self.phase is Phase.HANDSHAKE:
            return Step(forward=True)
        if api_key == ApiKey.SASL_HANDSHAKE:
            handshake = self._decode(frame, api_key, version, SaslHandshakeRequest)
            if self.phase is not Phase.HANDSHAKE:
                return self._end(response_frame(
                    correlation_id, api_key, version,
                    SaslHandshakeResponse(IllegalSaslState.code, list(self._registry.enabled))),
                    "a second SaslHandshake")
            return self._handshake(handshake, correlation_id, version)
        if api_key == ApiKey.SASL_AUTHENTICATE:
            authenticate = self._decode(frame, api_key, version, SaslAuthenticateRequest)
            if self.phase is not Phase.AUTHENTICATE:
                return self._end(response_frame(
                    correlation_id, api_key, version, SaslAuthenticateResponse(
                        IllegalSaslState.code, "SaslAuthenticate before SaslHandshake v1")),
                    "SaslAuthenticate before SaslHandshake v1")
            return self._authenticate(authenticate, correlation_id, version)
        return self._end(None, f"api key {api_key} before authentication")

    def _decode(self, frame: memoryview, api_key: int, version: int, cls: type[_M]) -> _M:
        if not is_served(api_key, version):
            self.phase = Phase.CLOSED
            raise ProtocolViolation(f"api key {api_key} v{version} is not supported")
        _header, body_at = RequestHeader.decode(frame)
        return cls.decode(frame[body_at:], version)

    def _end(self, reply: Parts | None, reason: str, failed: bool = False) -> Step:
        self.phase = Phase.CLOSED
        return Step(reply=reply, close=reason, failed=failed)

    def _handshake(self, request: SaslHandshakeRequest, correlation_id: int,
                   version: int) -> Step:
        enabled = list(self._registry.enabled)
        mechanism = self._registry.new(request.mechanism)
        if mechanism is None:
            return self._end(response_frame(
                correlation_id, ApiKey.SASL_HANDSHAKE, version,
                SaslHandshakeResponse(UnsupportedSaslMechanism.code, enabled)),
                f"SASL mechanism {request.mechanism[:40]!r} is not enabled")
        self._mechanism, self._mechanism_name = mechanism, request.mechanism
        self.phase = Phase.AUTHENTICATE if version >= 1 else Phase.TOKENS
        return Step(reply=response_frame(correlation_id, ApiKey.SASL_HANDSHAKE, version,
                                         SaslHandshakeResponse(0, enabled)))

    def _step(self, token: bytes) -> bytes:
        assert self._mechanism is not None  # set by the handshake that opened this phase
        return self._mechanism.step(token)

    def _authenticate(self, request: SaslAuthenticateRequest, correlation_id: int,
                      version: int) -> Step:
        try:
            answer = self._step(request.auth_bytes)
        except AuthenticationFailed as exc:
            message = (f"Authentication failed during authentication due to invalid "
                       f"credentials with SASL mechanism {self._mechanism_name}")
            return self._end(response_frame(
                correlation_id, ApiKey.SASL_AUTHENTICATE, version,
                SaslAuthenticateResponse(SaslAuthenticationFailed.code, message)),
                f"authentication failed: {exc}", failed=True)
        reply = response_frame(correlation_id, ApiKey.SASL_AUTHENTICATE, version,
                               SaslAuthenticateResponse(0, None, answer, 0))
        return self._advance(reply)

    def _token(self, token: bytes) -> Step:
        try:
            answer = self._step(token)
        except AuthenticationFailed as exc:
            return self._end(None, f"authentication failed: {exc}", failed=True)
        return self._advance(make_frame([answer]))

    def _advance(self, reply: Parts) -> Step:
        assert self._mechanism is not None
        if not self._mechanism.complete:
            return Step(reply=reply)
        self.phase = Phase.DONE
        self.user = self._mechanism.username
        return Step(reply=reply, user=self.user)

