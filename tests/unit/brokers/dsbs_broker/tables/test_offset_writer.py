"""The offsets file's writer thread: line format, group commit, durability order, compaction."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from brokers.core import fsyncs
from brokers.core.coordinator import OffsetAndMetadata, TopicPartition
from brokers.dsbs_broker.packets.wire import OffsetEntry
from brokers.dsbs_broker.tables.offset_writer import OffsetWriter
from brokers.dsbs_broker.tables.offsets import OffsetLog, OffsetTable, encode_lines, entry_to_json


def test_encode_lines_is_exactly_json_dumps_of_each_entry():
    es = [OffsetEntry('g"r\\p\u00e9', "t\n", 3, 2**40, -1, 1_700_000_000_000, None, 2**62, 7),
          OffsetEntry("g", "t", 0, 0, 5, -1, "m\u2603\x00", 1, 0)]
    assert encode_lines(es) == "".join(json.dumps(entry_to_json(e)) + "\n" for e in es)
    assert encode_lines([]) == ""


def _commit(t: OffsetTable, off: int, partition: int = 0) -> list[OffsetEntry]:
    t.commit("g", {TopicPartition("t", partition): OffsetAndMetadata(off)}, 1000)
    pending, t.unpersisted = t.unpersisted, []
    return pending


def _replay(path) -> dict[tuple[str, str, int], int]:
    log = OffsetLog(path)
    try:
        return {(e.group, e.topic, e.partition): e.offset for e in log.open()}
    finally:
        log.close()


@pytest.mark.filesystem
def test_concurrent_commits_share_fsyncs_and_are_acked_only_once_synced(tmp_path, monkeypatch):
    real_fsync = fsyncs.os.fsync
    gate = threading.Event()
    calls = []

    def slow_fsync(fd: int) -> None:
        calls.append(fd)
        gate.wait(5)
        real_fsync(fd)

    async def scenario() -> None:
        log = OffsetLog(tmp_path / "o.jsonl")
        log.open()
        t = OffsetTable(1)
        monkeypatch.setattr(fsyncs.os, "fsync", slow_fsync)
        w = OffsetWriter(log, asyncio.get_running_loop())
        first = w.submit(_commit(t, 1), fsync=True, live=t.entries, wait=True)
        while not calls:  # the thread is now inside the first fsync
            await asyncio.sleep(0.001)
        rest = [w.submit(_commit(t, off, off % 3), fsync=True, live=t.entries, wait=True)
                for off in range(2, 12)]
        await asyncio.sleep(0.05)
        assert first is not None and not first.done()
        assert not any(f.done() for f in rest)  # nothing acknowledged before it is durable
        gate.set()
        await asyncio.gather(first, *rest)
        # The ten commits queued during the first fsync rode one more (group commit).
        assert len(calls) == 2
        await w.close()
        assert w.closed and not log.is_open
        assert len(calls) == 3  # close fsyncs once more

    asyncio.run(scenario())
    assert _replay(tmp_path / "o.jsonl") == {("g", "t", 0): 9, ("g", "t", 1): 10,
                                              ("g", "t", 2): 11}


@pytest.mark.filesystem
def test_compaction_uses_the_snapshot_and_keeps_later_commits(tmp_path):
    async def scenario() -> None:
        log = OffsetLog(tmp_path / "o.jsonl")
        log.open()
        t = OffsetTable(1)
        w = OffsetWriter(log, asyncio.get_running_loop())
        futs = []
        # Two keys: compaction is due past 4 * 2 + 1000 lines; a burst without awaiting puts
        # the snapshot job and the ones after it into the same batches.
        for off in range(1100):
            futs.append(w.submit(_commit(t, off, off % 2), fsync=False, live=t.entries,
                                 wait=True))
        await asyncio.gather(*futs)
        await w.close()
        assert log.lines < 200

    asyncio.run(scenario())
    path = tmp_path / "o.jsonl"
    assert len(path.read_text().splitlines()) < 200
    assert _replay(path) == {("g", "t", 0): 1098, ("g", "t", 1): 1099}


@pytest.mark.filesystem
def test_a_failed_write_fails_the_waiting_commits(tmp_path):
    async def scenario() -> None:
        log = OffsetLog(tmp_path / "o.jsonl")  # never opened: every write raises
        t = OffsetTable(1)
        w = OffsetWriter(log, asyncio.get_running_loop())
        fut = w.submit(_commit(t, 1), fsync=True, live=t.entries, wait=True)
        with pytest.raises(RuntimeError, match="not open"):
            await fut  # type: ignore[misc]
        assert w.submit(_commit(t, 2), fsync=False, live=t.entries, wait=False) is None
        with pytest.raises(RuntimeError):
            await w.close()
        with pytest.raises(RuntimeError, match="closed"):
            w.submit([], fsync=True, live=t.entries, wait=True)

    asyncio.run(scenario())
