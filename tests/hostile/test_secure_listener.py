"""Hostile input at TLS and SASL listeners: the broker never dies and keeps serving.

One real broker process with every kind of listener (SASL_SSL first, SSL, SASL_PLAINTEXT,
PLAINTEXT). Each attack is followed by a check that the process is alive and that an honest,
authenticated client on every listener is still answered. The listener code is shared by both
twins (brokers/core), so the one-node broker stands for them here; the contract suite drives
the same listeners on zk and dsbs clusters with real clients. A broker whose certificate
has expired gets a process of its own.
"""

from __future__ import annotations

import json
import signal
import socket
import ssl
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from brokers.core.protocol.api import ApiKey, request_frame
from brokers.core.protocol.header import RequestHeader
from brokers.core.protocol.messages.metadata import MetadataRequest
from brokers.core.protocol.messages.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from brokers.core.protocol.primitives import join
from brokers.core.security.listeners import SecurityProtocol
from harness.cluster.client_security import AuthenticationError, ClientSecurity
from harness.cluster.kafka_probe import KafkaProbe
from harness.cluster.processes import ManagedProcess
from tests.support.brokers import RunningBroker
from tests.support.ops import eventually
from tests.support.security import SecurityFiles, make_security_files

pytestmark = [pytest.mark.integration, pytest.mark.hostile]

PROTOCOLS = ("SASL_SSL", "SSL", "SASL_PLAINTEXT", "PLAINTEXT")


@dataclass
class Secured:
    broker: RunningBroker
    ports: dict[str, int]
    files: SecurityFiles

    def client(self, protocol: str, mechanism: str = "SCRAM-SHA-256",
               password: str = "alice-secret") -> ClientSecurity:
        return ClientSecurity(SecurityProtocol(protocol), self.files.ca_pem, mechanism,
                              "alice", password)

    def connect_raw(self, protocol: str) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.ports[protocol]), timeout=10)

    def assert_serving(self) -> None:
        assert self.broker.process.poll() is None, "the broker died"
        for protocol in PROTOCOLS:
            with KafkaProbe("127.0.0.1", self.ports[protocol], timeout_s=10,
                            security=self.client(protocol)) as probe:
                assert probe.metadata([]).brokers


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("secure-listener")
    files = make_security_files(root / "tls")
    listeners = [a for p in PROTOCOLS for a in ("--listener", f"{p}://127.0.0.1:0")]
    argv = [sys.executable, "-m", "harness.cli", "broker", *listeners, "--data-dir",
            str(root / "data"), *files.broker_args("SASL_SSL")]
    proc = ManagedProcess(argv, name="secured broker", log_path=root / "broker.log").start()
    try:
        # One listener= line per listener, in order, before listening=.
        ports = {}
        for _ in PROTOCOLS:
            line = proc.wait_for_line("listener=", 30)
            protocol, _, address = line.split("=", 1)[1].partition("://")
            ports[protocol] = int(address.rsplit(":", 1)[1])
        line = proc.wait_for_line("listening=", 30)
        host, _, port = line.split("=", 1)[1].rpartition(":")
        assert int(port) == ports["SASL_SSL"]  # the first listener is the registered one
        yield Secured(RunningBroker(proc, host, int(port), root / "data"), ports, files)
    finally:
        proc.stop()


def _client_hello() -> bytes:
    """The first flight of a real TLS client (a ClientHello record)."""
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return outgoing.read()


def _closed(sock: socket.socket) -> bool:
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, ssl.SSLError):
        return True
    except TimeoutError:
        return False


def test_a_tls_client_on_the_plaintext_port(secured: Secured) -> None:
    with secured.connect_raw("PLAINTEXT") as sock:
        sock.sendall(_client_hello())  # its first bytes read as a huge frame length
        assert _closed(sock)
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        KafkaProbe("127.0.0.1", secured.ports["PLAINTEXT"], timeout_s=5,
                   security=secured.client("SSL")).close()
    secured.assert_serving()


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_truncated_client_hello_and_plaintext_on_tls_ports(secured: Secured,
                                                           protocol: str) -> None:
    hello = _client_hello()
    for cut in (1, 5, len(hello) // 2):
        with secured.connect_raw(protocol) as sock:
            sock.sendall(hello[:cut])  # and hang up mid-handshake
    with secured.connect_raw(protocol) as sock:
        sock.sendall(join(request_frame(RequestHeader(ApiKey.METADATA, 9, 1, "x"),
                                        MetadataRequest())))
        assert _closed(sock)
    with secured.connect_raw(protocol) as sock:
        sock.sendall(b"\x16\x03\x01\xff\xff" + b"\x00" * 64)  # a record header that lies
        assert _closed(sock)
    secured.assert_serving()


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_garbage_during_the_sasl_handshake(secured: Secured, protocol: str) -> None:
    def session() -> socket.socket:
        sock = secured.connect_raw(protocol)
        if "SSL" in protocol:
            from brokers.core.security.tls import client_context

            sock = client_context(secured.files.ca_pem).wrap_socket(
                sock, server_hostname="127.0.0.1")
        return sock

    attacks = [
        struct.pack(">i", 12) + b"\x00" * 12,  # api key 0 (Produce) before authenticating
        join(request_frame(RequestHeader(ApiKey.METADATA, 9, 1, "x"), MetadataRequest())),
        struct.pack(">i", 3) + b"abc",  # too short for a header
        struct.pack(">i", 1 << 20),  # a frame above the unauthenticated limit
        struct.pack(">i", -5),
        # A handshake, then a SaslAuthenticate whose token is garbage.
        join(request_frame(RequestHeader(ApiKey.SASL_HANDSHAKE, 1, 1, "x"),
                           SaslHandshakeRequest("SCRAM-SHA-512")))
        + join(request_frame(RequestHeader(ApiKey.SASL_AUTHENTICATE, 1, 2, "x"),
                             SaslAuthenticateRequest(b"\xff\xfen,,=,r"))),
        # A v0 handshake, then a bare token of random bytes.
        join(request_frame(RequestHeader(ApiKey.SASL_HANDSHAKE, 0, 1, "x"),
                           SaslHandshakeRequest("PLAIN"))) + struct.pack(">i", 5) + b"\xff" * 5,
    ]
    for data in attacks:
        with session() as sock:
            sock.sendall(data)
            assert _closed(sock), data[:32]
    secured.assert_serving()


def test_wrong_passwords_are_counted_and_right_ones_still_work(secured: Secured) -> None:
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        with pytest.raises(AuthenticationError):
            KafkaProbe("127.0.0.1", secured.ports["SASL_SSL"], timeout_s=5,
                       security=secured.client("SASL_SSL", mechanism, "guess"))
    secured.assert_serving()  # two SASL listeners: two authentications
    path = secured.broker.data_dir / "counters.json"
    path.unlink(missing_ok=True)
    secured.broker.process.signal(signal.SIGUSR1)
    doc = eventually(lambda: path.exists() and json.loads(path.read_text()), 10, "counters")
    assert doc["broker"]["sasl_authentication_failures"] >= 3
    assert doc["broker"]["sasl_authentications"] >= 2


def test_an_expired_certificate_is_refused_by_clients_and_the_broker_serves_on(
        tmp_path: Path) -> None:
    """A broker whose certificate has expired: every TLS client refuses it with a clean
    error; the broker stays up and its PLAINTEXT listener still serves."""
    import datetime

    import trustme

    ck = pytest.importorskip("confluent_kafka")
    files = make_security_files(tmp_path / "tls")
    ca = trustme.CA()
    past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=2)
    expired = ca.issue_cert("127.0.0.1", "localhost", not_before=past - datetime.timedelta(
        days=1), not_after=past)
    expired.private_key_and_cert_chain_pem.write_to_path(str(files.server_pem))
    ca.cert_pem.write_to_path(str(files.ca_pem))
    argv = [sys.executable, "-m", "harness.cli", "broker",
            "--listener", "SSL://127.0.0.1:0", "--listener", "PLAINTEXT://127.0.0.1:0",
            "--data-dir", str(tmp_path / "data"), *files.broker_args("SSL")]
    proc = ManagedProcess(argv, name="expired broker", log_path=tmp_path / "broker.log").start()
    try:
        ports = {}
        for _ in range(2):
            protocol, _, address = proc.wait_for_line("listener=", 30).split(
                "=", 1)[1].partition("://")
            ports[protocol] = int(address.rsplit(":", 1)[1])
        proc.wait_for_line("listening=", 30)
        with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
            KafkaProbe("127.0.0.1", ports["SSL"], timeout_s=5, security=ClientSecurity(
                SecurityProtocol.SSL, files.ca_pem)).close()
        reports: list = []
        producer = ck.Producer({"bootstrap.servers": f"127.0.0.1:{ports['SSL']}",
                                "security.protocol": "SSL", "ssl.ca.location": str(files.ca_pem),
                                "message.timeout.ms": 3000})
        producer.produce("never", b"x", on_delivery=lambda err, _msg: reports.append(err))
        producer.flush(10)
        assert len(reports) == 1 and reports[0] is not None
        assert proc.poll() is None
        with KafkaProbe("127.0.0.1", ports["PLAINTEXT"], timeout_s=10) as probe:
            assert probe.metadata([]).brokers
    finally:
        proc.stop()
