"""The per-connection SASL state machine (sans-IO): Kafka's phases, its errors, and garbage;
plus the listener syntax and the credentials file."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokers.core.errors import ProtocolViolation, UserError
from brokers.core.protocol.api import ApiKey, decode_response, request_frame
from brokers.core.protocol.header import (
    RequestHeader,
    decode_response_header,
    response_header_flexible,
)
from brokers.core.protocol.messages.api_versions import ApiVersionsRequest
from brokers.core.protocol.messages.metadata import MetadataRequest
from brokers.core.protocol.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from brokers.core.protocol.primitives import join
from brokers.core.protocol.schema import Message
from brokers.core.security.client import (
    AuthenticationError,
    ClientSecurity,
    SaslClientExchange,
)
from brokers.core.security.credentials import Credentials, parse_credentials
from brokers.core.security.listeners import Listener, SecurityProtocol
from brokers.core.security.mechanisms import MechanismRegistry
from brokers.core.security.plain import client_token
from brokers.core.security.sasl_session import Phase, SaslSession, Step
from brokers.core.security.scram import ScramClient

USERS = {"alice": "alice-secret"}
ALL = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.fixture(scope="module")
def registry() -> MechanismRegistry:
    return MechanismRegistry(ALL, Credentials.from_passwords(USERS))


def request(api_key: int, version: int, body: Message, correlation: int = 7) -> memoryview:
    """A request frame as the server's decoder hands it over (no length prefix)."""
    data = join(request_frame(RequestHeader(api_key, version, correlation, "t"), body))
    return memoryview(data[4:])


def answer(step: Step, api_key: int, version: int) -> Message:
    assert step.reply is not None
    data = join(step.reply)[4:]
    _, at = decode_response_header(data, response_header_flexible(api_key, version))
    return decode_response(api_key, version, data[at:])


def handshake(session: SaslSession, mechanism: str, version: int = 1) -> SaslHandshakeResponse:
    step = session.receive(request(ApiKey.SASL_HANDSHAKE, version,
                                   SaslHandshakeRequest(mechanism)))
    response = answer(step, ApiKey.SASL_HANDSHAKE, version)
    assert isinstance(response, SaslHandshakeResponse)
    return response


def authenticate(session: SaslSession, token: bytes, version: int = 2) -> tuple[
        Step, SaslAuthenticateResponse]:
    step = session.receive(request(ApiKey.SASL_AUTHENTICATE, version,
                                   SaslAuthenticateRequest(token)))
    response = answer(step, ApiKey.SASL_AUTHENTICATE, version)
    assert isinstance(response, SaslAuthenticateResponse)
    return step, response


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("version", [0, 1, 2])
def test_scram_through_sasl_authenticate(registry: MechanismRegistry, mechanism: str,
                                         version: int) -> None:
    session = SaslSession(registry)
    assert session.receive(request(ApiKey.API_VERSIONS, 3, ApiVersionsRequest(
        client_software_name="t", client_software_version="1"))).forward
    shake = handshake(session, mechanism)
    assert shake.error_code == 0 and shake.mechanisms == list(ALL)
    client = ScramClient(mechanism, "alice", "alice-secret")
    step, first = authenticate(session, client.first(), version)
    assert first.error_code == 0 and step.user is None and step.close is None
    step, final = authenticate(session, client.final(first.auth_bytes), version)
    client.verify(final.auth_bytes)
    assert step.user == "alice" and session.phase is Phase.DONE and not step.failed
    # Authenticated: every later frame is the dispatcher's.
    assert session.receive(request(ApiKey.METADATA, 9, MetadataRequest())).forward


def test_plain_with_handshake_v0_uses_bare_tokens(registry: MechanismRegistry) -> None:
    session = SaslSession(registry)
    handshake(session, "PLAIN", version=0)
    assert session.phase is Phase.TOKENS
    step = session.receive(memoryview(client_token("alice", "alice-secret")))
    assert step.user == "alice" and join(step.reply or []) == b"\0\0\0\0"


def test_wrong_password_is_answered_counted_and_closed(registry: MechanismRegistry) -> None:
    session = SaslSession(registry)
    handshake(session, "PLAIN")
    step, response = authenticate(session, client_token("alice", "guess"))
    assert response.error_code == 58  # SASL_AUTHENTICATION_FAILED
    assert "PLAIN" in (response.error_message or "") and "guess" not in str(response)
    assert step.failed and step.close and step.user is None


def test_wrong_password_on_bare_tokens_closes_without_answer(
        registry: MechanismRegistry) -> None:
    session = SaslSession(registry)
    handshake(session, "SCRAM-SHA-256", version=0)
    client = ScramClient("SCRAM-SHA-256", "alice", "nope")
    first = session.receive(memoryview(client.first()))
    server_first = join(first.reply or [])[4:]
    step = session.receive(memoryview(client.final(server_first)))
    assert step.failed and step.close and step.reply is None


def test_unknown_mechanism_lists_the_enabled_ones_and_closes(
        registry: MechanismRegistry) -> None:
    session = SaslSession(registry)
    step = session.receive(request(ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest("GSSAPI")))
    response = answer(step, ApiKey.SASL_HANDSHAKE, 1)
    assert isinstance(response, SaslHandshakeResponse)
    assert response.error_code == 33 and response.mechanisms == list(ALL)
    assert step.close and not step.failed


def test_a_request_before_authentication_closes_without_answer(
        registry: MechanismRegistry) -> None:
    session = SaslSession(registry)
    step = session.receive(request(ApiKey.METADATA, 9, MetadataRequest()))
    assert step.close and step.reply is None and not step.forward
    # Nothing more is accepted on that connection.
    assert session.receive(request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())).close


def test_authenticate_before_handshake_is_illegal_state(registry: MechanismRegistry) -> None:
    session = SaslSession(registry)
    step, response = authenticate(session, b"x", version=1)
    assert response.error_code == 34 and step.close


def test_second_handshake_is_illegal_state(registry: MechanismRegistry) -> None:
    session = SaslSession(registry)
    handshake(session, "PLAIN")
    step = session.receive(request(ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest("PLAIN")))
    response = answer(step, ApiKey.SASL_HANDSHAKE, 1)
    assert isinstance(response, SaslHandshakeResponse)
    assert response.error_code == 34 and step.close


def test_api_versions_during_the_exchange_closes(registry: MechanismRegistry) -> None:
    session = SaslSession(registry)
    handshake(session, "PLAIN")
    assert session.receive(request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest())).close


def test_only_enabled_mechanisms_are_offered() -> None:
    registry = MechanismRegistry(("SCRAM-SHA-512",), Credentials.from_passwords(USERS))
    session = SaslSession(registry)
    step = session.receive(request(ApiKey.SASL_HANDSHAKE, 1, SaslHandshakeRequest("PLAIN")))
    response = answer(step, ApiKey.SASL_HANDSHAKE, 1)
    assert isinstance(response, SaslHandshakeResponse)
    assert response.error_code == 33 and response.mechanisms == ["SCRAM-SHA-512"]


@settings(max_examples=300, deadline=None)
@given(frames=st.lists(st.binary(max_size=64), min_size=1, max_size=4),
       mechanism=st.sampled_from([*ALL, "X"]), version=st.sampled_from([0, 1]))
def test_garbage_in_any_phase_is_a_close_or_a_protocol_violation(
        registry: MechanismRegistry, frames: list[bytes], mechanism: str, version: int) -> None:
    session = SaslSession(registry)
    session.receive(request(ApiKey.SASL_HANDSHAKE, version, SaslHandshakeRequest(mechanism)))
    for data in frames:
        try:
            step = session.receive(memoryview(data))
        except ProtocolViolation:
            return
        assert step.user is None  # garbage never authenticates
        if step.close:
            return


def test_listener_syntax() -> None:
    assert Listener.parse("SASL_SSL://127.0.0.1:9093") == Listener(
        SecurityProtocol.SASL_SSL, "127.0.0.1", 9093)
    assert Listener.parse("ssl://[::1]:0") == Listener(SecurityProtocol.SSL, "::1", 0)
    assert Listener.parse("localhost:9092").protocol is SecurityProtocol.PLAINTEXT
    assert str(Listener.parse("SASL_PLAINTEXT://h:1")) == "SASL_PLAINTEXT://h:1"
    for bad in ("KERBEROS://h:1", "SSL://h", "SSL://:1", "SSL://h:99999"):
        with pytest.raises(UserError):
            Listener.parse(bad)


def test_credentials_file() -> None:
    assert parse_credentials("# users\nalice=a=b\n\n bob = x\n") == {"alice": "a=b",
                                                                      "bob": " x"}
    for bad, why in (("alice\n", "line 1"), ("a=1\na=2\n", "twice"), ("# none\n", "no user"),
                     ("=x\n", "line 1")):
        with pytest.raises(UserError, match=why):
            parse_credentials(bad)


@pytest.mark.parametrize("mechanism", ALL)
def test_our_client_exchange_against_the_session(registry: MechanismRegistry,
                                                 mechanism: str) -> None:
    """The load client's and probe's half (SaslClientExchange) against the broker's."""

    def run(password: str) -> SaslSession:
        session = SaslSession(registry)
        exchange = SaslClientExchange(ClientSecurity(
            SecurityProtocol.SASL_PLAINTEXT, None, mechanism, "alice", password))
        step: tuple[int, int, Message] | None = exchange.first()
        while step is not None:
            api_key, version, body = step
            step = exchange.next(answer(session.receive(request(api_key, version, body)),
                                        api_key, version))
        return session

    assert run("alice-secret").user == "alice"
    with pytest.raises(AuthenticationError, match=mechanism):
        run("wrong")
