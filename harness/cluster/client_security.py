"""How the harness's own blocking clients (the readiness probe) reach a secured listener.

The settings and the SASL exchange are brokers/core/security/client.py's, shared with the
load client; here they are driven over a blocking socket: TLS first (the standard library's
ssl), then the exchange request by request. ``security_from_credentials_file`` is how the
harness logs in to a cluster it started: as the first user of the brokers' own file.
"""

from __future__ import annotations

import socket
import struct
from pathlib import Path

from brokers.core.protocol.api import decode_response, request_frame
from brokers.core.protocol.header import (
    RequestHeader,
    decode_response_header,
    response_header_flexible,
)
from brokers.core.protocol.schema import Message
from brokers.core.security.client import AuthenticationError, ClientSecurity, SaslClientExchange
from brokers.core.security.credentials import parse_credentials
from brokers.core.security.listeners import SecurityProtocol
from brokers.core.security.secret_file import read_secret_file

__all__ = ["AuthenticationError", "ClientSecurity", "connect", "security_from_credentials_file"]


def security_from_credentials_file(protocol: SecurityProtocol, cafile: Path | None,
                                   credentials: Path | None, mechanism: str) -> ClientSecurity:
    """The first user of a brokers' credentials file (the harness writes and owns it)."""
    if not protocol.sasl or credentials is None:
        return ClientSecurity(protocol, cafile)
    text = read_secret_file(credentials, "SASL credentials file", 1 << 20).decode()
    user, password = next(iter(parse_credentials(text).items()))
    return ClientSecurity(protocol, cafile, mechanism, user, password)


def connect(security: ClientSecurity, host: str, port: int, timeout_s: float) -> socket.socket:
    """A connected socket, TLS and SASL done: the next bytes are Kafka requests."""
    sock = socket.create_connection((host, port), timeout=timeout_s)
    try:
        ctx = security.ssl_context()
        if ctx is not None:
            sock = ctx.wrap_socket(sock, server_hostname=host)
        if security.protocol.sasl:
            exchange = SaslClientExchange(security)
            step: tuple[int, int, Message] | None = exchange.first()
            while step is not None:
                step = exchange.next(_call(sock, *step))
    except BaseException:
        sock.close()
        raise
    return sock


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
