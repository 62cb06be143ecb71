"""What the metrics read from decoded requests and their responses: Kafka's topic metrics and
its error rates, as counts the Prometheus endpoint turns into rates.

Installed as the request dispatcher's ``observer`` only while the broker serves metrics
(``--metrics``); without it nothing here runs. Kafka's names, mapped:

* ``BrokerTopicMetrics BytesInPerSec`` / ``MessagesInPerSec`` (per topic): the record-batch
  bytes and records of every partition a Produce request appended (its answer carries no
  error; with acks=0 there is no answer and every partition counts), records read off each
  batch header's record count, never from the records;
* ``BytesOutPerSec``: record-batch bytes a consumer's Fetch returned, per topic; a follower's
  fetch counts as ``ReplicationBytesOutPerSec`` instead, as in Kafka;
* ``RequestMetrics ErrorsPerSec`` (per request type and error): every non-zero error code in a
  response, at any depth (a partition's, a topic's, the response's own), by API and Kafka's
  error name. Kafka counts ``error=NONE`` too; a rate of successes is the request rate here.

Per request this walks the response's structs once (no record is decoded) and reads one header
per produced batch.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from brokers.core.errors import CorruptMessage, error_for_code
from brokers.core.protocol.api import ApiKey
from brokers.core.protocol.records import iter_batches
from brokers.core.protocol.schema import Message, Struct

_PRODUCE, _FETCH = int(ApiKey.PRODUCE), int(ApiKey.FETCH)
# Field names per struct class, computed once per class.
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def error_codes(struct: Struct, out: list[int]) -> None:
    """Append every non-zero ``error_code`` of ``struct`` and the structs inside it."""
    for name in _fields(type(struct)):
        value = getattr(struct, name)
        if name == "error_code":
            if value:
                out.append(value)
        elif isinstance(value, Struct):
            error_codes(value, out)
        elif isinstance(value, list) and value and isinstance(value[0], Struct):
            for item in value:
                error_codes(item, out)


def records_in(data: memoryview | bytes | None) -> int:
    """Records in the whole batches of ``data``, from their headers."""
    if not data:
        return 0
    try:
        return sum(h.records_count for h in iter_batches(data))
    except CorruptMessage:
        return 0  # refused by the append anyway: such a partition carries an error


class ResponseMeter:
    """Counts per topic and per (API, error); ``observe`` is the dispatcher's observer."""

    def __init__(self) -> None:
        # topic -> [bytes in, messages in, bytes out, replication bytes out]
        self.topics: dict[str, list[int]] = {}
        # (api key, error code) -> responses' occurrences
        self.errors: dict[tuple[int, int], int] = {}

    def observe(self, api_key: int, request: Any, response: Message | None) -> None:
        if api_key == _PRODUCE:
            self._produced(request, response)
        elif api_key == _FETCH and response is not None:
            self._fetched(request, response)
        if response is not None:
            codes: list[int] = []
            error_codes(response, codes)
            for code in codes:
                key = (api_key, code)
                self.errors[key] = self.errors.get(key, 0) + 1

    def _topic(self, name: str) -> list[int]:
        stats = self.topics.get(name)
        if stats is None:
            stats = self.topics[name] = [0, 0, 0, 0]
        return stats

    def _produced(self, request: Any, response: Message | None) -> None:
        failed: set[tuple[str, int]] = set()
        if response is not None:
            failed = {(t.name, p.index) for t in response.responses  # type: ignore[attr-defined]
                      for p in t.partition_responses if p.error_code}
        for t in request.topic_data:
            stats = None
            for p in t.partition_data:
                if (t.name, p.index) in failed or not p.records:
                    continue
                stats = stats or self._topic(t.name)
                stats[0] += len(p.records)
                stats[1] += records_in(p.records)

    def _fetched(self, request: Any, response: Message) -> None:
        slot = 3 if request.replica_id >= 0 else 2
        for t in response.responses:  # type: ignore[attr-defined]
            n = sum(len(p.records) for p in t.partitions if p.records)
            if n:
                self._topic(t.topic)[slot] += n

    def forget_topic(self, name: str) -> None:
        """A deleted topic's series go, as Kafka removes a deleted topic's metrics."""
        self.topics.pop(name, None)

    def error_counts(self) -> dict[tuple[int, str], int]:
        """(API key, Kafka error name; the number for a code the registry lacks) ->
        occurrences."""
        out: dict[tuple[int, str], int] = {}
        for (api, code), n in self.errors.items():
            cls = error_for_code(code)
            out[(api, cls.wire_name if cls is not None and cls.code == code else str(code))] = n
        return out
