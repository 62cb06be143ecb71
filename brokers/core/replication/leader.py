"""The leader's side of one replicated partition: followers' progress, high watermark, ISR.

Sans-IO: the caller feeds it the leader's own appends and every follower Fetch (the fetch
offset is the follower's log end offset, as in Kafka), with the time; it answers with the new
high watermark when it moved, and proposes ISR changes the caller takes to its coordinator
(``brokers.core.isr_changes.IsrChanges``). While a proposal is in flight the high watermark
waits for the committed ISR and the proposed one alike (Kafka's "maximal ISR"): a shrink does
not let it advance before the store lists the smaller ISR, and a replica being added already
holds it back, since a leader elected from whichever ISR the store ends up with must have every
record below it.

Rules, as Kafka's:

* high watermark = the smallest log end offset among the ISR (the leader's included); it never
  moves back while this leader leads, and a follower whose log end is not known yet (no fetch
  since this leader took over) holds it where it is;
* a follower is caught up at a fetch whose offset reaches the leader's log end; one whose fetch
  offset reaches the leader's log end as of its previous fetch was caught up at that previous
  fetch. An ISR member not caught up for ``replica.lag.time.max.ms`` is proposed for removal;
* a follower outside the ISR joins it once its log end reaches the high watermark and the
  start of this leader's epoch (so it has truncated away whatever an older leader wrote);
* acks=-1 needs ``min.insync.replicas`` members in the ISR (NOT_ENOUGH_REPLICAS).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from brokers.core.errors import NotEnoughReplicas, NotLeaderOrFollower, OffsetOutOfRange

UNKNOWN_OFFSET = -1


@dataclass(slots=True)
class FollowerProgress:
    """What the leader knows of one follower (Kafka's Replica state on the leader)."""

    log_end_offset: int = UNKNOWN_OFFSET  # its last fetch offset; unknown before one
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_end: int = UNKNOWN_OFFSET  # the leader's log end at that fetch


# How long a leader waits after the store refused its ISR proposal before it proposes again
# (KRaft's leader backs off after INELIGIBLE_REPLICA alike). Short against
# replica.lag.time.max.ms: a needed shrink is late by at most this much.
REFUSED_BACKOFF_MS = 500


class LeaderPartition:
    """One partition led by this broker, from the moment it took over in ``leader_epoch``."""

    __slots__ = ("_followers", "_hw", "_isr", "_leo", "_pending", "_refused_at",
                 "epoch_start_offset", "leader_epoch", "leader_id", "replicas")

    def __init__(
        self, leader_id: int, leader_epoch: int, replicas: Iterable[int], isr: Iterable[int],
        *, log_end_offset: int, high_watermark: int, now_ms: int,
    ) -> None:
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.replicas = tuple(replicas)
        if leader_id not in self.replicas:
            raise ValueError(f"leader {leader_id} is not a replica of {self.replicas}")
        self._isr = (frozenset(isr) & frozenset(self.replicas)) | {leader_id}
        self._leo = log_end_offset
        # A new leader's log may end below the high watermark it learnt as a follower only if
        # its log was cut (it never is below a committed offset); never claim more than it has.
        self._hw = min(high_watermark, log_end_offset)
        # Where this leader's own records begin: a follower whose log ends before it may still
        # hold an older leader's uncommitted tail, so it cannot join the ISR yet.
        self.epoch_start_offset = log_end_offset
        # ISR members start caught up now, so a leader change does not shrink the ISR at once
        # (they get replica.lag.time.max.ms to fetch from the new leader).
        self._followers = {
            r: FollowerProgress(last_caught_up_ms=now_ms if r in self._isr else 0)
            for r in self.replicas if r != leader_id
        }
        self._pending: frozenset[int] | None = None
        # When the store last refused a proposal (ms), None if it never did: ``propose`` holds
        # back for REFUSED_BACKOFF_MS after it.
        self._refused_at: int | None = None

    @property
    def isr(self) -> frozenset[int]:
        return self._isr

    @property
    def high_watermark(self) -> int:
        return self._hw

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def change_in_flight(self) -> bool:
        """True while an ISR proposal awaits the coordinator's answer."""
        return self._pending is not None

    def follower(self, replica_id: int) -> FollowerProgress:
        try:
            return self._followers[replica_id]
        except KeyError:
            raise NotLeaderOrFollower(
                f"broker {replica_id} is not a follower of this partition "
                f"(replicas {list(self.replicas)})") from None

    # --- inputs -----------------------------------------------------------------------------
    def on_append(self, log_end_offset: int) -> int | None:
        """The leader's log now ends at ``log_end_offset`` or later; the new high watermark if
        it moved (only when the leader is the whole ISR). A leader's log never shrinks, so a
        smaller end changes nothing: a retried batch answered from its first copy reports
        where that copy ends, below later appends. Taken as the log end, it moved the end
        back, and every follower already past it was refused as past the leader's log end
        (OFFSET_OUT_OF_RANGE) from then on: the ISR shrank and never grew again."""
        if log_end_offset > self._leo:
            self._leo = log_end_offset
        return self._advance()

    def on_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> int | None:
        """A follower fetched from ``fetch_offset`` (so its log ends there); the new high
        watermark if it moved. Raises NotLeaderOrFollower for a broker that is no replica, and
        OffsetOutOfRange for an offset past this leader's log end: that follower's log holds
        records this leader does not have (another leader's), so its position says nothing of
        this log; counted, it would raise the high watermark over records the follower does
        not hold. It must truncate first (OffsetForLeaderEpoch), as Kafka's followers do."""
        if fetch_offset > self._leo:
            raise OffsetOutOfRange(f"replica {replica_id} fetched from {fetch_offset}, past "
                                   f"this leader's log end {self._leo}")
        f = self.follower(replica_id)
        if fetch_offset >= self._leo:
            f.last_caught_up_ms = max(f.last_caught_up_ms, now_ms)
        elif fetch_offset >= f.last_fetch_leader_end >= 0:
            f.last_caught_up_ms = max(f.last_caught_up_ms, f.last_fetch_ms)
        f.log_end_offset = fetch_offset
        f.last_fetch_ms = now_ms
        f.last_fetch_leader_end = self._leo
        counted = replica_id in self._isr or (
            self._pending is not None and replica_id in self._pending)
        return self._advance() if counted else None

    # --- the ISR ----------------------------------------------------------------------------
    def lagging(self, now_ms: int, max_lag_ms: int) -> frozenset[int]:
        """ISR followers not caught up for longer than ``max_lag_ms``."""
        return frozenset(
            r for r in self._isr if r != self.leader_id
            and now_ms - self._followers[r].last_caught_up_ms > max_lag_ms)

    def caught_up(self) -> frozenset[int]:
        """Followers outside the ISR that may join it now."""
        floor = max(self._hw, self.epoch_start_offset)
        return frozenset(
            r for r, f in self._followers.items()
            if r not in self._isr and f.log_end_offset >= floor)

    def propose(self, now_ms: int, max_lag_ms: int) -> frozenset[int] | None:
        """The ISR to ask the coordinator for (laggards out, caught-up followers in), or None
        when nothing should change or a proposal is already in flight. The caller sends it and
        reports back with ``isr_committed`` or ``isr_refused``."""
        if self._pending is not None:
            return None
        if self._refused_at is not None and now_ms - self._refused_at < REFUSED_BACKOFF_MS:
            return None
        proposal = (self._isr - self.lagging(now_ms, max_lag_ms)) | self.caught_up()
        if proposal == self._isr:
            return None
        self._pending = proposal
        return proposal

    def isr_committed(self, isr: Iterable[int]) -> int | None:
        """The coordinator now lists ``isr`` (this leader's proposal or not); the new high
        watermark if it moved (a shrink can let it)."""
        self._pending = None
        self._isr = (frozenset(isr) & frozenset(self.replicas)) | {self.leader_id}
        return self._advance()

    def isr_refused(self, now_ms: int | None = None) -> None:
        """The proposal in flight was refused (a newer epoch, a conflicting write, a fenced
        broker the Raft controller will not readmit yet): the next ``propose`` starts over from
        the committed ISR, and, given ``now_ms``, not before REFUSED_BACKOFF_MS have passed.
        Without the pause a follower fetching continuously has the same refused expansion
        proposed on every fetch (thousands a second while a restarted broker is fenced)."""
        self._pending = None
        if now_ms is not None:
            self._refused_at = now_ms

    def check_min_isr(self, min_insync_replicas: int) -> None:
        """Raise NotEnoughReplicas unless acks=-1 may append now."""
        if len(self._isr) < min_insync_replicas:
            raise NotEnoughReplicas(
                f"{len(self._isr)} in-sync replicas {sorted(self._isr)}, "
                f"min.insync.replicas is {min_insync_replicas}")

    def _advance(self) -> int | None:
        low = self._leo
        for r in self._isr if self._pending is None else self._isr | self._pending:
            if r != self.leader_id:
                end = self._followers[r].log_end_offset
                if end < low:
                    low = end
        if low > self._hw:
            self._hw = low
            return low
        return None
