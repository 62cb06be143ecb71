"""Hypothesis strategies for Raft messages, shared by the codec and node tests."""

from __future__ import annotations

from hypothesis import strategies as st

from brokers.raft_broker.raft.messages import (
    MAX_U32,
    MAX_U64,
    Append,
    AppendResponse,
    Entry,
    InstallSnapshot,
    Message,
    RequestVote,
    SnapshotResponse,
    VoteResponse,
)

U32 = st.integers(0, MAX_U32)
U64 = st.integers(0, MAX_U64)
DATA = st.binary(max_size=40)


@st.composite
def appends(draw: st.DrawFn, ids: st.SearchStrategy[int] = U32,
            numbers: st.SearchStrategy[int] = U64) -> Append:
    prev = draw(numbers.filter(lambda n: n <= MAX_U64 - 8))
    bodies = draw(st.lists(st.tuples(numbers, DATA), max_size=6))
    entries = tuple(Entry(t, prev + 1 + k, d) for k, (t, d) in enumerate(bodies))
    return Append(draw(ids), draw(ids), draw(numbers), prev, draw(numbers), entries,
                  draw(numbers), draw(numbers))


def messages(ids: st.SearchStrategy[int] = U32,
             numbers: st.SearchStrategy[int] = U64) -> st.SearchStrategy[Message]:
    """Every message kind, fields drawn from ``ids`` (src, dst) and ``numbers`` (the rest)."""
    b = st.booleans()
    return st.one_of(
        st.builds(RequestVote, ids, ids, numbers, numbers, numbers, b),
        st.builds(VoteResponse, ids, ids, numbers, b, b),
        appends(ids, numbers),
        st.builds(AppendResponse, ids, ids, numbers, b, numbers, numbers, numbers),
        st.builds(InstallSnapshot, ids, ids, numbers, numbers, numbers, DATA, numbers),
        st.builds(SnapshotResponse, ids, ids, numbers, numbers, numbers),
    )
