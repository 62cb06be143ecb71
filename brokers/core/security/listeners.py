"""Listeners as Kafka users write them: ``PROTOCOL://HOST:PORT``.

A broker has one or more listeners; the first is the one it registers in the coordination
state, so Metadata names every broker by its first listener's address, whatever listener the
request came in on (Kafka keeps one address per listener name and answers with the listener
the request used; here the coordination state holds one address per broker). A client must
therefore speak the first listener's protocol; further listeners serve bootstrap and
single-broker use.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from brokers.core.errors import UserError


class SecurityProtocol(Enum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


@dataclass(frozen=True, slots=True)
class Listener:
    protocol: SecurityProtocol
    host: str
    # 0 picks a free port (reported on the listener= line).
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.protocol.value}://{host}:{self.port}"

    @classmethod
    def parse(cls, text: str) -> Listener:
        """``SASL_SSL://127.0.0.1:9093``; a bare ``HOST:PORT`` is PLAINTEXT."""
        scheme, sep, rest = text.partition("://")
        if not sep:
            scheme, rest = "PLAINTEXT", text
        try:
            protocol = SecurityProtocol(scheme.upper())
        except ValueError:
            names = ", ".join(p.value for p in SecurityProtocol)
            raise UserError(f"listener {text!r}: unknown security protocol {scheme!r} "
                            f"(one of {names})") from None
        host, sep, port = rest.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise UserError(f"listener {text!r}: expected PROTOCOL://HOST:PORT")
        return cls(protocol, host.strip("[]"), int(port))
