"""LogManager: directory layout, topic name safety, reload, flush and retention fan-out."""

import pytest

from brokers.core.config import FlushMode, FlushPolicy, StorageConfig
from brokers.core.errors import InvalidTopic, UnknownTopicOrPartition, UserError
from brokers.core.storage import LogManager
from brokers.core.storage.manager import parse_partition_dir
from tests.support.batches import build_batch


@pytest.mark.filesystem
def test_layout_and_reload(tmp_path):
    m = LogManager(tmp_path, StorageConfig())
    a = m.get_or_create("orders", 0)
    assert m.get_or_create("orders", 0) is a
    m.get_or_create("orders", 1).append(build_batch([b"x", b"y"]))
    m.get_or_create("my.topic-with-dash_1", 12)
    a.append(build_batch([b"1"]))
    assert m.get("nope", 0) is None
    assert (tmp_path / "orders-0" / "00000000000000000000.log").exists()
    assert (tmp_path / "my.topic-with-dash_1-12").is_dir()
    assert m.partitions() == [("my.topic-with-dash_1", 12), ("orders", 0), ("orders", 1)]
    m.close()

    (tmp_path / "not a partition").mkdir()
    (tmp_path / "stray-file-3").write_text("")
    m2 = LogManager(tmp_path, StorageConfig())
    assert m2.load_existing() == [("my.topic-with-dash_1", 12), ("orders", 0), ("orders", 1)]
    assert m2.get("orders", 1).log_end_offset == 2
    assert m2.get("orders", 0).log_end_offset == 1
    m2.close()


@pytest.mark.filesystem
@pytest.mark.parametrize("topic", ["", ".", "..", "../etc", "a/b", "a\\b", "x" * 250, "nul\0",
                                   "spa ce", "ünï"])
def test_unsafe_topic_names_are_refused(tmp_path, topic):
    m = LogManager(tmp_path, StorageConfig())
    with pytest.raises(InvalidTopic):
        m.get_or_create(topic, 0)
    m.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".storage.lock"]


@pytest.mark.filesystem
def test_negative_partition_refused(tmp_path):
    m = LogManager(tmp_path, StorageConfig())
    with pytest.raises(UnknownTopicOrPartition):
        m.get_or_create("t", -1)
    m.close()


def test_parse_partition_dir():
    assert parse_partition_dir("a-b-3") == ("a-b", 3)
    assert parse_partition_dir("t-0") == ("t", 0)
    for bad in ("t", "t-", "-3", "t-x", "..-1", "t-3.deleted", "t-٣"):
        assert parse_partition_dir(bad) is None


@pytest.mark.filesystem
def test_flush_dirty_counts_logs_flushed(tmp_path):
    m = LogManager(tmp_path, StorageConfig(flush=FlushPolicy(FlushMode.INTERVAL_MS, 10)))
    m.get_or_create("t", 0).append(build_batch([b"a"]))
    m.get_or_create("t", 1).append(build_batch([b"a"]))
    m.get_or_create("t", 2)
    assert m.flush_dirty() == 2
    assert m.flush_dirty() == 0
    m.close()


@pytest.mark.filesystem
def test_retention_fans_out(tmp_path):
    m = LogManager(tmp_path, StorageConfig(segment_bytes=1024, retention_ms=10))
    for p in range(2):
        log = m.get_or_create("t", p)
        for i in range(20):
            log.append(build_batch([b"v" * 60], base_timestamp=1000 + i))
    assert m.enforce_retention(10**12) >= 2
    for p in range(2):
        assert m.get("t", p).log_start_offset > 0
    m.close()


@pytest.mark.filesystem
def test_second_manager_on_same_dir_is_refused(tmp_path):
    m = LogManager(tmp_path, StorageConfig())
    with pytest.raises(UserError, match="in use"):
        LogManager(tmp_path, StorageConfig())
    m.close()
    m.close()  # idempotent
    LogManager(tmp_path, StorageConfig()).close()


@pytest.mark.filesystem
def test_delete_topic_removes_its_partitions_open_or_not_and_nothing_else(tmp_path):
    m = LogManager(tmp_path, StorageConfig())
    m.get_or_create("gone", 0).append(build_batch([b"x"]))
    m.get_or_create("gone-1", 0).append(build_batch([b"kept"]))  # a name that extends it
    m.get_or_create("kept", 0)
    m.close()
    m = LogManager(tmp_path, StorageConfig())
    m.get_or_create("gone", 1)  # one opened, gone-0 only on disk
    assert m.delete_topic("gone") == 2
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["gone-1-0", "kept-0"]
    assert m.get("gone", 1) is None and m.delete_topic("gone") == 0
    # A new topic of the name starts empty.
    assert m.get_or_create("gone", 0).log_end_offset == 0
    m.close()


@pytest.mark.filesystem
def test_a_deletion_interrupted_by_a_crash_is_finished_at_the_next_start(tmp_path):
    m = LogManager(tmp_path, StorageConfig())
    m.get_or_create("gone", 0).append(build_batch([b"x"]))
    m.close()
    (tmp_path / "gone-0").rename(tmp_path / "gone-0.0123abcd-delete")  # renamed, not removed
    m = LogManager(tmp_path, StorageConfig())
    assert m.load_existing() == []
    assert list(tmp_path.glob("*-delete")) == []
    m.close()
