"""TLS contexts from PEM files, with the standard library's ssl module.

The server presents its certificate chain and key (Kafka's keystore, as PEM); with a CA file
it also asks clients for certificates signed by it (``ssl.client.auth=required``). TLS 1.2 is
the floor, as in Kafka's default ``ssl.enabled.protocols``. Every file problem is one
UserError line naming the file.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from brokers.core.errors import UserError


def server_context(certfile: Path, keyfile: Path, cafile: Path | None = None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(certfile, keyfile)
    except FileNotFoundError as exc:
        raise UserError(f"TLS certificate or key {exc.filename}: no such file") from None
    except (ssl.SSLError, OSError) as exc:
        raise UserError(f"TLS certificate {certfile} / key {keyfile} unusable: {exc}") from None
    if cafile is not None:
        _load_ca(ctx, cafile)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_context(cafile: Path | None, check_hostname: bool = True) -> ssl.SSLContext:
    """For the harness's own clients (the readiness probe): trust ``cafile`` (else the
    system's store) and check the broker's name, as librdkafka does by default."""
    ctx = ssl.create_default_context()
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if cafile is not None:
        _load_ca(ctx, cafile)
    ctx.check_hostname = check_hostname
    return ctx


def _load_ca(ctx: ssl.SSLContext, cafile: Path) -> None:
    try:
        ctx.load_verify_locations(cafile=str(cafile))
    except FileNotFoundError:
        raise UserError(f"TLS CA file {cafile}: no such file") from None
    except (ssl.SSLError, OSError) as exc:
        raise UserError(f"TLS CA file {cafile} unusable: {exc}") from None
