"""The backfill scheduler's decisions, with a stand-in for the worker pool (the real
pool, with processes, is exercised end to end in test_daemon.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.config import load_config
from agentsrc_daemon.cursor import Cursor
from agentsrc_daemon.ingest import sources
from agentsrc_daemon.ingest.round import FileRound, Ingestor
from agentsrc_daemon.ingest.workers import BackfillScheduler, WorkerRound
from agentsrc_daemon.store import Batch, Store


class FakePool:
    """One worker with room for ``room`` rounds; records what the scheduler asks of it."""

    size = 1

    def __init__(self, room: int = 1) -> None:
        self.room = room
        self.in_flight: dict[str, Any] = {}
        self.broken = False
        self.submitted: list[tuple[str, int, int]] = []
        self.held: list[tuple[int, int]] = []  # has_room's arguments, in order
        self.waits = 0
        self.finished: list[WorkerRound] = []
        self.shut_down = False

    def has_room(self, held: int = 0, held_bytes: int = 0) -> bool:
        self.held.append((held, held_bytes))
        return not self.broken and len(self.in_flight) + held < self.room

    def submit(self, spec: sources.SourceSpec, cursor: Cursor, budget: int) -> bool:
        self.in_flight[spec.path] = cursor
        self.submitted.append((spec.path, budget))
        return True

    def cancel(self, path: str) -> bool:
        if self.in_flight.get(path) is None:  # None: a round a worker has started
            return False
        del self.in_flight[path]
        return True

    def collect_due(self) -> bool:
        return bool(self.finished)

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
    return BackfillScheduler(cfg, lambda r: committed.extend(r) is None, budget_bytes=123), committed


def test_without_a_pool_every_file_is_read_here(scheduler: Any) -> None:
    backfill, committed = scheduler
    ingestor = Ingestor(max_line_bytes=1 << 20)
    assert [backfill.place(spec(n), ingestor) for n in "abc"] == [True, True, True]
    assert backfill.rounds_here == 3
    backfill.collect()
    backfill.end_round(["/r/a.jsonl"], stopping=False)
    backfill.close(ingestor)
    assert committed == [] and backfill.pool is None


def test_workers_off_means_no_pool_whatever_the_backlog(tmp_path: Path) -> None:
    backfill = BackfillScheduler(
        load_config(env={"HOME": str(tmp_path), "AGENTSRC_WORKERS": "0"}), lambda r: True,
        budget_bytes=1,
    )
    ingestor = Ingestor(max_line_bytes=1 << 20)
    backfill.begin_round(["/r/a.jsonl"], lambda: 1 << 40, ingestor)
    assert backfill.pool is None and not ingestor.defer_big_lines


def test_workers_take_what_their_hands_hold_and_the_thread_the_rest(scheduler: Any) -> None:
    """A file goes to the worker while its hands have room (rounds in flight and
    finished ones not committed, by count and by the bytes those read); when they are
    full the thread reads the file itself, at once: it never waits for the worker while
    there is a file to read."""
    backfill, committed = scheduler
    pool = backfill.pool = FakePool(room=2)
    ingestor = Ingestor(max_line_bytes=1 << 20, defer_big_lines=True)
    # The first files go to the worker, with their cursors and the round budget.
    assert [backfill.place(spec(n), ingestor) for n in "ab"] == [False, False]
    assert pool.submitted == [("/r/a.jsonl", 123), ("/r/b.jsonl", 123)]
    assert pool.in_flight["/r/a.jsonl"] is ingestor.cursors["/r/a.jsonl"]
    assert backfill.place(spec("a"), ingestor) is False  # in a worker's hands
    # The worker is full: this thread reads the next files, without waiting.
    assert [backfill.place(spec(n), ingestor) for n in "ce"] == [True, True]
    assert (backfill.rounds_here, pool.waits) == (2, 0)
    # A deferred file waits for the pool to close.
    backfill.defer("/r/d.jsonl")
    assert backfill.place(spec("d"), ingestor) is False
    # Finished rounds go to commit_round, and count as the workers'; while they wait
    # to be committed they are counted in the worker's hands, with what they read.
    pool.in_flight = {"/r/a.jsonl": None}
    done = WorkerRound("/r/a.jsonl", Batch(), FileRound("/r/a.jsonl", bytes=77),
                       Cursor("/r/a.jsonl", "codex", "jsonl"))
    pool.finished = [done]
    assert backfill.collect_due()
    backfill.collect(stop=lambda: True)
    assert committed == [done] and backfill.rounds_in_workers == 1
    assert not backfill.collect_due()
    backfill.ready = {"/r/x.jsonl": [done]}  # its pieces' bytes: 77
    assert backfill.place(spec("f"), ingestor) is False  # room: 0 in flight + 1 held < 2
    assert pool.held[-1] == (1, 77) and pool.submitted[-1] == ("/r/f.jsonl", 123)
    backfill.ready = {}
    del pool.in_flight["/r/f.jsonl"]
    # Only the deferred file is left, nothing in flight: nothing left for the thread
    # either, so it waits briefly, and the next round closes the pool.
    backfill.end_round(["/r/d.jsonl"], stopping=False)
    assert pool.waits == 1 and backfill.pool is pool
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
            return [p for p, _ in workers.round_pieces(
                s, Cursor(s.path, agent, sources.JSONL), 64 << 20, piece, events
            )]
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
    saved = [st.cursors.load()[s.path] for st in (a, b, c)]
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

    def commit(rounds: list[WorkerRound]) -> bool:
        (r,) = rounds  # one file each time here (see the next test for several)
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


def test_finished_rounds_of_several_files_are_committed_together(tmp_path: Path) -> None:
    """Files' finished rounds are committed several in one transaction, in the order
    they finished, up to unit_events; a file whose pieces do not all fit ends the
    commit (its later pieces are the next one's); a refused commit drops every file in
    it (each read again from its committed cursor)."""
    commits: list[list[tuple[str, int, int]]] = []
    refuse: set[int] = set()

    def commit(rounds: list[WorkerRound]) -> bool:
        commits.append([(r.path, len(r.batch.rows), r.cursor.offset) for r in rounds])
        return not refuse & {r.cursor.offset for r in rounds}

    cfg = load_config(env={"HOME": str(tmp_path)})
    backfill = BackfillScheduler(cfg, commit, budget_bytes=1)
    pool = backfill.pool = FakePool()  # type: ignore[assignment]
    a = [_piece("/r/a.jsonl", 40, 1, more=False)]
    b = [_piece("/r/b.jsonl", 50, 10 * (i + 1), more=i < 2) for i in range(3)]
    c = [_piece("/r/c.jsonl", 30, 5, more=False)]
    d = [_piece("/r/d.jsonl", 500, 9, more=False)]
    pool.done = lambda wait=False: [a, b, c, d]  # type: ignore[method-assign]
    backfill.unit_events = 150
    assert backfill.collect()
    assert commits == [
        # a whole, and b's first two pieces (40 + 100); its third does not fit
        [("/r/a.jsonl", 40, 1), ("/r/b.jsonl", 100, 20)],
        # b's last piece and c (50 + 30); d (500) does not fit
        [("/r/b.jsonl", 50, 30), ("/r/c.jsonl", 30, 5)],
        # d alone, over unit_events: a commit takes one piece at least
        [("/r/d.jsonl", 500, 9)],
    ]
    assert backfill.ready == {}
    e = [_piece("/r/e.jsonl", 10, 3, more=False)]
    f = [_piece("/r/f.jsonl", 10, 4, more=False)]
    g = [_piece("/r/g.jsonl", 500, 6, more=False)]
    refuse.add(4)
    pool.done = lambda wait=False: [e, f, g]  # type: ignore[method-assign]
    assert backfill.collect()
    assert commits[3:] == [[("/r/e.jsonl", 10, 3), ("/r/f.jsonl", 10, 4)]]
    assert list(backfill.ready) == ["/r/g.jsonl"]  # not in the refused commit: kept


@st.composite
def _finished_rounds(draw: st.DrawFn) -> list[list[tuple[int, int]]]:
    """Files' finished rounds: per file, its pieces as (events, offset after)."""
    files = []
    for _ in range(draw(st.integers(1, 8))):
        sizes = draw(st.lists(st.integers(0, 300), min_size=1, max_size=5))
        offsets = [sum(sizes[: i + 1]) + i + 1 for i in range(len(sizes))]
        files.append(list(zip(sizes, offsets, strict=True)))
    return files


@settings(max_examples=300, deadline=None)
@given(rounds=_finished_rounds(), unit=st.integers(1, 600),
       stops=st.lists(st.booleans(), max_size=20))
def test_collect_commits_every_piece_once_in_order(
    rounds: list[list[tuple[int, int]]], unit: int, stops: list[bool]
) -> None:
    """Whatever the pieces and the batch size, and whenever appends interrupt: every
    piece is committed exactly once; a file's pieces in order, each file once per
    commit and its rounds' pieces consecutive; a commit holds at most unit_events events
    unless it is one piece; the files of a commit in the order their rounds finished."""
    commits: list[list[WorkerRound]] = []
    backfill = BackfillScheduler(load_config(env={"HOME": "/nonexistent"}),
                                 lambda r: commits.append(r) is None, budget_bytes=1)
    pool = backfill.pool = FakePool()  # type: ignore[assignment]
    backfill.unit_events = unit
    finished = [[_piece(f"/r/{i}.jsonl", n, off, more=j < len(ps) - 1)
                 for j, (n, off) in enumerate(ps)] for i, ps in enumerate(rounds)]
    pool.done = lambda wait=False: finished  # type: ignore[method-assign]
    interrupts = iter(stops)
    while True:
        backfill.collect(stop=lambda: next(interrupts, False))
        pool.done = lambda wait=False: []  # type: ignore[method-assign]
        if not backfill.ready:
            break
    order = [f"/r/{i}.jsonl" for i in range(len(rounds))]
    seen: dict[str, list[int]] = {}
    for units in commits:
        paths = [u.path for u in units]
        assert len(set(paths)) == len(paths)
        assert paths == sorted(paths, key=order.index)
        total = sum(len(u.batch.rows) for u in units)
        assert total <= unit or len(units) == 1
        for u in units:
            seen.setdefault(u.path, []).append(u.cursor.offset)
    assert seen == {f"/r/{i}.jsonl": sorted(seen[f"/r/{i}.jsonl"]) for i in range(len(rounds))}
    for i, ps in enumerate(rounds):
        path = f"/r/{i}.jsonl"
        # Every piece's events once, and the last cursor is the round's end.
        assert sum(len(u.batch.rows) for units in commits for u in units if u.path == path) == sum(
            n for n, _ in ps)
        assert seen[path][-1] == ps[-1][1]


def test_the_pool_says_when_its_finished_rounds_are_due(tmp_path: Path) -> None:
    """BackfillPool.collect_due (real futures, completed as the pool's result thread
    completes them): nothing finished, never; then once COLLECT_ROUNDS rounds are done,
    or fewer than LOW_WATER_ROUNDS are left unfinished in the worker's hands; ``done``
    takes them and the count starts over."""
    from concurrent.futures import Future

    from agentsrc_daemon.ingest import workers

    pool = workers.BackfillPool(load_config(env={"HOME": str(tmp_path)}))
    try:
        n = workers.COLLECT_ROUNDS * pool.size + workers.LOW_WATER_ROUNDS * pool.size + 2
        futures: list[Future[list[workers.Piece]]] = []
        for i in range(n):
            fut: Future[list[workers.Piece]] = Future()
            fut.add_done_callback(pool._on_finished)
            pool.in_flight[f"/r/{i}.jsonl"] = fut
            futures.append(fut)
        assert not pool.collect_due()
        for fut in futures[: workers.COLLECT_ROUNDS * pool.size]:
            assert not pool.collect_due()  # too few done, plenty unfinished
            fut.set_result([])
        assert pool.collect_due()
        assert len(pool.done()) == workers.COLLECT_ROUNDS * pool.size
        assert not pool.collect_due() and pool.finished == 0
        # A round taken back before it started is no finished round.
        last = f"/r/{n - 1}.jsonl"
        assert pool.cancel(last) and last not in pool.in_flight
        assert not pool.collect_due() and pool.finished == 0
        pool.in_flight[last] = Future()
        # Few left in the worker's hands: one finished round is enough.
        left = list(pool.in_flight.values())
        for fut in left[: len(left) - workers.LOW_WATER_ROUNDS * pool.size]:
            fut.set_result([])
        pool.done()
        assert not pool.collect_due()
        left = list(pool.in_flight.values())
        left[0].set_result([])
        assert pool.collect_due()
    finally:
        pool.shutdown()


def test_an_appended_file_is_taken_back_from_the_queue_and_stays_here(scheduler: Any) -> None:
    """A file the watcher saw written (take_back): read here at once when no worker
    has it, or when its round had not started (taken back from the executor's queue);
    a round started or finished, or a deferred file, is waited for. From then on the
    file is this thread's: it is not given to a worker again while the pool runs."""
    backfill, committed = scheduler
    ingestor = Ingestor(max_line_bytes=1 << 20, defer_big_lines=True)
    assert backfill.take_back("/r/a.jsonl") is True  # no pool: nothing to wait for
    assert backfill.live == set()
    pool = backfill.pool = FakePool(room=16)
    assert [backfill.place(spec(n), ingestor) for n in "abcd"] == [False] * 4
    pool.in_flight["/r/b.jsonl"] = None  # a worker started it
    del pool.in_flight["/r/c.jsonl"]
    backfill.ready = {"/r/c.jsonl": []}  # finished, not committed yet
    backfill.defer("/r/e.jsonl")
    assert [backfill.take_back(f"/r/{n}.jsonl") for n in "abcef"] == [
        True, False, False, False, True]
    assert set(pool.in_flight) == {"/r/b.jsonl", "/r/d.jsonl"}  # a taken back
    assert backfill.live == {f"/r/{n}.jsonl" for n in "abcef"}
    # Live files are read here even with room in the worker's hands.
    assert [backfill.place(spec(n), ingestor) for n in "afg"] == [True, True, False]
    assert [p for p, _ in pool.submitted] == [f"/r/{n}.jsonl" for n in "abcdg"]
    backfill.ready = {}
    pool.in_flight.clear()
    backfill.deferred.clear()
    backfill.close(ingestor)
    assert backfill.live == set() and committed == []


def test_a_worker_whose_daemon_is_already_gone_exits() -> None:
    """A daemon killed while its worker was still starting has left the worker to init
    before the worker looks: it must exit all the same, not wait for init to die. The
    watcher is run in a real process whose daemon pid is not its parent."""
    import subprocess
    import sys
    import time

    code = ("import time\n"
            "from agentsrc_daemon.ingest import workers\n"
            "workers._exit_with_parent(1)\n"  # not this process's parent
            "time.sleep(30)\n")
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], timeout=20)
    assert done.returncode == 0 and time.monotonic() - t0 < 10
    # And it stays while its daemon lives.
    alive = subprocess.Popen([sys.executable, "-c", code.replace("(1)", "(__import__('os').getppid())")])
    try:
        time.sleep(2.5)
        assert alive.poll() is None
    finally:
        alive.kill()
        alive.wait()


def test_the_freed_heap_is_handed_back_every_half_second_while_the_pool_runs(
    tmp_path: Path,
) -> None:
    """After a collect that committed something, the heap is trimmed once TRIM_EVERY_S
    has passed since the last trim (a clock stands in for time); a collect with nothing
    to commit trims nothing."""
    from agentsrc_daemon.system.memory import TRIM_EVERY_S, HeapTrimmer

    now = [100.0]
    trims: list[float] = []
    cfg = load_config(env={"HOME": str(tmp_path)})
    backfill = BackfillScheduler(cfg, lambda r: True, budget_bytes=1)
    backfill.trimmer = HeapTrimmer(trim=lambda: trims.append(now[0]), clock=lambda: now[0])
    pool = backfill.pool = FakePool()  # type: ignore[assignment]
    rounds = iter([[[_piece(f"/r/{i}.jsonl", 1, 1, more=False)]] for i in range(6)])
    pool.done = lambda wait=False: next(rounds)  # type: ignore[method-assign]
    for step in (0.1, TRIM_EVERY_S, 0.1, 0.2, TRIM_EVERY_S):
        now[0] += step
        assert backfill.collect()
    assert trims == pytest.approx([100.0 + 0.1 + TRIM_EVERY_S, 100.0 + 0.1 + 2 * TRIM_EVERY_S + 0.3])
    pool.done = lambda wait=False: []  # type: ignore[method-assign]
    now[0] += 10
    assert not backfill.collect() and len(trims) == 2
