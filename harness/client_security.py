"""How the harness's own clients connect to a secured listener, and how other clients can.

``ClientSecurity`` is one client's side of a listener: its security protocol, the CA it
trusts, and (SASL) a mechanism, user and password. ``connect`` opens a socket to a broker and
does what the protocol asks before the first request: the TLS handshake (the standard
library's ssl), then the SASL exchange (SaslHandshake v1 and SaslAuthenticate, with the SCRAM
and PLAIN client sides of brokers/core/security). ``librdkafka_properties`` is the same
setting as the properties a librdkafka client (confluent-kafka, kcat -F) reads.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path

from brokers.core.errors import UserError
from brokers.core.protocol.api import ApiKey, decode_response, request_frame
from brokers.core.protocol.header import (
    RequestHeader,
    decode_response_header,
    response_header_flexible,
)
from brokers.core.protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from brokers.core.protocol.schema import Message
from brokers.core.security.credentials import parse_credentials
from brokers.core.security.listeners import SecurityProtocol
from brokers.core.security.plain import client_token
from brokers.core.security.scram import HASHES, ScramClient, ScramError
from brokers.core.security.secret_file import read_secret_file
from brokers.core.security.tls import client_context

_HANDSHAKE_V, _AUTHENTICATE_V = 1, 1


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

    @classmethod
    def from_credentials_file(cls, protocol: SecurityProtocol, cafile: Path | None,
                              credentials: Path | None, mechanism: str) -> ClientSecurity:
        """The first user of a brokers' credentials file (the harness writes and owns it)."""
        if not protocol.sasl or credentials is None:
            return cls(protocol, cafile)
        text = read_secret_file(credentials, "SASL credentials file", 1 << 20).decode()
        user, password = next(iter(parse_credentials(text).items()))
        return cls(protocol, cafile, mechanism, user, password)

    def librdkafka_properties(self) -> dict[str, str]:
        props = {"security.protocol": self.protocol.value}
        if self.protocol.tls and self.cafile is not None:
            props["ssl.ca.location"] = str(self.cafile)
        if self.protocol.sasl:
            props.update({"sasl.mechanism": self.mechanism, "sasl.username": self.username,
                          "sasl.password": self.password})
        return props

    def connect(self, host: str, port: int, timeout_s: float) -> socket.socket:
        """A connected socket, TLS and SASL done: the next bytes are Kafka requests."""
        sock = socket.create_connection((host, port), timeout=timeout_s)
        try:
            if self.protocol.tls:
                sock = client_context(self.cafile).wrap_socket(sock, server_hostname=host)
            if self.protocol.sasl:
                _authenticate(sock, self)
        except BaseException:
            sock.close()
            raise
        return sock


def _authenticate(sock: socket.socket, sec: ClientSecurity) -> None:
    shake = _call(sock, ApiKey.SASL_HANDSHAKE, _HANDSHAKE_V, SaslHandshakeRequest(sec.mechanism))
    assert isinstance(shake, SaslHandshakeResponse)
    if shake.error_code:
        raise AuthenticationError(f"SASL mechanism {sec.mechanism} refused (error "
                                  f"{shake.error_code}; the broker offers "
                                  f"{', '.join(shake.mechanisms)})")
    if sec.mechanism == "PLAIN":
        _token(sock, client_token(sec.username, sec.password))
        return
    if sec.mechanism not in HASHES:
        raise UserError(f"SASL mechanism {sec.mechanism!r} is not one the harness speaks")
    scram = ScramClient(sec.mechanism, sec.username, sec.password)
    try:
        server_first = _token(sock, scram.first())
        scram.verify(_token(sock, scram.final(server_first)))
    except ScramError as exc:
        raise AuthenticationError(f"SCRAM exchange failed: {exc}") from None


def _token(sock: socket.socket, token: bytes) -> bytes:
    answer = _call(sock, ApiKey.SASL_AUTHENTICATE, _AUTHENTICATE_V,
                   SaslAuthenticateRequest(token))
    assert isinstance(answer, SaslAuthenticateResponse)
    if answer.error_code:
        raise AuthenticationError(answer.error_message or f"SASL error {answer.error_code}")
    return answer.auth_bytes


def _call(sock: socket.socket, api_key: int, version: int, request: Message) -> Message:
    sock.sendall(b"".join(bytes(p) for p in request_frame(
        RequestHeader(api_key, version, 0, "twinbench"), request)))
    size = struct.unpack(">i", _read(sock, 4))[0]
    frame = _read(sock, size)
    _, at = decode_response_header(frame, response_header_flexible(api_key, version))
    return decode_response(api_key, version, frame[at:])


def _read(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)
