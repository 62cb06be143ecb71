"""A bad quorum is refused before anything starts, in one line naming what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from brokers.core.errors import UserError
from brokers.raft_broker.config import RaftBrokerConfig, load_key_file

PEERS = {0: ("127.0.0.1", 9100), 1: ("127.0.0.1", 9101), 2: ("127.0.0.1", 9102),
         3: ("127.0.0.1", 9103)}
KEY = b"k" * 32


@pytest.mark.parametrize("fields, message", [
    ({"voters": ()}, "at least one voter"),
    ({"voters": (0, 1)}, "even number of voters"),
    ({"voters": (0, 0, 1)}, "name a node twice"),
    ({"voters": (0, 1, 7)}, r"voters \[7\] have no address"),
    ({"key": None}, "cluster key, or choose unauthenticated"),
    ({"key": b"short"}, "at least 32 bytes"),
    ({"session_timeout_s": 0.5}, "two heartbeats"),
    ({"attempt_timeout_s": 30.0}, "at most request_timeout_s"),
    ({"producer_id_block": 0}, "producer_id_block"),
    ({"listen_port": 70000}, "not a port"),
    ({"cluster_id": ""}, "1 to 255 printable"),
    ({"cluster_id": "a\nb"}, "1 to 255 printable"),
])
def test_a_bad_knob_is_one_clear_error(fields: dict, message: str) -> None:
    with pytest.raises(UserError, match=message):
        RaftBrokerConfig(**({"peers": PEERS, "voters": (0, 1, 2), "key": KEY} | fields))


def test_voters_and_learners_split_the_peers() -> None:
    config = RaftBrokerConfig(peers=PEERS, voters=(0, 1, 2), key=KEY)
    assert config.learners == (3,)
    config.check_member(3)
    with pytest.raises(UserError, match=r"node 5 is not among the raft peers \[0, 1, 2, 3\]"):
        config.check_member(5)


@pytest.mark.filesystem
def test_a_short_key_file_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "raft.key"
    path.write_bytes(b"tooshort\n")
    path.chmod(0o600)
    with pytest.raises(UserError, match=r"raft\.key: 8 bytes; at least 32"):
        load_key_file(path)
    path.write_bytes(b"x" * 40 + b"\n")
    assert load_key_file(path) == b"x" * 40
