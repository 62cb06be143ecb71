"""Partition logs: RecordBatch v2 bytes on disk exactly as producers sent them.

Layout map:

* ``batch_header.py`` - what the broker accepts of a batch, read from its header (layout:
  ``protocol/records.py``): lengths, magic, CRC-32C, offset/count consistency, and the
  16-byte prefix patch (baseOffset, batchLength, partitionLeaderEpoch).
* ``index.py``        - the sparse offset + time index of one segment and its file form.
* ``segment.py``      - one ``<base>.log`` file: zero-copy append (pwritev), reads of whole
  batches, the CRC-validating recovery scan, index persistence, deletion.
* ``open_files.py``   - ``OpenSegments``: the LRU budget of open segment descriptors.
* ``log.py``          - ``PartitionLog``: ordered contiguous segments, roll-over by size, flush
  policy, recovery on open, time/size retention, the log start offset DeleteRecords moves; the
  first disk error takes the data directory offline (never retried). It implements the seam
  the handlers see, ``logs.PartitionLogLike``, whose ``append`` answers a ``logs.AppendResult``.
* ``manager.py``      - ``LogManager``: ``<data_dir>/<topic>-<partition>/`` directories, the data
  directory lock (unless the broker took it), flush/retention across partitions, a deleted
  topic's directories (renamed ``<topic>-<p>.<id>-delete``, then removed).

On-disk layout of one partition directory (Kafka's naming)::

    00000000000000000000.log        batches, baseOffset rewritten, otherwise client bytes
    00000000000000000000.index      (relative offset u32, position u32) every ~index_interval
    00000000000000000000.timeindex  (max timestamp before the entry i64, relative offset u32)
    00000000000000004711.log        next segment, named by its base offset
    ...
    log-start-offset                the log start offset, once DeleteRecords moved it

Storage is synchronous and single-threaded (the broker's event loop calls it); the flush policy
decides when ``os.fdatasync`` runs: inside ``append`` (``every_batch``), from the broker's timer
via ``LogManager.flush_dirty`` (``interval_ms``), or never except on roll/close (``os``) and
when the descriptor budget closes a segment with unflushed appends.
"""

from brokers.core.storage.log import PartitionLog
from brokers.core.storage.manager import LogManager

__all__ = ["LogManager", "PartitionLog"]
