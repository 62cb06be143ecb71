"""The harness's throwaway TLS material: a server context loads it, a client trusting the run's
CA completes a handshake with it (in memory, no socket), one trusting another CA does not."""

from __future__ import annotations

import ssl
import stat
from pathlib import Path

import pytest

from brokers.core.security.tls import client_context, server_context
from harness.cluster.certs import make_run_security

pytestmark = pytest.mark.filesystem


def _handshake(client: ssl.SSLContext, server: ssl.SSLContext) -> None:
    c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
    c = client.wrap_bio(c_in, c_out, server_hostname="127.0.0.1")
    s = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        done = 0
        for side in (c, s):
            try:
                side.do_handshake()
                done += 1
            except ssl.SSLWantReadError:
                pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if done == 2:
            return
    raise AssertionError("handshake did not finish")


def test_run_certificates_are_trusted_through_their_ca_only(tmp_path: Path) -> None:
    run = make_run_security(tmp_path / "a", users=("alice", "bob"))
    other = make_run_security(tmp_path / "b")
    server = server_context(run.server_pem, run.server_pem)
    _handshake(client_context(run.ca_pem), server)
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(client_context(other.ca_pem), server)
    for secret in (run.server_pem, run.credentials):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    users = dict(line.split("=", 1) for line in run.credentials.read_text().splitlines())
    assert set(users) == {"alice", "bob"} and len(set(users.values())) == 2


def test_a_server_ca_file_requires_client_certificates(tmp_path: Path) -> None:
    import trustme

    run = make_run_security(tmp_path / "a")
    clients = trustme.CA()
    clients_pem = tmp_path / "clients-ca.pem"
    clients.cert_pem.write_to_path(str(clients_pem))
    server = server_context(run.server_pem, run.server_pem, clients_pem)
    assert server.verify_mode is ssl.CERT_REQUIRED
    anonymous = client_context(run.ca_pem)
    with pytest.raises(ssl.SSLError):
        _handshake(anonymous, server)
    known = client_context(run.ca_pem)
    clients.issue_cert("client@example").configure_cert(known)
    _handshake(known, server)
