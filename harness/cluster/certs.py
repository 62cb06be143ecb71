"""Throwaway TLS material and SASL users for a run, made with the ``cryptography`` package.

A fresh CA (EC P-256, valid one day) signs one server certificate for 127.0.0.1 and localhost;
the key never leaves the run's directory (files mode 0600). The users file holds one random
password per user in the broker's ``user=password`` format.

``SECURITY_LEVELS`` are the names users give a cluster's security (`twinbench cluster
--security`, a workload's ``security:``), and ``cluster_settings`` what each means for the
brokers' listeners, with this module's files: one definition for the CLI and the driver.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Security level -> the listener protocol of every broker.
SECURITY_LEVELS: dict[str, str] = {"none": "PLAINTEXT", "tls": "SSL", "sasl_ssl": "SASL_SSL"}
# Mechanisms a throwaway-secured cluster offers; clients (the harness's, the load client)
# use the first, as Kafka's own SCRAM setups do.
THROWAWAY_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")


@dataclass(frozen=True)
class RunSecurity:
    # Certificate chain and its key in one PEM file (the broker takes it as both).
    server_pem: Path
    ca_pem: Path
    credentials: Path


def _private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def make_run_security(directory: Path, users: tuple[str, ...] = ("twinbench",)) -> RunSecurity:
    # Imported here: the level names above are read by workload parsing and the CLI, which
    # should not pay for loading the X.509 machinery.
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "twinbench run CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([
                x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .sign(ca_key, hashes.SHA256()))
    out = RunSecurity(directory / "server.pem", directory / "ca.pem", directory / "users")
    _private(out.server_pem, key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()) + cert.public_bytes(serialization.Encoding.PEM))
    out.ca_pem.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _private(out.credentials, "".join(
        f"{user}={secrets.token_urlsafe(18)}\n" for user in users).encode())
    return out


def cluster_settings(level: str, files: RunSecurity | None) -> dict[str, Any]:
    """The ``ClusterSpec`` security fields of a security level (``files`` may be None only
    for ``none``)."""
    protocol = SECURITY_LEVELS[level]
    if protocol == "PLAINTEXT":
        return {}
    assert files is not None, "a secured cluster needs its certificates and users"
    return {"security_protocol": protocol, "ssl_certfile": files.server_pem,
            "ssl_keyfile": files.server_pem, "ssl_ca_location": files.ca_pem,
            "sasl_mechanisms": THROWAWAY_MECHANISMS, "sasl_credentials_file": files.credentials}
