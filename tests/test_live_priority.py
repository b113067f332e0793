"""The ingest loop's priority for live appends during a backfill (ingest/priority.py):
exact decisions, and a state machine of a loop that looks for appends between pieces
of backfill work, checked against the two promises (an append waits for at most the
piece under way while the backlog moved recently; the backlog still moves at least
every BACKFILL_PROGRESS_S whatever the appends)."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from agentsrc_daemon.ingest.priority import (
    APPENDS_RECENT_S,
    BACKFILL_PROGRESS_S,
    LIVE_BATCH_EVENTS,
    LIVE_ROUND_BUDGET_BYTES,
    LivePriority,
)


def test_the_decisions() -> None:
    p = LivePriority(4 << 20, 2000)
    # Nothing seen yet: full-size pieces, and nothing to yield to.
    assert p.budget(0.0) == (4 << 20, 2000)
    assert not p.yields(0.0, waiting=True)  # the backlog never moved: it goes first
    p.progressed(10.0)
    assert p.yields(10.1, waiting=True) and not p.yields(10.1, waiting=False)
    assert not p.yields(10.0 + BACKFILL_PROGRESS_S, waiting=True)  # starved long enough
    p.appended(11.0)
    assert p.recent(11.0) and p.budget(11.0) == (LIVE_ROUND_BUDGET_BYTES, LIVE_BATCH_EVENTS)
    assert p.budget(11.0 + APPENDS_RECENT_S - 0.001) == (128 << 10, 250)
    assert p.budget(11.0 + APPENDS_RECENT_S) == (4 << 20, 2000)


class Loop(RuleBasedStateMachine):
    """A loop that, at every look, serves the appends waiting or does one piece of
    backfill work, as daemon._work does; the clock moves by the pieces' lengths and
    between looks. The model keeps its own record of when appends came and waited."""

    def __init__(self) -> None:
        super().__init__()
        self.p = LivePriority(4 << 20, 2000)
        self.now = 100.0
        self.waiting_since: float | None = None  # the oldest append not yet served
        self.last_append: float | None = None
        self.last_piece: float | None = None
        self.pieces_while_waiting = 0  # pieces done while one append waited

    @rule(dt=st.floats(0.0, 1.0))
    def time_passes(self, dt: float) -> None:
        self.now += dt

    @rule()
    def an_append(self) -> None:
        self.p.appended(self.now)
        self.last_append = self.now
        if self.waiting_since is None:
            self.waiting_since = self.now
            self.pieces_while_waiting = 0

    @precondition(lambda self: self.waiting_since is not None)
    @rule(took=st.floats(0.0, 0.05))
    def serve_the_appends(self, took: float) -> None:
        # The loop takes the dirty paths first at every pass: read and committed.
        self.now += took
        self.waiting_since = None

    @rule(took=st.floats(0.001, 0.3))
    def a_look_before_a_piece(self, took: float) -> None:
        waiting = self.waiting_since is not None
        yields = self.p.yields(self.now, waiting)
        stale = self.last_piece is None or self.now - self.last_piece >= BACKFILL_PROGRESS_S
        # Yields exactly when an append waits and the backlog moved recently.
        assert yields == (waiting and not stale)
        if yields:
            return
        if waiting:
            self.pieces_while_waiting += 1
        self.now += took  # the piece
        self.p.progressed(self.now)
        self.last_piece = self.now

    @invariant()
    def an_append_waits_for_few_pieces(self) -> None:
        # While an append waits, a piece runs only once the backlog has not moved for
        # BACKFILL_PROGRESS_S: over a wait of w seconds, at most 1 + w / that many.
        if self.waiting_since is not None:
            waited = self.now - self.waiting_since
            assert self.pieces_while_waiting <= 1 + waited / BACKFILL_PROGRESS_S

    @invariant()
    def small_pieces_exactly_while_appends_are_recent(self) -> None:
        recent = self.last_append is not None and self.now - self.last_append < APPENDS_RECENT_S
        assert self.p.recent(self.now) == recent
        expected = (LIVE_ROUND_BUDGET_BYTES, LIVE_BATCH_EVENTS) if recent else (4 << 20, 2000)
        assert self.p.budget(self.now) == expected


TestLoop = Loop.TestCase
TestLoop.settings = settings(max_examples=200, stateful_step_count=60, deadline=None)
