"""The cluster key file and the HMAC tag of authenticated gossip (no network)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokers.core.errors import UserError
from brokers.dsbs_broker.config import DsbsConfig
from brokers.dsbs_broker.packets import wire
from brokers.dsbs_broker.packets.auth import MIN_KEY_BYTES, TAG_BYTES, Authenticator, load_key_file
from brokers.dsbs_broker.packets.wire import Gossip, Header

KEY = b"k" * 32


def _key_file(tmp_path: Path, data: bytes, mode: int = 0o600) -> Path:
    p = tmp_path / "gossip.key"
    p.write_bytes(data)
    os.chmod(p, mode)
    return p


def _signed(auth: Authenticator) -> bytes:
    data, _ = wire.assemble(Header(1, 2, 3, 4), wire.encode_message(Gossip()),
                            limit=1400 - TAG_BYTES, flags=wire.FLAG_HMAC)
    return auth.sign(data)


@pytest.mark.filesystem
def test_key_file_is_read_with_trailing_whitespace_removed(tmp_path):
    text = b"ab" * 32
    assert load_key_file(_key_file(tmp_path, text + b"\n")) == text
    raw = bytes(range(40))
    assert load_key_file(_key_file(tmp_path, raw)) == raw


@pytest.mark.filesystem
@pytest.mark.parametrize(("make", "message"), [
    (lambda d: d / "absent.key", "No such file"),
    (lambda d: d, "not a regular file"),
    (lambda d: _key_file(d, b"short\n"), f"at least {MIN_KEY_BYTES}"),
    (lambda d: _key_file(d, b"x" * 64, 0o644), "open to other users (mode 0644); chmod 600"),
    (lambda d: _key_file(d, b"x" * 64, 0o640), "open to other users"),
    (lambda d: _key_file(d, b"x" * 5000), "larger than 4096"),
])
def test_bad_key_files_are_one_line_errors(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(UserError, match=re.escape(message)) as e:
        load_key_file(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)


def test_config_checks_the_key_and_exclusive_insecure_mode():
    with pytest.raises(UserError, match="at least 32"):
        DsbsConfig(gossip_key=b"short")
    with pytest.raises(UserError, match="exclude each other"):
        DsbsConfig(gossip_key=KEY, gossip_insecure=True)
    assert "kkkk" not in repr(DsbsConfig(gossip_key=KEY))  # never printed


def test_signed_packets_verify_and_any_change_does_not():
    auth = Authenticator(KEY)
    pkt = _signed(auth)
    assert len(pkt) <= 1400
    body = auth.verify(pkt)
    assert body == pkt[:-TAG_BYTES] and wire.decode(body, flags=wire.FLAG_HMAC)
    for i in range(len(pkt)):
        bad = bytearray(pkt)
        bad[i] ^= 0x10
        assert auth.verify(bytes(bad)) is None, f"byte {i} is not covered"
    assert Authenticator(b"j" * 32).verify(pkt) is None  # another cluster's key
    assert auth.verify(pkt[:-1]) is None and auth.verify(pkt + b"x") is None
    unflagged = bytearray(pkt)
    unflagged[3] = 0
    assert auth.verify(bytes(unflagged)) is None


@given(st.binary(max_size=1500))
def test_random_datagrams_never_verify(data):
    assert Authenticator(KEY).verify(data) is None
