"""The ``transactions`` block of a workload: the exactly-once study's cells and limits."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.schema import Ctx, defaults, given, keys

# The scenario of every session of a transactions workload (it lists none).
SCENARIO = "transactions"
# What each shape's session does (harness/studies/transactions/session.py).
SHAPES = {
    "produce": "a producer alone writes the records; a read_committed consumer reads them",
    "ctp": "consume-transform-produce: a read_committed consumer and a producer copy a "
           "filled input topic to the output, the input offsets committed with the output",
}
# Batches per transaction a workload may ask for: one transaction holds every batch in the
# producer's memory until its commit.
MAX_TXN_BATCHES = 10_000
# The comparison is of means over tries: fewer than this leaves intervals too wide to read.
MIN_TRIES = 3
# Workload keys of the paper's load that a transactions session does not use: it runs one
# producer (and for ctp one consumer) through confluent-kafka, not the load client.
_NOT_HERE = ("producer_mode", "window", "producer_partitions", "rate", "arrivals",
             "duration_s", "warmup_s")
# ... and the keys it uses with one value only, which the file must give (their defaults are
# the paper's three clients, which a manifest would then record wrongly).
_ONE = ("producers", "consumers")
# Studies whose sessions or load replace or reshape these (one session kind per workload).
_OTHER_STUDIES = ("faults", "metadata", "rate_search", "rate_fractions", "rtt_ms")


@dataclass(frozen=True)
class TxnCase:
    # produce | ctp (SHAPES).
    shape: str
    # Batches per transaction; without transactions, per flush of the idempotent producer.
    batches: int
    # False: the same unit of work without transactions (the comparison's other side).
    transactional: bool

    @property
    def name(self) -> str:
        """The cell's name (the cell id is it with the record size and batch appended)."""
        return f"{self.shape}-{'txn' if self.transactional else 'plain'}{self.batches}"


@dataclass(frozen=True)
class TransactionsPlan:
    # Batches per transaction, one cell each; a batch is a workload cell's batch of records.
    sizes: tuple[int, ...] = (1, 10, 100)
    # Which session shapes run (SHAPES), each at every size.
    shapes: tuple[str, ...] = ("produce", "ctp")
    # Run each cell also without transactions (an idempotent producer; ctp commits the
    # consumer's offsets after every batch), beside it in the same try.
    plain: bool = True
    # The producers' transaction.timeout.ms: a transaction left open this long is aborted by
    # its coordinator (well above any commit here; it bounds a client that died mid-session).
    transaction_timeout_ms: int = 60_000
    # The producers' linger.ms: how long a partly filled batch waits. Every batch is filled
    # before the next partition's begins, so this only delays a commit's last batch when the
    # client is slower than the broker.
    linger_ms: int = 5
    # The producers' retry.backoff.ms. A transaction's coordinator answers the next one's first
    # AddPartitionsToTxn with CONCURRENT_TRANSACTIONS until the previous one's markers are
    # written, and librdkafka asks again after this long: at its default (100 ms) that wait,
    # not the architecture, would set the pace of small transactions. Kafka's Java producer
    # waits 20 ms in this case.
    retry_backoff_ms: int = 20
    # Safety net, not a measurement knob: a session not done by then (filling, copying,
    # reading back) fails with one error line, and the run goes on.
    timeout_s: float = 600.0

    def cases(self) -> tuple[TxnCase, ...]:
        """Every cell of one record size and batch, in run order: per shape and size the
        transactional cell, then the same without (so the two sides of a ratio run close in
        time)."""
        flags = (True, False) if self.plain else (True,)
        return tuple(TxnCase(shape, size, txn) for shape in self.shapes for size in self.sizes
                     for txn in flags)


_KEYS = keys(TransactionsPlan)
_DEFAULTS = defaults(TransactionsPlan)


def _check_rest(ctx: Ctx, data: Mapping[str, Any], core: Mapping[str, Any]) -> None:
    """What the rest of the file must say for these sessions to mean what they say."""
    for key in _OTHER_STUDIES:
        if data.get(key) is not None:
            raise ctx.fail("transactions", f"runs sessions of its own; it does not combine "
                           f"with {key}")
    for key in _NOT_HERE:
        if key in data:
            raise ctx.fail(key, "does not apply to transactions sessions (one producer, and "
                           "one consumer for ctp, per session, through confluent-kafka)")
    for key in _ONE:
        if core.get(key) != 1:
            raise ctx.fail(key, f"transactions sessions run one producer (and one consumer "
                           f"for ctp): give {key}: 1")
    if data.get("acks", -1) != -1:
        raise ctx.fail("acks", "idempotent and transactional producers write with acks=all: "
                       "give acks: -1 or leave it out")
    if tuple(core.get("client", ("twinbench",))) != ("twinbench",):
        raise ctx.fail("client", "transactions sessions run their own clients: leave it out")
    if data.get("security", "none") not in ("none", ["none"]):
        raise ctx.fail("security", "transactions sessions connect in plaintext only: leave "
                       "it out")
    if len(core.get("offset_commit", ())) > 1:
        raise ctx.fail("policies.offset_commit", "transactions sessions commit offsets their "
                       "own way (in the transaction, or after every batch without): sweep "
                       "nothing here")
    tries = core.get("tries")
    if isinstance(tries, int) and tries < MIN_TRIES:
        raise ctx.fail("tries", f"the study compares means over tries: give at least "
                       f"{MIN_TRIES} (got {tries}; --tries overrides it for a quick look)")


def _check_messages(ctx: Ctx, data: Mapping[str, Any], core: Mapping[str, Any],
                    sizes: tuple[int, ...]) -> None:
    """Every session moves the workload's ``messages`` in whole transactions, so a cell's
    transactions are all alike: the count must be a multiple of every transaction's records.
    The cells are read raw (the core checks them after the studies); a batch that is not a
    positive integer is left for that check."""
    messages = core.get("messages")
    cells = data.get("cells")
    if not isinstance(messages, int) or not isinstance(cells, list):
        return
    units: list[tuple[int, int]] = []
    for i, item in enumerate(cells):
        if not isinstance(item, dict):
            continue
        if "messages" in item:
            raise ctx.fail(f"cells[{i}].messages", "does not apply: every transactions "
                           "session moves the workload's messages")
        raw = item.get("batches")
        for b in raw if isinstance(raw, list) else [raw]:
            if isinstance(b, int) and not isinstance(b, bool) and b > 0:
                units += [(size, b) for size in sizes]
    every = math.lcm(*(size * b for size, b in units)) if units else 1
    for size, b in units:
        if messages % (size * b):
            raise ctx.fail("messages", f"{messages} records are not a whole number of "
                           f"transactions of {size} batches x {b} records ({size * b} "
                           f"records): give a multiple of {every}")


def parse(ctx: Ctx, data: Mapping[str, Any], core: Mapping[str, Any]
          ) -> TransactionsPlan | None:
    raw = data.get("transactions")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ctx.fail("transactions", "must be a mapping (sizes, shapes, plain, ...)")
    ctx.check_keys(raw, _KEYS, "transactions")
    sizes = tuple(ctx.integer("transactions.sizes", s, 1, MAX_TXN_BATCHES)
                  for s in ctx.string_list("transactions.sizes",
                                           given(raw, "sizes", _DEFAULTS)))
    shapes = tuple(ctx.choice("transactions.shapes", s, tuple(SHAPES))
                   for s in ctx.string_list("transactions.shapes",
                                            given(raw, "shapes", _DEFAULTS)))
    plain = given(raw, "plain", _DEFAULTS)
    if not isinstance(plain, bool):
        raise ctx.fail("transactions.plain", f"must be true or false, got {plain!r}")
    timeout_ms = ctx.integer("transactions.transaction_timeout_ms",
                             given(raw, "transaction_timeout_ms", _DEFAULTS), 1000, 900_000)
    linger = ctx.integer("transactions.linger_ms", given(raw, "linger_ms", _DEFAULTS), 0,
                         10_000)
    backoff = ctx.integer("transactions.retry_backoff_ms",
                          given(raw, "retry_backoff_ms", _DEFAULTS), 1, 10_000)
    timeout_s = ctx.number("transactions.timeout_s", given(raw, "timeout_s", _DEFAULTS))
    if timeout_s > 3600:
        raise ctx.fail("transactions.timeout_s", f"must be at most 3600 s, got {timeout_s:g}")
    _check_rest(ctx, data, core)
    _check_messages(ctx, data, core, sizes)
    return TransactionsPlan(sizes=sizes, shapes=shapes, plain=plain,
                            transaction_timeout_ms=timeout_ms, linger_ms=linger,
                            retry_backoff_ms=backoff, timeout_s=timeout_s)
