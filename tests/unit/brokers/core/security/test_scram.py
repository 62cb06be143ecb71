"""SCRAM (RFC 5802 / RFC 7677) and PLAIN, both sides, sans-IO: the RFC's own exchange, wrong
passwords, unknown users, and arbitrary bytes that must fail cleanly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.security import scram
from brokers.core.security.plain import PlainError, PlainServer, client_token
from brokers.core.security.scram import ScramClient, ScramCredential, ScramError, ScramServer

# RFC 7677 section 3: user "user", password "pencil".
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT_B64 = "W22ZaJ0SNY7soEsUEjb6gQ=="
SERVER_FIRST = f"r={CLIENT_NONCE}{SERVER_NONCE},s={SALT_B64},i=4096".encode()
CLIENT_FINAL = (f"c=biws,r={CLIENT_NONCE}{SERVER_NONCE},"
                "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=").encode()
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
DECOY = b"d" * 32


def _server(mechanism: str = "SCRAM-SHA-256", password: str = "pencil",
            salt: bytes | None = None) -> ScramServer:
    cred = ScramCredential.derive(mechanism, password, salt)
    return ScramServer(mechanism, {"user": cred}, DECOY)


def test_client_matches_rfc7677() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    assert client.first() == f"n,,n=user,r={CLIENT_NONCE}".encode()
    assert client.final(SERVER_FIRST) == CLIENT_FINAL
    client.verify(SERVER_FINAL)


def test_server_matches_rfc7677(monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    monkeypatch.setattr(scram.secrets, "token_urlsafe", lambda _n: SERVER_NONCE)
    server = _server(salt=base64.b64decode(SALT_B64))
    assert server.first(f"n,,n=user,r={CLIENT_NONCE}".encode()) == SERVER_FIRST
    assert server.final(CLIENT_FINAL) == SERVER_FINAL
    assert server.username == "user"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_exchange_between_our_client_and_server(mechanism: str) -> None:
    server = _server(mechanism, "s3cret=,x")
    client = ScramClient(mechanism, "user", "s3cret=,x")
    client.verify(server.final(client.final(server.first(client.first()))))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_password_fails_at_the_proof(mechanism: str) -> None:
    server = _server(mechanism)
    client = ScramClient(mechanism, "user", "not-pencil")
    server_first = server.first(client.first())
    with pytest.raises(ScramError, match="invalid proof"):
        server.final(client.final(server_first))


def test_unknown_user_looks_like_a_known_one_until_the_proof() -> None:
    server = _server()
    client = ScramClient("SCRAM-SHA-256", "mallory", "pencil")
    first = server.first(client.first())
    assert b",s=" in first and first.endswith(b",i=4096")
    # The decoy salt is stable per user, as a real one is, and differs between users.
    salt = first.split(b",")[1]
    assert salt == ScramServer("SCRAM-SHA-256", {}, DECOY).first(
        b"n,,n=mallory,r=abc").split(b",")[1]
    assert salt != ScramServer("SCRAM-SHA-256", {}, DECOY).first(
        b"n,,n=trudy,r=abc").split(b",")[1]
    with pytest.raises(ScramError):
        server.final(client.final(first))


def test_client_refuses_a_server_that_cannot_prove_the_password() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=CLIENT_NONCE)
    client.final(SERVER_FIRST)
    with pytest.raises(ScramError):
        client.verify(b"v=" + b"A" * 44)


@pytest.mark.parametrize("message", [
    b"", b"p=tls-unique,,n=user,r=x", b"n,,r=abc,n=user", b"n,,n=user", b"n,a=other,n=user,r=x",
    b"n,,n=us=er,r=x", b"\xff\xfe", b"n,,n=user,r=" + b"x" * 5000,
])
def test_malformed_client_first_is_refused(message: bytes) -> None:
    with pytest.raises(ScramError):
        _server().first(message)


def test_a_client_nonce_repeated_in_front_is_accepted_as_kafka_does() -> None:
    """librdkafka 2.0 (kcat on Debian 12) sends r=<client nonce><client nonce><server part>;
    Kafka checks that the nonce ends with the one it sent, and so do we."""
    import base64
    import hashlib
    import hmac

    server = _server()
    first = server.first(f"n,,n=user,r={CLIENT_NONCE}".encode()).decode()
    attrs = dict(a.split("=", 1) for a in first.split(","))
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", base64.b64decode(attrs["s"]), 4096)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    without_proof = f"c=biws,r={CLIENT_NONCE}{attrs['r']}"
    auth = f"n=user,r={CLIENT_NONCE},{first},{without_proof}".encode()
    signature = hmac.digest(hashlib.sha256(client_key).digest(), auth, "sha256")
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server.final(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    assert server.username == "user"


def test_client_final_must_carry_our_nonce_and_binding() -> None:
    server = _server()
    server.first(f"n,,n=user,r={CLIENT_NONCE}".encode())
    with pytest.raises(ScramError, match="nonce"):
        server.final(b"c=biws,r=other,p=AAAA")
    server = _server()
    server.first(f"n,,n=user,r={CLIENT_NONCE}".encode())
    with pytest.raises(ScramError, match="binding"):
        server.final(b"c=eSws,r=x,p=AAAA")


@settings(max_examples=300, deadline=None)
@given(first=st.binary(max_size=200), final=st.binary(max_size=200))
def test_any_bytes_fail_cleanly(first: bytes, final: bytes) -> None:
    server = _server()
    try:
        server.first(first)
        server.final(final)
    except ScramError:
        return
    pytest.fail("arbitrary bytes authenticated")


def test_plain() -> None:
    server = PlainServer({"alice": "a=b"})
    server.authenticate(client_token("alice", "a=b"))
    assert server.username == "alice"
    server.authenticate(b"alice\0alice\0a=b")  # authzid equal to the user is allowed
    for bad in (client_token("alice", "wrong"), client_token("bob", "a=b"),
                b"eve\0alice\0a=b", b"alice\0a=b", b"\0\0", b"\0alice\0a=b\0", b"\xff\0a\0b",
                b"\0alice\0" + b"x" * 5000):
        with pytest.raises(PlainError):
            PlainServer({"alice": "a=b"}).authenticate(bad)
