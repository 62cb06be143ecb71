"""The credentials file and what the broker keeps of it.

One ``user=password`` per line (the first ``=`` splits, so a password may contain one; blank
lines and lines starting with ``#`` are skipped); the file must be private to its owner
(``secret_file.py``). Kafka keeps PLAIN passwords in its JAAS file and SCRAM credentials in
ZooKeeper (``kafka-configs --add-config SCRAM-SHA-256=[password=...]``); here one file serves
both, so the same users work with every mechanism on both twins. At load each password becomes
a SCRAM credential per SCRAM mechanism (a fresh random salt, 4096 iterations), so a SCRAM
exchange never sees the password; PLAIN needs the password itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from brokers.core.errors import UserError
from brokers.core.security.scram import HASHES, ScramCredential

MAX_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class Credentials:
    passwords: dict[str, str] = field(repr=False)
    # mechanism -> user -> credential
    scram: dict[str, dict[str, ScramCredential]] = field(repr=False)

    @classmethod
    def from_passwords(cls, passwords: dict[str, str],
                       mechanisms: tuple[str, ...] = tuple(HASHES)) -> Credentials:
        scram = {m: {u: ScramCredential.derive(m, p) for u, p in passwords.items()}
                 for m in mechanisms if m in HASHES}
        return cls(dict(passwords), scram)


def parse_credentials(text: str, source: str = "credentials file") -> dict[str, str]:
    """user -> password; a malformed line is a UserError naming its number."""
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, password = line.partition("=")
        user = user.strip()
        if not sep or not user or not password:
            raise UserError(f"{source} line {number}: expected user=password")
        if user in out:
            raise UserError(f"{source} line {number}: user {user!r} appears twice")
        out[user] = password
    if not out:
        raise UserError(f"{source} names no user")
    return out


def load_credentials(path: Path, mechanisms: tuple[str, ...]) -> Credentials:
    from brokers.core.security.secret_file import read_secret_file

    data = read_secret_file(path, "SASL credentials file", MAX_FILE_BYTES)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"SASL credentials file {path} is not UTF-8") from None
    return Credentials.from_passwords(parse_credentials(text, f"SASL credentials file {path}"),
                                      mechanisms)
