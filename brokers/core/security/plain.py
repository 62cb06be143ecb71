"""SASL PLAIN (RFC 4616): one message, ``authzid NUL authcid NUL password``.

PLAIN sends the password itself, so it belongs on a TLS listener (SASL_SSL); on SASL_PLAINTEXT
it is as good as no password against anyone who can see the traffic. The comparison is
constant-time. As Kafka, an authorization id other than empty or the user name is refused.
"""

from __future__ import annotations

import hmac

_MAX_MESSAGE = 4096


class PlainError(Exception):
    """Malformed message or wrong credentials (text for the log only)."""


def client_token(username: str, password: str) -> bytes:
    return b"\0" + username.encode("utf-8") + b"\0" + password.encode("utf-8")


class PlainServer:
    def __init__(self, passwords: dict[str, str]) -> None:
        self._passwords = passwords
        self.username: str | None = None

    def authenticate(self, token: bytes) -> None:
        """Raise PlainError unless the token names a user with that password."""
        if len(token) > _MAX_MESSAGE:
            raise PlainError(f"message of {len(token)} bytes")
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise PlainError("expected authzid NUL username NUL password")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise PlainError("message is not UTF-8") from None
        if not user or not password:
            raise PlainError("empty user name or password")
        if authzid and authzid != user:
            raise PlainError("authorization id differs from the user name")
        expected = self._passwords.get(user)
        # Compared even for an unknown user (against itself), so timing does not tell.
        ok = hmac.compare_digest((expected or password).encode("utf-8"),
                                 password.encode("utf-8"))
        if expected is None or not ok:
            raise PlainError(f"wrong user name or password for {user!r}")
        self.username = user
