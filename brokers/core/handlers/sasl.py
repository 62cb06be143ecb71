"""SaslHandshake and SaslAuthenticate where no SASL exchange is under way.

On a SASL listener the connection's SaslSession answers both until the client has
authenticated (brokers/core/security/); a request that reaches the dispatcher instead came on
a listener without SASL or after authentication, and gets ILLEGAL_SASL_STATE, as from Kafka.
"""

from __future__ import annotations

from brokers.core.errors import IllegalSaslState
from brokers.core.handlers.context import BrokerContext, Call
from brokers.core.protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)


def handle_sasl_handshake(
    ctx: BrokerContext, call: Call, req: SaslHandshakeRequest
) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=IllegalSaslState.code, mechanisms=[])


def handle_sasl_authenticate(
    ctx: BrokerContext, call: Call, req: SaslAuthenticateRequest
) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(
        error_code=IllegalSaslState.code,
        error_message="no SASL exchange on this connection (not a SASL listener, or already "
        "authenticated)")
