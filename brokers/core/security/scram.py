"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them (KIP-84).

Sans-IO: each side is an object fed the peer's message and returning its own. The primitives
are the standard library's: ``hashlib.pbkdf2_hmac`` for the salted password, ``hmac`` for the
keys and signatures, ``hmac.compare_digest`` for every comparison. No channel binding (the
client's GS2 header must be ``n,,`` or ``n,a=<authzid>,`` with authzid equal to the user, as
Kafka requires) and no extensions but the ones Kafka clients may send (ignored: delegation
tokens are not supported, so ``tokenauth=true`` fails like a wrong password).

The server answers an unknown user exactly as a known one up to the final message (a salt
derived from the user name under a per-process secret, Kafka's iteration count), so a client
cannot tell "no such user" from "wrong password".
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Literal

Mechanism = Literal["SCRAM-SHA-256", "SCRAM-SHA-512"]
HASHES: dict[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's default and minimum for SCRAM credentials.
ITERATIONS = 4096
_NONCE_BYTES = 24
_MAX_MESSAGE = 4096


class ScramError(Exception):
    """The exchange failed: malformed message, wrong proof, unknown user. The text is for the
    log; the client is told only that authentication failed."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the server keeps of a password (RFC 5802 section 3): never the password."""

    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes

    @classmethod
    def derive(cls, mechanism: str, password: str, salt: bytes | None = None,
               iterations: int = ITERATIONS) -> ScramCredential:
        h = HASHES[mechanism]
        salt = salt if salt is not None else secrets.token_bytes(16)
        salted = hashlib.pbkdf2_hmac(h, _saslprep(password), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", h)
        return cls(salt, iterations, hashlib.new(h, client_key).digest(),
                   hmac.digest(salted, b"Server Key", h))


def _saslprep(text: str) -> bytes:
    # SASLprep (RFC 4013) is the identity on printable ASCII, which is what Kafka clients send
    # in practice; other input is taken as its UTF-8 bytes, as Kafka's own ScramFormatter does.
    return text.encode("utf-8")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ScramError("bad base64") from None


def _attributes(text: str) -> list[tuple[str, str]]:
    out = []
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or len(key) != 1:
            raise ScramError(f"bad attribute {part[:40]!r}")
        out.append((key, value))
    return out


def _decode_name(text: str) -> str:
    # RFC 5802 saslname: "," and "=" travel as "=2C" and "=3D"; any other "=" is malformed.
    if "=" in text.replace("=2C", "").replace("=3D", ""):
        raise ScramError("bad escape in the user name")
    return text.replace("=2C", ",").replace("=3D", "=")


def encode_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _text(token: bytes) -> str:
    if len(token) > _MAX_MESSAGE:
        raise ScramError(f"message of {len(token)} bytes")
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError("message is not UTF-8") from None


class ScramServer:
    """One server exchange: ``first(client_first)`` -> server-first, ``final(client_final)``
    -> server-final; then ``username`` is authenticated. Any failure raises ScramError and
    the exchange is over."""

    def __init__(self, mechanism: str, lookup: dict[str, ScramCredential],
                 decoy_secret: bytes) -> None:
        self.mechanism = mechanism
        self._hash = HASHES[mechanism]
        self._lookup = lookup
        self._decoy_secret = decoy_secret
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._gs2 = ""

    def first(self, token: bytes) -> bytes:
        text = _text(token)
        gs2_flag, sep, rest = text.partition(",")
        if not sep or gs2_flag not in ("n", "y"):
            # "p=..." asks for channel binding, which a TLS-terminating broker could offer but
            # Kafka does not.
            raise ScramError(f"unsupported GS2 flag {gs2_flag[:8]!r}")
        authzid, sep, bare = rest.partition(",")
        if not sep:
            raise ScramError("client-first has no bare part")
        attrs = _attributes(bare)
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise ScramError("client-first must start n=...,r=...")
        user = _decode_name(attrs[0][1])
        if authzid and authzid != f"a={encode_name(user)}":
            raise ScramError("authorization id differs from the user name")
        self._gs2 = f"{gs2_flag},{authzid},"
        self._client_first_bare = bare
        credential = self._lookup.get(user)
        if credential is None:
            # Same shape as a real answer; the final step then fails like a wrong password.
            salt = hmac.digest(self._decoy_secret, user.encode("utf-8"), "sha256")[:16]
            credential = ScramCredential(salt, ITERATIONS, b"", b"")
        self.username = user
        self._credential = credential
        self._nonce = attrs[1][1] + secrets.token_urlsafe(_NONCE_BYTES)
        self._server_first = (f"r={self._nonce},s={_b64(credential.salt)},"
                              f"i={credential.iterations}")
        return self._server_first.encode("ascii")

    def final(self, token: bytes) -> bytes:
        credential = self._credential
        if credential is None:
            raise ScramError("client-final before client-first")
        text = _text(token)
        without_proof, sep, proof_attr = text.rpartition(",p=")
        if not sep:
            raise ScramError("client-final has no proof")
        attrs = dict(_attributes(without_proof))
        if attrs.get("c") != _b64(self._gs2.encode("utf-8")):
            raise ScramError("channel binding does not match the GS2 header")
        # Kafka accepts a nonce that ends with the one it sent (ScramSaslServer), and must:
        # librdkafka 2.0 (Debian's kcat) sends its own nonce again in front of it. The nonce is
        # no secret; what matters is that this exchange's fresh server part is in it, and the
        # proof covers the message as sent.
        if not attrs.get("r", "").endswith(self._nonce):
            raise ScramError("nonce does not match")
        proof = _unb64(proof_attr)
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, without_proof)).encode("utf-8")
        signature = hmac.digest(credential.stored_key, auth_message, self._hash)
        if len(proof) != len(signature) or not credential.stored_key:
            raise ScramError(f"invalid proof for {self.username!r}")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._hash, client_key).digest(),
                                   credential.stored_key):
            raise ScramError(f"invalid proof for {self.username!r}")
        server_signature = hmac.digest(credential.server_key, auth_message, self._hash)
        return f"v={_b64(server_signature)}".encode("ascii")


class ScramClient:
    """The client's side, for the harness's own clients (the readiness probe) and the tests:
    ``first()``, ``final(server_first)``, ``verify(server_final)``."""

    def __init__(self, mechanism: str, username: str, password: str,
                 nonce: str | None = None) -> None:
        self._hash = HASHES[mechanism]
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(_NONCE_BYTES)
        self._bare = f"n={encode_name(username)},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = _text(server_first)
        attrs = dict(_attributes(text))
        nonce, salt, iterations = attrs.get("r", ""), attrs.get("s", ""), attrs.get("i", "")
        if not nonce.startswith(self._nonce) or not iterations.isdigit():
            raise ScramError("bad server-first message")
        if int(iterations) < ITERATIONS:
            raise ScramError(f"server asks for {iterations} iterations, fewer than {ITERATIONS}")
        h = self._hash
        salted = hashlib.pbkdf2_hmac(h, _saslprep(self._password), _unb64(salt), int(iterations))
        client_key = hmac.digest(salted, b"Client Key", h)
        stored_key = hashlib.new(h, client_key).digest()
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        signature = hmac.digest(stored_key, auth_message, h)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", h)
        self._server_signature = hmac.digest(server_key, auth_message, h)
        return f"{without_proof},p={_b64(proof)}".encode("ascii")

    def verify(self, server_final: bytes) -> None:
        attrs = dict(_attributes(_text(server_final)))
        if "e" in attrs:
            raise ScramError(f"server refused: {attrs['e']}")
        if not hmac.compare_digest(_unb64(attrs.get("v", "")), self._server_signature):
            raise ScramError("server signature does not verify: not the server we know")
