"""SaslServerConnection: a server connection that runs the SASL exchange before anything else.

Until the client has authenticated, every frame goes to the connection's ``SaslSession``
(ApiVersions excepted, which the session hands back to the dispatcher), frames are limited to
``MAX_UNAUTHENTICATED_FRAME`` bytes, and answers are written at once (nothing asynchronous is
served before authentication, so nothing can be queued ahead of them). Once authenticated the
connection rebinds ``_dispatch`` to the plain server's, so an authenticated request costs what
it costs on any other listener. ``SaslGate`` is what the connections of one listener share:
the enabled mechanisms and the counts the broker reports.
"""

from __future__ import annotations

import logging
import time

from brokers.core.errors import ProtocolViolation
from brokers.core.security.mechanisms import MechanismRegistry
from brokers.core.security.sasl_session import MAX_UNAUTHENTICATED_FRAME, SaslSession
from brokers.core.server import KafkaServer, ServerConnection

log = logging.getLogger("twinbench.sasl")


class SaslGate:
    """Per SASL listener: the mechanisms and what its connections counted."""

    def __init__(self, registry: MechanismRegistry) -> None:
        self.registry = registry
        self.authentications = 0
        self.failures = 0

    def connection(self, server: KafkaServer) -> SaslServerConnection:
        return SaslServerConnection(server, self)


class SaslServerConnection(ServerConnection):
    def __init__(self, server: KafkaServer, gate: SaslGate) -> None:
        super().__init__(server)
        self._gate = gate
        self._session = SaslSession(gate.registry)
        self._decoder.max_frame_bytes = min(server.max_frame_bytes, MAX_UNAUTHENTICATED_FRAME)

    def _dispatch(self, frame: memoryview) -> None:
        self.last_active = time.monotonic()
        try:
            step = self._session.receive(frame)
        except ProtocolViolation as exc:
            self.abort(f"bad request during SASL authentication: {exc}")
            return
        except Exception:
            log.exception("%s: SASL exchange failed; closing the connection", self._peer)
            self.abort("internal error")
            return
        if step.forward:
            super()._dispatch(frame)
            return
        if step.reply is not None and self._transport is not None:
            self._transport.writelines(step.reply)
        if step.failed:
            self._gate.failures += 1
        if step.close is not None:
            self.abort(step.close)
            return
        if step.user is not None:
            self._gate.authentications += 1
            log.info("%s: authenticated as %r", self._peer, step.user)
            self._decoder.max_frame_bytes = self._server.max_frame_bytes
            # From now on the plain server's path, with no per-request check.
            self._dispatch = super()._dispatch  # type: ignore[method-assign]
