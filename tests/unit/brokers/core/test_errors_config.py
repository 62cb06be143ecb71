"""The error registry and config validation: pure logic, no I/O."""

import pytest

from brokers.core import errors
from brokers.core.config import (
    BrokerConfig,
    FlushMode,
    FlushPolicy,
    ListenerConfig,
    StorageConfig,
)
from brokers.core.coordinator import validate_topic_name


def test_every_registered_code_maps_back_to_its_class():
    for code in (1, 2, 3, 6, 16, 25, 27, 35, 87):
        cls = errors.error_for_code(code)
        assert cls is not None and cls.code == code


def test_code_zero_is_no_error_and_unknown_codes_are_unknown_server_error():
    assert errors.error_for_code(0) is None
    assert errors.error_for_code(9999) is errors.UnknownServerError


def test_retriable_flags_follow_the_protocol():
    assert errors.NotLeaderOrFollower.retriable
    assert errors.NotCoordinator.retriable
    assert not errors.OffsetOutOfRange.retriable
    assert not errors.MessageTooLarge.retriable


@pytest.mark.parametrize(
    ("text", "mode", "interval"),
    [("every_batch", FlushMode.EVERY_BATCH, 0), ("os", FlushMode.OS, 0),
     ("interval_ms:250", FlushMode.INTERVAL_MS, 250)],
)
def test_flush_policy_parses_the_three_spellings(text, mode, interval):
    policy = FlushPolicy.parse(text)
    assert (policy.mode, policy.interval_ms) == (mode, interval)
    assert str(policy) == text


@pytest.mark.parametrize("text", ["", "always", "interval_ms:", "interval_ms:0", "interval_ms:-5"])
def test_flush_policy_rejects_bad_spellings_with_a_user_error(text):
    with pytest.raises(errors.UserError, match="flush policy"):
        FlushPolicy.parse(text)


@pytest.mark.filesystem
def test_configs_reject_out_of_range_knobs(tmp_path):
    with pytest.raises(errors.UserError, match="segment_bytes"):
        StorageConfig(segment_bytes=10)
    with pytest.raises(errors.UserError, match="port"):
        BrokerConfig(node_id=0, host="127.0.0.1", port=70000, data_dir=tmp_path)
    with pytest.raises(errors.UserError, match="metadata_check"):
        BrokerConfig(node_id=0, host="127.0.0.1", port=0, data_dir=tmp_path,
                     metadata_check="sometimes")  # type: ignore[arg-type]
    for knob in ("max_connections", "max_connections_per_ip", "connections_max_idle_ms",
                 "queued_max_request_bytes"):
        with pytest.raises(errors.UserError, match=knob):
            ListenerConfig(**{knob: 0})
    with pytest.raises(errors.UserError, match="max_open_segments"):
        StorageConfig(max_open_segments=0)
    with pytest.raises(errors.UserError, match="default_partitions exceeds"):
        BrokerConfig(node_id=0, host="127.0.0.1", port=0, data_dir=tmp_path,
                     default_partitions=5, max_partitions_per_topic=4)


@pytest.mark.filesystem
def test_limits_that_do_not_fit_the_descriptor_limit_are_one_user_error(tmp_path, monkeypatch):
    from brokers.core import cli

    config = BrokerConfig(node_id=0, host="127.0.0.1", port=0, data_dir=tmp_path)
    need = (config.listener.max_connections + config.storage.max_open_segments
            + cli.FD_RESERVE)
    monkeypatch.setattr(cli.resource, "getrlimit", lambda _r: (256, need - 1))
    with pytest.raises(errors.UserError, match=r"--max-connections 1000 .* ulimit"):
        cli.reserve_descriptors(config)
    raised: list[tuple[int, int]] = []
    monkeypatch.setattr(cli.resource, "getrlimit", lambda _r: (256, need))
    monkeypatch.setattr(cli.resource, "setrlimit", lambda _r, v: raised.append(v))
    assert cli.reserve_descriptors(config) == need and raised == [(need, need)]


@pytest.mark.parametrize(
    ("name", "ok"),
    [("t", True), ("a.b-c_D9", True), ("x" * 249, True), ("x" * 250, False), ("", False),
     (".", False), ("..", False), ("a/b", False), ("a b", False), ("ünï", False)],
)
def test_kafka_topic_name_rule(name: str, ok: bool) -> None:
    if ok:
        validate_topic_name(name)
    else:
        with pytest.raises(errors.InvalidTopic):
            validate_topic_name(name)
