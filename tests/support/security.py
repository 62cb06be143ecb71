"""Throwaway TLS material and SASL users for the security tests.

A fresh CA (trustme, on the ``cryptography`` package) signs a certificate for 127.0.0.1 and
localhost; a second, unrelated CA is what a client that trusts the wrong authority holds. The
credentials file is written mode 0600, as the broker demands.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

USERS = {"alice": "alice-secret", "bob": "b=b's secret"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class SecurityFiles:
    # The certificate chain and its key, in one PEM file (the broker takes it as both).
    server_pem: Path
    ca_pem: Path
    # A CA that signed nothing the brokers present.
    other_ca_pem: Path
    credentials: Path

    def broker_args(self, protocol: str) -> list[str]:
        """A broker's security options for a listener of ``protocol`` (as the harness's)."""
        args: list[str] = []
        if "SSL" in protocol:
            args += ["--ssl-certfile", str(self.server_pem), "--ssl-keyfile",
                     str(self.server_pem)]
        if protocol.startswith("SASL"):
            args += ["--sasl-mechanisms", ",".join(MECHANISMS),
                     "--sasl-credentials-file", str(self.credentials)]
        return args

    def spec_fields(self, protocol: str) -> dict[str, object]:
        """The ClusterSpec fields of a cluster whose listeners are ``protocol``."""
        return {"security_protocol": protocol, "ssl_certfile": self.server_pem,
                "ssl_keyfile": self.server_pem, "ssl_ca_location": self.ca_pem,
                "sasl_mechanisms": MECHANISMS, "sasl_credentials_file": self.credentials}

    def librdkafka(self, protocol: str, mechanism: str | None = None, user: str = "alice",
                   password: str | None = None) -> dict[str, str]:
        conf = {"security.protocol": protocol}
        if "SSL" in protocol:
            conf["ssl.ca.location"] = str(self.ca_pem)
        if mechanism is not None:
            conf.update({"sasl.mechanism": mechanism, "sasl.username": user,
                         "sasl.password": USERS[user] if password is None else password})
        return conf

    def kafka_python(self, protocol: str, mechanism: str | None = None, user: str = "alice",
                     password: str | None = None) -> dict[str, object]:
        conf: dict[str, object] = {"security_protocol": protocol}
        if "SSL" in protocol:
            conf["ssl_cafile"] = str(self.ca_pem)
        if mechanism is not None:
            conf.update({"sasl_mechanism": mechanism, "sasl_plain_username": user,
                         "sasl_plain_password": USERS[user] if password is None else password})
        return conf


def make_security_files(directory: Path) -> SecurityFiles:
    import trustme

    directory.mkdir(parents=True, exist_ok=True)
    ca, other = trustme.CA(), trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    files = SecurityFiles(directory / "server.pem", directory / "ca.pem",
                          directory / "other-ca.pem", directory / "credentials")
    server.private_key_and_cert_chain_pem.write_to_path(str(files.server_pem))
    ca.cert_pem.write_to_path(str(files.ca_pem))
    other.cert_pem.write_to_path(str(files.other_ca_pem))
    fd = os.open(files.credentials, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("# twinbench test users\n")
        f.writelines(f"{user}={password}\n" for user, password in USERS.items())
    return files
