"""The backfill scheduler's decisions, with a stand-in for the worker pool (the real
pool, with processes, is exercised end to end in test_daemon.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentsrc_daemon.config import load_config
from agentsrc_daemon.ingest import sources
from agentsrc_daemon.ingest.cursor import Cursor
from agentsrc_daemon.ingest.round import FileRound, Ingestor
from agentsrc_daemon.ingest.workers import BackfillScheduler, WorkerRound
from agentsrc_daemon.store import Batch


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

    @property
    def has_room(self) -> bool:
        return not self.broken and len(self.in_flight) < 1

    def submit(self, spec: sources.SourceSpec, cursor: Cursor, budget: int) -> bool:
        self.in_flight[spec.path] = cursor
        self.submitted.append((spec.path, budget))
        return True

    def wait_any(self, timeout: float) -> None:
        self.waits += 1

    def done(self, wait: bool = False) -> list[WorkerRound]:
        out, self.finished = self.finished, []
        for r in out:
            del self.in_flight[r.path]
        return out

    def shutdown(self) -> None:
        self.shut_down = True


def spec(name: str) -> sources.SourceSpec:
    return sources.SourceSpec(f"/r/{name}.jsonl", "codex", sources.JSONL, "/r")


@pytest.fixture
def scheduler(tmp_path: Path) -> tuple[BackfillScheduler, list[WorkerRound]]:
    committed: list[WorkerRound] = []
    cfg = load_config(env={"HOME": str(tmp_path)})
    return BackfillScheduler(cfg, committed.append, budget_bytes=123), committed


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
        load_config(env={"HOME": str(tmp_path)}), lambda r: None, budget_bytes=1
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
    backfill = BackfillScheduler(cfg, lambda r: None, budget_bytes=1,
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
