"""The leadership rule every controller shares (brokers/core/placement.py), as properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from brokers.core.coordinator import NO_LEADER
from brokers.core.placement import Leadership, next_leadership

REPLICAS = (1, 2, 3)
brokers = st.sets(st.sampled_from(REPLICAS))
states = st.none() | st.builds(
    Leadership, st.sampled_from((*REPLICAS, NO_LEADER)), st.integers(0, 50),
    st.lists(st.sampled_from(REPLICAS), unique=True).map(lambda isr: tuple(sorted(isr))))


@given(states, brokers, st.booleans())
def test_a_leader_comes_from_the_live_isr_and_the_rule_settles(
        current: Leadership | None, live: set[int], unclean: bool) -> None:
    target = next_leadership(REPLICAS, live, current, unclean=unclean)
    if target is None:
        return
    if target.leader != NO_LEADER:
        assert target.leader in live and target.leader in target.isr
        if current is not None and current.isr and not unclean:
            assert target.leader in current.isr  # clean: only a replica with every record
    if current is not None:
        assert target.leader_epoch >= current.leader_epoch
        # A new leader always means a new epoch (fetchers fence on it).
        assert target.leader == current.leader or target.leader_epoch > current.leader_epoch
    # Applied, the rule asks for nothing more with the same brokers alive.
    assert next_leadership(REPLICAS, live, target, unclean=unclean) is None
