"""The requests' costs in the store (store/costs.py, issue 27): each usage event's cost
written in the commit that stores it, as the pricing stage priced it; the aggregates'
sums of them equal to a fresh computation; a claim that moves a request in time priced
again; and the re-price after the prices change (an override, a new table): in chunks,
resumable, ending with what pricing every request afresh gives, on the corpus.

Real stores on disk, the corpus through the daemon's ingest path (bench/bigstore.py's
copy 0), the real price table (genai-prices' bundled data, exported)."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_reports import agg_rows, refilled

from agentsrc_daemon import events as E
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.pricing import export, overrides, table
from agentsrc_daemon.pricing.stage import PriceStage
from agentsrc_daemon.store import Batch, Reader, Store
from agentsrc_daemon.store.connection import connect
from agentsrc_daemon.store.costs import cost_json, reprice_progress
from agentsrc_daemon.store.migrations.versions import MIGRATIONS

from bigstore import BigStore, build
from corpus import corpus_home
from harness import schema_copy

TABLE = table.loads(export.bundled_table())
PRICES = PriceStage(TABLE)  # what the corpus store was priced with
# An enterprise rate for Claude models and a local model at $0: every Claude request's
# cost changes, and dated rates make the time of a request matter.
OVERRIDES = overrides.parse({"models": {
    "claude-*": [{"input": 1, "output": 2, "cache_read": 0.1, "cache_write": 1.5},
                 {"since": date(2026, 1, 1), "input": 2, "output": 4}],
    "gpt-5*": {"input": 0, "output": 0},
}})
REPRICED = PriceStage(TABLE, OVERRIDES)


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> BigStore:
    return build(tmp_path_factory.mktemp("costs"), events=1, files=100_000, corpus=corpus_home(), say=False)


def _copy(store: BigStore, to: Path) -> Path:
    db = to / "copy.db"
    shutil.copyfile(store.db_path, db)
    return db


def stored_costs(conn: apsw.Connection) -> dict[int, tuple[Any, ...]]:
    return {int(r[0]): tuple(r[1:]) for r in conn.execute(
        "SELECT event_id, nusd, kind, est_nusd, unpriced_tokens FROM usage_costs")}


def priced_afresh(conn: apsw.Connection, stage: PriceStage) -> dict[int, tuple[Any, ...]]:
    return {int(eid): stage.cost_of(adapter, data, ts) for eid, adapter, data, ts in conn.execute(
        "SELECT id, adapter, data, ts FROM events WHERE kind = 'usage'")}


def reprice_all(store: Store, chunk: int) -> int:
    steps = 0
    while store.reprice_step(chunk).more:
        steps += 1
    return steps + 1


def assert_priced_with(db: Path, stage: PriceStage, tmp: Path) -> None:
    """Every usage event's stored cost is the stage's price of it, and the aggregates
    are what a fresh computation over those costs gives."""
    conn = connect(db, readonly=True)
    try:
        assert stored_costs(conn) == priced_afresh(conn, stage)
        maintained = agg_rows(conn)
    finally:
        conn.close()
    assert maintained == refilled(db, tmp)


def test_each_usage_event_is_stored_with_the_cost_its_stage_gave(corpus_store: BigStore, tmp_path: Path) -> None:
    assert_priced_with(corpus_store.db_path, PRICES, tmp_path)
    conn = connect(corpus_store.db_path, readonly=True)
    try:
        kinds = dict(conn.execute("SELECT kind, COUNT(*) FROM usage_costs GROUP BY kind"))
        (usage,) = conn.execute("SELECT COUNT(*) FROM events WHERE kind = 'usage'").fetchone()
        (fp,) = conn.execute("SELECT fingerprint FROM usage_pricing").fetchone()
    finally:
        conn.close()
    # OpenCode's 70 steps, the Amp thread's 6 requests and the Cline task's 24 billed
    # requests (tests/test_agents_a.py) report their cost; the 0.34 Codex rollout has no
    # model.
    assert set(kinds) == {"estimated", "reported", "unpriced"} and sum(kinds.values()) == usage
    assert kinds["reported"] == 70 + 6 + 24
    assert fp == PRICES.fingerprint


def test_a_reprice_gives_what_pricing_afresh_gives_and_stops(corpus_store: BigStore, tmp_path: Path) -> None:
    db = _copy(corpus_store, tmp_path)
    store = Store(db)
    try:
        assert store.pricing(REPRICED.fingerprint, REPRICED.cost_of, at_start=True)
        conn = store.conn
        total = conn.execute("SELECT COUNT(*) FROM events WHERE kind = 'usage'").fetchone()[0]
        assert reprice_progress(conn) == {"done": 0, "total": 0, "fraction": 0.0}  # not counted yet
        assert store.reprice_step(100) == (100, True)
        progress = reprice_progress(conn)
        assert progress == {"done": 100, "total": total, "fraction": round(100 / total, 4)}
        steps = 1 + reprice_all(store, 100)
        assert steps == -(-total // 100)
        assert reprice_progress(conn) is None
        assert store.reprice_step(100) == (0, False)  # nothing left
        # The same prices again: nothing to do.
        assert not store.pricing(REPRICED.fingerprint, REPRICED.cost_of, at_start=True)
    finally:
        store.close()
    assert_priced_with(db, REPRICED, tmp_path)
    # And back: the first prices give the first costs, exactly.
    store = Store(db)
    try:
        assert store.pricing(PRICES.fingerprint, PRICES.cost_of, at_start=True)
        reprice_all(store, 997)
    finally:
        store.close()
    conn = connect(db, readonly=True)
    src = connect(corpus_store.db_path, readonly=True)
    try:
        assert stored_costs(conn) == stored_costs(src)
        assert agg_rows(conn) == agg_rows(src)
    finally:
        conn.close()
        src.close()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunks=st.lists(st.integers(1, 400), min_size=1, max_size=6), stop_after=st.integers(0, 5))
def test_a_reprice_stopped_anywhere_resumes_to_the_same_costs(
    corpus_store: BigStore, tmp_path_factory: pytest.TempPathFactory, chunks: list[int], stop_after: int
) -> None:
    """Stopped after any number of chunks (the store closed between two transactions, as
    a kill leaves it) and started again with the same prices, the re-price carries on
    from its mark and ends where an uninterrupted one does."""
    tmp = tmp_path_factory.mktemp("resume")
    db = _copy(corpus_store, tmp)
    store = Store(db)
    try:
        store.pricing(REPRICED.fingerprint, REPRICED.cost_of, at_start=True)
        for chunk in chunks[:stop_after]:
            store.reprice_step(chunk)
    finally:
        store.close()
    store = Store(db)
    try:
        again = store.pricing(REPRICED.fingerprint, REPRICED.cost_of, at_start=True)
        assert not again  # the same fingerprint: carried on, not begun again
        for chunk in chunks:
            store.reprice_step(chunk)
        reprice_all(store, chunks[-1])
    finally:
        store.close()
    assert_priced_with(db, REPRICED, tmp)


def test_a_migrated_store_is_priced_by_its_first_reprice(corpus_store: BigStore, tmp_path: Path) -> None:
    """A store of schema 18 (its events, no costs) migrated to 19: every request counts
    as not priced yet (unpriced, its total tokens), and the re-price the daemon begins
    gives exactly the costs and aggregates of a store priced at ingest."""
    db = tmp_path / "s18.db"
    schema_copy(corpus_store.db_path, db, MIGRATIONS.named("usage_costs").version - 1)
    store = Store(db)
    try:
        reader = Reader(db)
        try:
            totals = reader.usage_summary()["totals"]
        finally:
            reader.close()
        assert totals["cost"] == {"usd": None, "kind": "unpriced",
                                  "unpriced_tokens": totals["total_tokens"]}
        assert store.pricing(PRICES.fingerprint, PRICES.cost_of, at_start=True)
        reprice_all(store, 500)
    finally:
        store.close()
    conn = connect(db, readonly=True)
    src = connect(corpus_store.db_path, readonly=True)
    try:
        assert stored_costs(conn) == stored_costs(src)
        assert agg_rows(conn) == agg_rows(src)
    finally:
        conn.close()
        src.close()


def _usage(key: str, session: str, ts: str, path: str, claim: int, since: str | None) -> E.Event:
    return E.Event(key=key, session_id=session, kind=E.USAGE, ts=ts, adapter="claude-code",
                   source_path=path, offset=0, claim=claim, claim_since=since,
                   data={"model": "claude-sonnet-4-5", "input_tokens": 1000, "output_tokens": 500,
                         "cache_read_tokens": 0, "cache_creation_tokens": 0, "total_tokens": 1500})


def test_a_claim_that_moves_a_request_in_time_prices_it_at_its_new_time(tmp_path: Path) -> None:
    """The same request (one key) held by a copy with another time, then claimed by its
    own file: the row takes the owner's time, and its cost is the price at that time
    (the override's dated rates differ on either side of 2026-01-01)."""
    store = Store(tmp_path / "s.db")
    try:
        store.pricing(REPRICED.fingerprint, REPRICED.cost_of, at_start=True)
        copy = _usage("k", "claude-code:b", "2026-03-01T00:00:00Z", "/x/b.jsonl", E.CLAIM_COPY, "2026-03-01")
        own = _usage("k", "claude-code:a", "2025-12-01T00:00:00Z", "/x/a.jsonl", E.CLAIM_OWN, "2025-12-01")
        for ev in (copy, own):
            REPRICED(ev)  # the pricing stage, as ingest runs it
            b = Batch(events=[ev])
            b.cursors[ev.source_path] = Cursor(ev.source_path, "claude-code", "jsonl", offset=10)
            store.commit(b)
        conn = store.conn
        (cost,) = stored_costs(conn).values()
        # 1,000 input at $1 + 500 output at $2 per million (before 2026): $0.002.
        assert cost == (2_000_000, "estimated", 2_000_000, 0) == own.cost
        assert copy.cost == (4_000_000, "estimated", 4_000_000, 0)  # its own time's rates
        assert list(conn.execute("SELECT session_id, cost_nusd, cost_estimated FROM agg_usage")) == [
            ("claude-code:a", 2_000_000, 1)]
    finally:
        store.close()


def test_a_total_says_its_kind_and_what_it_leaves_out() -> None:
    nothing = dict.fromkeys(("cost_nusd", "est_nusd", "unpriced_tokens", "cost_estimated", "cost_reported"), 0)
    assert cost_json(nothing, 0) == {"usd": 0.0, "kind": "estimated"}
    est = {**nothing, "cost_nusd": 4_086_012_345, "est_nusd": 4_086_012_345, "cost_estimated": 3}
    assert cost_json(est, 3) == {"usd": 4.086012, "kind": "estimated"}
    rep = {**nothing, "cost_nusd": 1_767_800_200, "est_nusd": 1_977_848_000, "cost_reported": 70}
    assert cost_json(rep, 70) == {"usd": 1.7678, "kind": "reported", "estimated_usd": 1.977848}
    unp = {**nothing, "unpriced_tokens": 53_077_637}
    assert cost_json(unp, 380, model_known=False) == {
        "usd": None, "kind": "unpriced", "unpriced_tokens": 53_077_637, "reason": "no model recorded"}
    assert cost_json(unp, 380, model_known=True)["reason"] == "model not in the price table"
    mixed = {**est, "unpriced_tokens": 900}
    assert cost_json(mixed, 4) == {"usd": 4.086012, "kind": "mixed", "unpriced_tokens": 900}
    # Half a micro-dollar rounds to even, as pricing.cost does.
    assert cost_json({**nothing, "cost_nusd": 2_500, "cost_estimated": 1}, 1)["usd"] == 0.000002
    assert cost_json({**nothing, "cost_nusd": 3_500, "cost_estimated": 1}, 1)["usd"] == 0.000004
