"""The backfill scheduler's decisions, with a stand-in for the worker pool (the real
pool, with processes, is exercised end to end in test_daemon.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from agentsrc_daemon.config import load_config
from agentsrc_daemon.ingest import sources
from agentsrc_daemon.ingest.cursor import Cursor
from agentsrc_daemon.ingest.round import FileRound, Ingestor
from agentsrc_daemon.ingest.workers import BackfillScheduler, WorkerRound
from agentsrc_daemon.store import Batch, Store


class FakePool:
    """One worker with room for one round; records what the scheduler asks of it."""

    size = 1

    def __init__(self) -> None:
        self.in_flight: dict[str, Any] = {}
        self.broken = False
        self.submitted: list[tuple[str, int]] = []
        self.waits = 0
        self.finished: list[WorkerRound] = []
        self.shut_down = False

    def has_room(self, held: int = 0) -> bool:
        return not self.broken and len(self.in_flight) + held < 1

    def submit(self, spec: sources.SourceSpec, cursor: Cursor, budget: int) -> bool:
        self.in_flight[spec.path] = cursor
        self.submitted.append((spec.path, budget))
        return True

    def wait_any(self, timeout: float) -> bool:
        self.waits += 1
        return True

    def done(self, wait: bool = False) -> list[list[WorkerRound]]:
        out, self.finished = self.finished, []
        for r in out:
            del self.in_flight[r.path]
        return [[r] for r in out]

    def shutdown(self) -> None:
        self.shut_down = True


def spec(name: str) -> sources.SourceSpec:
    return sources.SourceSpec(f"/r/{name}.jsonl", "codex", sources.JSONL, "/r")


@pytest.fixture
def scheduler(tmp_path: Path) -> tuple[BackfillScheduler, list[WorkerRound]]:
    committed: list[WorkerRound] = []
    cfg = load_config(env={"HOME": str(tmp_path)})
    return BackfillScheduler(cfg, lambda r: committed.append(r) is None, budget_bytes=123), committed


def test_without_a_pool_every_file_is_read_here(scheduler: Any) -> None:
    backfill, committed = scheduler
    ingestor = Ingestor(max_line_bytes=1 << 20)
    assert [backfill.place(spec(n), ingestor) for n in "abc"] == [True, True, True]
    assert backfill.rounds_here == 3
    backfill.collect()
    backfill.end_round(["/r/a.jsonl"], stopping=False)
    backfill.close(ingestor)
    assert committed == [] and backfill.pool is None


def test_workers_off_means_no_pool_whatever_the_backlog(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGENTSRC_WORKERS", "0")
    backfill = BackfillScheduler(
        load_config(env={"HOME": str(tmp_path)}), lambda r: True, budget_bytes=1
    )
    ingestor = Ingestor(max_line_bytes=1 << 20)
    backfill.begin_round(["/r/a.jsonl"], lambda: 1 << 40, ingestor)
    assert backfill.pool is None and not ingestor.defer_big_lines


def test_the_thread_takes_its_share_and_workers_the_rest(scheduler: Any) -> None:
    backfill, committed = scheduler
    pool = backfill.pool = FakePool()
    ingestor = Ingestor(max_line_bytes=1 << 20, defer_big_lines=True)
    # The first file goes to the worker (with the file's cursor and the round budget).
    assert backfill.place(spec("a"), ingestor) is False
    assert pool.submitted == [("/r/a.jsonl", 123)]
    assert pool.in_flight["/r/a.jsonl"] is ingestor.cursors["/r/a.jsonl"]
    assert backfill.place(spec("a"), ingestor) is False  # in a worker's hands
    # The worker is full: this thread reads while its share allows (0*2 <= 1*1)...
    assert backfill.place(spec("b"), ingestor) is True
    # ...then (1*2 > 1*1) waits for the worker instead.
    assert backfill.place(spec("c"), ingestor) is False
    assert (backfill.rounds_here, pool.waits) == (1, 1)
    # A deferred file waits for the pool to close.
    backfill.defer("/r/d.jsonl")
    assert backfill.place(spec("d"), ingestor) is False
    # Finished rounds go to commit_round, and count as the workers' share.
    done = WorkerRound("/r/a.jsonl", Batch(), FileRound("/r/a.jsonl"), Cursor("/r/a.jsonl", "codex", "jsonl"))
    pool.finished = [done]
    backfill.collect()
    assert committed == [done] and backfill.rounds_in_workers == 1
    # Only the deferred file is left, nothing in flight: nothing left for the thread
    # either, so it waits briefly, and the next round closes the pool.
    backfill.end_round(["/r/d.jsonl"], stopping=False)
    assert pool.waits == 2 and backfill.pool is pool
    backfill.begin_round(["/r/d.jsonl"], lambda: 0, ingestor)
    assert pool.shut_down and backfill.pool is None
    assert not ingestor.defer_big_lines and backfill.deferred == set()
    assert backfill.place(spec("d"), ingestor) is True  # read here now


def test_a_broken_pool_is_closed_once_its_rounds_are_in(scheduler: Any) -> None:
    backfill, committed = scheduler
    pool = backfill.pool = FakePool()
    ingestor = Ingestor(max_line_bytes=1 << 20, defer_big_lines=True)
    backfill.place(spec("a"), ingestor)
    pool.broken = True
    backfill.begin_round(["/r/a.jsonl", "/r/b.jsonl"], lambda: 0, ingestor)
    assert backfill.pool is pool  # a round is still in a worker's hands
    pool.finished = [
        WorkerRound("/r/a.jsonl", Batch(), FileRound("/r/a.jsonl"), Cursor("/r/a.jsonl", "codex", "jsonl"))
    ]
    backfill.collect()
    backfill.begin_round(["/r/b.jsonl"], lambda: 0, ingestor)
    assert backfill.pool is None and [r.path for r in committed] == ["/r/a.jsonl"]


def test_the_freed_memory_is_released_before_the_deferred_big_lines(tmp_path: Path) -> None:
    """Once the pool is gone, deferred files' big lines come next on this thread: the
    backfill's free pages go back first (release_memory), and only then."""
    cfg = load_config(env={"HOME": str(tmp_path)})
    released: list[int] = []
    backfill = BackfillScheduler(cfg, lambda r: True, budget_bytes=1,
                                 release_memory=lambda: released.append(1))
    ingestor = Ingestor(max_line_bytes=1 << 20, defer_big_lines=True)
    backfill.pool = FakePool()  # type: ignore[assignment]
    backfill.close(ingestor)  # nothing deferred: nothing to make room for
    assert released == []
    pool = backfill.pool = FakePool()  # type: ignore[assignment]
    backfill.defer("/r/d.jsonl")
    backfill.begin_round(["/r/d.jsonl"], lambda: 0, ingestor)
    assert pool.shut_down and backfill.pool is None and released == [1]
    assert not ingestor.defer_big_lines


# ---- a worker's round in pieces -------------------------------------------------------


def _rows(store: Store) -> list[tuple[Any, ...]]:
    return list(store.conn.execute(
        "SELECT key_hash, session_id, kind, ts, data, revision FROM events ORDER BY key_hash"))


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_round_read_in_pieces_commits_what_the_whole_round_does(
    tmp_path: Path, agent: str
) -> None:
    """The pieces of a worker's round, each committed on its own with the cursor after
    it, store exactly what the round read whole stores (real corpus files, real stages,
    real stores): the cursors at line ends, every piece but the last saying more."""
    from agentsrc_daemon.ingest import workers
    from agentsrc_daemon.ingest.stages import build_stages

    from corpus import corpus_files

    pattern = ".claude/projects/**/*.jsonl" if agent == "claude-code" else ".codex/**/*.jsonl"
    path = max(corpus_files(pattern), key=lambda p: p.stat().st_size)
    size = path.stat().st_size
    assert size > 3 * workers.PIECE_BYTES  # several pieces
    cfg = load_config(env={"HOME": str(tmp_path)})
    derive, scan, root_for, _ = build_stages(cfg)
    s = sources.SourceSpec(str(path), agent, sources.JSONL, str(path.parent))

    def read(piece: int, events: int = workers.PIECE_EVENTS) -> list[workers.Piece]:
        workers._worker_ingestor = Ingestor(
            max_line_bytes=cfg.max_line_bytes, derive=derive, scan=scan, project_root_for=root_for
        )
        try:
            return workers._ingest_round(
                s, Cursor(s.path, agent, sources.JSONL), 64 << 20, piece, events
            )
        finally:
            workers._worker_ingestor = None

    whole = read(64 << 20, 1 << 30)
    pieces = read(workers.PIECE_BYTES)
    assert len(whole) == 1 and len(pieces) >= 3
    offsets = [c.offset for _, _, c in pieces]
    assert offsets == sorted(offsets) and offsets[-1] == whole[0][2].offset == size
    assert [r.more for _, r, _ in pieces] == [True] * (len(pieces) - 1) + [False]
    assert sum(r.bytes for _, r, _ in pieces) == size
    a, b, c = Store(tmp_path / "whole.db"), Store(tmp_path / "pieces.db"), Store(tmp_path / "merged.db")
    a.commit(whole[0][0])
    for batch, _, _ in pieces:
        b.commit(batch)
    rounds = [workers.WorkerRound(s.path, *p) for p in read(workers.PIECE_BYTES)]
    together = workers.merged(rounds)
    assert together.round.bytes == size and together.cursor.offset == size
    c.commit(together.batch)
    assert _rows(a) == _rows(b) == _rows(c) and len(_rows(a)) > 100
    saved = [st.load_cursors()[s.path] for st in (a, b, c)]
    assert {(x.offset, x.lines, orjson.dumps(x.load_state())) for x in saved} == {
        (size, saved[0].lines, orjson.dumps(saved[0].load_state()))
    }


def _piece(path: str, events: int, offset: int, more: bool) -> WorkerRound:
    from agentsrc_daemon.store.batch import Row

    batch = Batch()
    batch.rows = [Row(bytes(16), "s", "prompt", None, None, None, None, None, "codex", i,
                      None, b"{}", 0, 0, None, None, b"", path) for i in range(events)]
    cursor = Cursor(path, "codex", sources.JSONL, offset=offset)
    batch.cursors[path] = cursor
    return WorkerRound(path, batch, FileRound(path, bytes=100, more=more), cursor)


def test_finished_pieces_are_committed_a_few_at_a_time_and_wait_for_appends(
    tmp_path: Path,
) -> None:
    """A finished round's pieces go to commit_round merged up to unit_events (at least
    one piece each time); collect stops between two commits once an append waits; the
    file is held until its last piece is in; a refused commit drops the rest of its
    round (read again from the committed cursor) and stops the collect."""
    commits: list[tuple[str, int, int]] = []
    refuse: set[int] = set()

    def commit(r: WorkerRound) -> bool:
        commits.append((r.path, len(r.batch.rows), r.cursor.offset))
        return r.cursor.offset not in refuse

    cfg = load_config(env={"HOME": str(tmp_path)})
    backfill = BackfillScheduler(cfg, commit, budget_bytes=1)
    pool = backfill.pool = FakePool()  # type: ignore[assignment]
    a = [_piece("/r/a.jsonl", 100, 100 * (i + 1), more=i < 4) for i in range(5)]
    b = [_piece("/r/b.jsonl", 300, 1000, more=False)]
    pool.done = lambda wait=False: [a, b]  # type: ignore[method-assign]
    backfill.unit_events = 250
    waiting = [False, True]  # no append at the first look, one at the second
    assert backfill.collect(stop=lambda: waiting.pop(0))
    # 100 + 100 fit in 250, a third would not; then an append: the rest waits.
    assert commits == [("/r/a.jsonl", 200, 200), ("/r/a.jsonl", 200, 400)]
    assert backfill.holds("/r/a.jsonl") and backfill.holds("/r/b.jsonl")
    assert backfill.rounds_in_workers == 2
    pool.done = lambda wait=False: []  # type: ignore[method-assign]
    assert backfill.collect(stop=lambda: True)  # one commit at least, then the append
    assert commits[2:] == [("/r/a.jsonl", 100, 500)]
    assert not backfill.holds("/r/a.jsonl")
    refuse.add(1000)
    backfill.unit_events = 10_000
    assert backfill.collect()
    assert commits[3:] == [("/r/b.jsonl", 300, 1000)] and backfill.ready == {}
    # A refused piece: the round's later pieces are dropped, the collect stops.
    c = [_piece("/r/c.jsonl", 10, 10 * (i + 1), more=i < 2) for i in range(3)]
    d = [_piece("/r/d.jsonl", 10, 7, more=False)]
    refuse.add(10)
    backfill.unit_events = 10
    pool.done = lambda wait=False: [c, d]  # type: ignore[method-assign]
    assert backfill.collect()
    assert commits[4:] == [("/r/c.jsonl", 10, 10)]
    assert list(backfill.ready) == ["/r/d.jsonl"]
