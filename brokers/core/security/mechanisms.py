"""The seam between the SASL session and a mechanism, and the registry of enabled ones.

A ``ServerMechanism`` takes the client's tokens one by one and answers each; it raises
``AuthenticationFailed`` when the client cannot be let in, and says when it is ``complete``.
"""

from __future__ import annotations

import secrets
from typing import Protocol

from brokers.core.security.credentials import Credentials
from brokers.core.security.plain import PlainError, PlainServer
from brokers.core.security.scram import HASHES, ScramError, ScramServer

PLAIN = "PLAIN"
MECHANISMS = (PLAIN, *HASHES)


class AuthenticationFailed(Exception):
    """The client is not let in; the message is for the broker's log, never the client."""


class ServerMechanism(Protocol):
    complete: bool
    username: str | None

    def step(self, token: bytes) -> bytes:
        """The answer to one client token; AuthenticationFailed ends the exchange."""


class _Plain:
    def __init__(self, credentials: Credentials) -> None:
        self._server = PlainServer(credentials.passwords)
        self.complete = False
        self.username: str | None = None

    def step(self, token: bytes) -> bytes:
        if self.complete:
            raise AuthenticationFailed("PLAIN token after authentication")
        try:
            self._server.authenticate(token)
        except PlainError as exc:
            raise AuthenticationFailed(str(exc)) from None
        self.complete, self.username = True, self._server.username
        return b""


class _Scram:
    def __init__(self, mechanism: str, credentials: Credentials, decoy_secret: bytes) -> None:
        self._server = ScramServer(mechanism, credentials.scram.get(mechanism, {}),
                                   decoy_secret)
        self._steps = 0
        self.complete = False
        self.username: str | None = None

    def step(self, token: bytes) -> bytes:
        self._steps += 1
        try:
            if self._steps == 1:
                return self._server.first(token)
            if self._steps == 2:
                answer = self._server.final(token)
                self.complete, self.username = True, self._server.username
                return answer
        except ScramError as exc:
            raise AuthenticationFailed(f"{self._server.mechanism}: {exc}") from None
        raise AuthenticationFailed("SCRAM token after authentication")


class MechanismRegistry:
    """The mechanisms a listener enables, each backed by the same credentials."""

    def __init__(self, enabled: tuple[str, ...], credentials: Credentials) -> None:
        self.enabled = enabled
        self._credentials = credentials
        self._decoy_secret = secrets.token_bytes(32)

    def new(self, name: str) -> ServerMechanism | None:
        """A fresh exchange of mechanism ``name``; None when it is not enabled."""
        if name not in self.enabled:
            return None
        if name == PLAIN:
            return _Plain(self._credentials)
        return _Scram(name, self._credentials, self._decoy_secret)
