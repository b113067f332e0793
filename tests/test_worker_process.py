"""The backfill's worker processes (ingest/worker_process.py), real processes: a round
comes back as the pieces the same stages read in this process, the worker is the only
process started (no resource tracker beside it), and a worker that dies fails its
rounds and the ones after, never leaves them waiting."""

from __future__ import annotations

import contextlib
import os
import signal
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from agentsrc_daemon.config import load_config
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.ingest import sources, workers
from agentsrc_daemon.ingest.round import Ingestor
from agentsrc_daemon.ingest.stages import build_stages
from agentsrc_daemon.ingest.worker_process import WorkerGone, WorkerProcesses

from corpus import corpus_files


def _children() -> set[int]:
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            pids.update(int(x) for x in (task / "children").read_text().split())
    return pids


def _processes(tmp_path: Path) -> tuple[WorkerProcesses, Any]:
    cfg = load_config(env={"HOME": str(tmp_path)})
    init_args = (cfg, "warning", True, os.getpid(), None)
    return WorkerProcesses(1, workers._init_worker, init_args, workers.round_pieces), cfg


def _here(cfg: Any, spec: sources.SourceSpec, budget: int) -> list[workers.Piece]:
    derive, scan, root_for, _ = build_stages(cfg)
    workers._worker_ingestor = Ingestor(
        max_line_bytes=cfg.max_line_bytes, derive=derive, scan=scan, project_root_for=root_for,
        defer_big_lines=True,
    )
    try:
        return [p for p, _ in workers.round_pieces(
            spec, Cursor(spec.path, "claude-code", sources.JSONL), budget,
            workers.PIECE_BYTES, workers.PIECE_EVENTS)]
    finally:
        workers._worker_ingestor = None


def test_a_round_comes_back_as_its_pieces_from_the_only_process_started(tmp_path: Path) -> None:
    path = max(corpus_files(".claude/projects/**/*.jsonl"), key=lambda p: p.stat().st_size)
    assert path.stat().st_size > 3 * workers.PIECE_BYTES  # several pieces
    before = _children()
    pool, cfg = _processes(tmp_path)
    spec = sources.SourceSpec(str(path), "claude-code", sources.JSONL, str(path.parent))
    try:
        futures = [pool.submit(spec, Cursor(spec.path, "claude-code", sources.JSONL), budget,
                               workers.PIECE_BYTES, workers.PIECE_EVENTS)
                   for budget in (64 << 20, workers.PIECE_BYTES)]
        got = [f.result(timeout=60) for f in futures]
        # One process: the worker, nothing beside it (multiprocessing's spawn start
        # method added a resource tracker of 13 MB, for the daemon's whole life).
        assert _children() - before == set(pool.pids()) and len(pool.pids()) == 1
    finally:
        pool.shutdown()
    assert _children() == before  # the worker exits when its pipe closes
    for budget, pieces in zip((64 << 20, workers.PIECE_BYTES), got, strict=True):
        want = _here(cfg, spec, budget)
        assert len(pieces) == len(want) and (budget == workers.PIECE_BYTES or len(pieces) >= 3)
        for (batch, rnd, cursor), (want_batch, want_rnd, want_cursor) in zip(pieces, want, strict=True):
            assert batch.rows == want_batch.rows and len(batch.rows) > 0
            assert (rnd.bytes, rnd.more, cursor.offset, cursor.lines) == (
                want_rnd.bytes, want_rnd.more, want_cursor.offset, want_cursor.lines)


def test_a_worker_that_dies_fails_its_rounds_and_every_later_one(tmp_path: Path) -> None:
    """Killed mid-backfill: the rounds sent to it and the ones waiting fail (the daemon
    reads their files itself); a round taken back before it was sent is cancelled, not
    failed; after that, a new round is refused at once."""
    import threading

    path = max(corpus_files(".claude/projects/**/*.jsonl"), key=lambda p: p.stat().st_size)
    spec = sources.SourceSpec(str(path), "claude-code", sources.JSONL, str(path.parent))
    pool, _ = _processes(tmp_path)
    # The daemon's threads for the worker end quietly: no traceback in its log.
    failed: list[str] = []
    saved_hook = threading.excepthook
    threading.excepthook = lambda args: failed.append(f"{args.thread}: {args.exc_type}")
    try:
        first = pool.submit(spec, Cursor(spec.path, "claude-code", sources.JSONL), 64 << 20,
                            workers.PIECE_BYTES, workers.PIECE_EVENTS)
        first.result(timeout=60)  # the worker is up
        os.kill(pool.pids()[0], signal.SIGSTOP)  # it reads nothing more: rounds wait
        futures: list[Future[Any]] = [
            pool.submit(spec, Cursor(spec.path, "claude-code", sources.JSONL), 64 << 20,
                        workers.PIECE_BYTES, workers.PIECE_EVENTS) for _ in range(4)]
        assert futures[-1].cancel()  # not sent yet: taken back
        os.kill(pool.pids()[0], signal.SIGKILL)
        for f in futures[:-1]:
            with pytest.raises(WorkerGone):
                f.result(timeout=30)
        assert futures[-1].cancelled()
        # A frame that was on its way when the worker died meets a broken pipe.
        pool._workers[0]._outbox.put(("a round", "sent too late"))
        with pytest.raises(WorkerGone):
            pool.submit(spec, Cursor(spec.path, "claude-code", sources.JSONL), 1,
                        workers.PIECE_BYTES, workers.PIECE_EVENTS)
    finally:
        pool.shutdown()
        threading.excepthook = saved_hook
    assert failed == []
