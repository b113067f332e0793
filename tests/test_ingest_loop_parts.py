"""The ingest loop's parts built in-process, each with a fake clock and a real store in
a temporary directory: the source queue, the committer (with its refused commits and
their retry), the round scheduler (appends first, the carried batch), the WAL's idle
upkeep and the status board. The daemon wires them (daemon.py); tests/test_daemon.py and
its kin run them together in the real process."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest

from agentsrc_daemon.config import Config, load_config
from agentsrc_daemon.cursor_table import CursorTable, peek_items
from agentsrc_daemon.errors import RpcError
from agentsrc_daemon.ingest import status as status_mod
from agentsrc_daemon.ingest.committer import RETRY_MAX_S, Committer, StoreErrors
from agentsrc_daemon.ingest.priority import LivePriority
from agentsrc_daemon.ingest.progress import Backlog, Progress
from agentsrc_daemon.ingest.queue import SourceQueue
from agentsrc_daemon.ingest.round import Ingestor
from agentsrc_daemon.ingest.scheduler import FILE_BUDGET_BYTES, LIVE_BATCH_S, RoundScheduler
from agentsrc_daemon.ingest.status import StatusBoard
from agentsrc_daemon.ingest.steps import StepTimer
from agentsrc_daemon.rpc.transport import Hub, Subscriber, Subscription
from agentsrc_daemon.store import Batch, Reader, Store
from agentsrc_daemon.store.connection import PAGE_SIZE
from agentsrc_daemon.store.wal import (
    WAL_CHECKPOINT_PAGES,
    WAL_FORCE_PAGES,
    WAL_IDLE_S,
    Checkpointer,
    WalUpkeep,
)

SID_A = "aaaaaaaa-0000-4000-8000-000000000001"
SID_B = "bbbbbbbb-0000-4000-8000-000000000002"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def prompt_line(sid: str, uuid: str, text: str = "a prompt") -> bytes:
    return orjson.dumps({
        "type": "user", "sessionId": sid, "uuid": uuid, "parentUuid": None,
        "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/proj", "version": "2.1.0",
        "message": {"role": "user", "content": text},
    }) + b"\n"


def transcript(home: Path, sid: str, n: int, start: int = 0) -> Path:
    path = home / ".claude" / "projects" / "-work-proj" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as fh:
        fh.write(b"".join(prompt_line(sid, f"{sid[:2]}-{i}") for i in range(start, start + n)))
    return path


class Parts:
    """The loop's parts wired as daemon.py wires them, without threads or a socket."""

    def __init__(self, home: Path, data: Path, clock: Clock) -> None:
        self.cfg: Config = load_config(env={"HOME": str(home), "AGENTSRC_WORKERS": "0"},
                                       data_dir=data)
        self.clock = clock
        data.mkdir(mode=0o700, parents=True)
        self.store = Store(self.cfg.db_path)
        self.ingestor = Ingestor(max_line_bytes=1 << 20, cursor_store=self.store.cursors)
        self.queue = SourceQueue(self.cfg, clock)
        self.hub = Hub()
        self.progress = Progress()
        self.priority = LivePriority(FILE_BUDGET_BYTES, self.cfg.batch_max_events)
        self.waiting = False  # "the watcher marked a file since the last look"
        self.waits: Any = None  # or a function that says it
        self.commits: list[tuple[str, int]] = []
        timer = StepTimer()
        self.committer = Committer(
            self.store, self.queue, lambda: self.ingestor, self.hub, timer,
            WalUpkeep(self.store, None, clock), append_waits=self.appends_waiting,
            on_progress=lambda: self.priority.progressed(clock()), clock=clock,
        )
        commit = self.committer.commit

        def counted(batch: Batch, what: str = "backfill") -> bool:
            if not batch.empty():
                self.commits.append((what, len(batch.events)))
            return commit(batch, what)

        self.committer.commit = counted  # type: ignore[method-assign]
        self.scheduler = RoundScheduler(
            self.cfg, self.queue, self.committer, self.priority, self.progress,
            lambda: self.ingestor, timer, appends_waiting=self.appends_waiting,
            stopping=threading.Event(), between_batches=lambda: None,
            backlog_bytes=lambda: 0, release_memory=lambda: None, clock=clock,
        )

    def appends_waiting(self) -> bool:
        return self.waits() if self.waits is not None else self.waiting

    def prompts(self) -> list[str]:
        reader = Reader(self.cfg.db_path)
        try:
            return [e["source_path"].rsplit("/", 1)[1][:2] for e in
                    reader.events(kinds=["prompt"], limit=1000)]
        finally:
            reader.close()

    def close(self) -> None:
        self.store.close()


@pytest.fixture()
def parts(tmp_path: Path) -> Any:
    p = Parts(tmp_path / "home", tmp_path / "data", Clock())
    yield p
    p.close()


# ---- the source queue -------------------------------------------------------------------


def test_reconcile_queues_news_counts_the_first_catch_up_and_finds_gone_files(
    parts: Parts, tmp_path: Path
) -> None:
    a = transcript(tmp_path / "home", SID_A, 3)
    b = transcript(tmp_path / "home", SID_B, 2)
    assert parts.queue.reconcile(parts.ingestor, parts.progress) == 2
    assert list(parts.queue.pending) == sorted([str(a), str(b)])
    assert (parts.progress.files_total, parts.progress.bytes_total) == (
        2, a.stat().st_size + b.stat().st_size)
    assert parts.queue.stats.files == 2 and parts.queue.stats.scans == 1
    parts.scheduler.run_round()
    assert not parts.queue.pending and parts.progress.files_done == 2
    # Nothing new: nothing queued; a file gone: queued, to be marked gone.
    assert parts.queue.reconcile(parts.ingestor, None) == 0
    b.unlink()
    assert parts.queue.reconcile(parts.ingestor, None) == 1
    assert list(parts.queue.pending) == [str(b)]
    assert parts.progress.files_total == 2  # counted during the first catch-up only


def test_appended_files_go_first_and_a_locked_database_waits_its_turn(
    parts: Parts, tmp_path: Path
) -> None:
    a = transcript(tmp_path / "home", SID_A, 1)
    b = transcript(tmp_path / "home", SID_B, 1)
    parts.queue.reconcile(parts.ingestor, None)
    assert parts.queue.appended({str(b)}) is True
    assert list(parts.queue.pending) == [str(b), str(a)]
    assert parts.queue.take_urgent() == {str(b)} and parts.queue.urgent == set()
    assert parts.queue.appended({str(tmp_path / "not-a-source.txt")}) is False
    spec = parts.queue.pending[str(a)]
    parts.queue.retry_later(str(a), spec, 0.5)
    assert list(parts.queue.pending) == [str(b)] and parts.queue.next_retry() == 1000.5
    assert sorted(parts.queue.with_bytes_to_read()) == sorted([str(a), str(b)])
    parts.queue.requeue_retries()
    assert str(a) not in parts.queue.pending  # not due yet
    parts.clock.now += 0.5
    parts.queue.requeue_retries()
    assert list(parts.queue.pending) == [str(b), str(a)] and parts.queue.retry == {}


# ---- the round scheduler and the committer ------------------------------------------------


def test_appends_are_committed_on_their_own_before_the_backfill(
    parts: Parts, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    transcript(home, SID_A, 5)
    b = transcript(home, SID_B, 4)
    parts.queue.reconcile(parts.ingestor, parts.progress)
    parts.scheduler.appended({str(b)})
    parts.scheduler.run_round()
    # b's 4 prompts (each a turn's start and its prompt, ending the turn before it) in a
    # commit of their own, then a's in the backfill's.
    assert parts.commits == [("appends", 4 * 3 - 1), ("backfill", 5 * 3 - 1)]
    assert parts.prompts() == ["bb"] * 4 + ["aa"] * 5
    assert not parts.scheduler.has_work()


def test_appends_read_for_long_are_committed_while_the_round_reads_on(
    parts: Parts, tmp_path: Path
) -> None:
    """Files appended at once are committed together, but once LIVE_BATCH_S went by
    reading them the ones read are committed (and published) before the next is read."""
    home = tmp_path / "home"
    paths = [transcript(home, sid, 1) for sid in (SID_A, SID_B, "cc" + SID_A[2:])]
    parts.queue.reconcile(parts.ingestor, parts.progress)
    ingest = parts.ingestor.ingest

    def slow(*args: Any, **kwargs: Any) -> Any:
        parts.clock.now += LIVE_BATCH_S * 0.75  # each file takes three quarters of it
        return ingest(*args, **kwargs)

    parts.ingestor.ingest = slow  # type: ignore[method-assign]
    parts.scheduler.appended({str(p) for p in paths})
    parts.scheduler.run_round()
    # The first two read in 1.5 windows: committed; the third at the round's end.
    assert parts.commits == [("appends", 2 * 2), ("appends", 2)]
    assert sorted(parts.prompts()) == ["aa", "bb", "cc"]


def test_a_backfill_batch_is_carried_past_appends_that_came_in(
    parts: Parts, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    a = transcript(home, SID_A, 5)
    parts.queue.reconcile(parts.ingestor, parts.progress)
    # An append comes in while the round reads a (the watcher marks a file once a's
    # lines are read): the batch read is not committed yet.
    parts.waits = lambda: str(a) in parts.ingestor.cursors
    parts.scheduler.run_round()
    # The round stopped after a's first line (a turn's start and its prompt), uncommitted.
    assert parts.commits == [] and parts.scheduler.carry is not None
    assert len(parts.scheduler.carry.events) == 2 and list(parts.queue.pending) == [str(a)]
    # The append: its file first, then the carried batch, then the rest of a.
    b = transcript(home, SID_B, 2)
    parts.waits = None
    parts.scheduler.appended({str(b)})
    parts.scheduler.run_round()
    assert parts.commits == [("appends", 2 * 3 - 1), ("backfill", 2), ("backfill", 4 * 3)]
    assert parts.scheduler.carry is None and not parts.scheduler.has_work()
    assert parts.prompts() == ["bb"] * 2 + ["aa"] * 5


def test_a_refused_commit_puts_its_files_back_and_waits_longer_each_time(
    parts: Parts, tmp_path: Path
) -> None:
    a = transcript(tmp_path / "home", SID_A, 3)
    parts.queue.reconcile(parts.ingestor, parts.progress)
    store_commit = parts.store.commit
    full = True

    def commit(batch: Batch, **kw: Any) -> Any:
        if full:  # a stand-in for a full disk: what SQLite raises then
            raise apsw.FullError("database or disk is full")
        return store_commit(batch, **kw)

    parts.store.commit = commit  # type: ignore[method-assign]
    errors = parts.committer.errors
    parts.scheduler.run_round()
    assert errors.count == 1 and errors.waiting() == 0.5
    assert list(parts.queue.pending) == [str(a)]
    assert str(a) not in parts.ingestor.cursors  # back to what the store holds: nothing
    for delay in (1.0, 2.0, 4.0):
        parts.clock.now = errors.retry_at
        parts.scheduler.run_round()
        assert errors.waiting() == delay
    errors.delay = RETRY_MAX_S
    parts.scheduler.run_round()
    assert errors.waiting() == RETRY_MAX_S  # it never waits longer
    full = False
    parts.scheduler.run_round()
    assert (errors.count, errors.waiting(), errors.delay) == (5, 0.0, 0.0)
    assert parts.prompts() == ["aa"] * 3  # every line once
    assert parts.ingestor.cursors[str(a)].offset == a.stat().st_size


def _queued(sub: Subscriber) -> list[dict[str, Any]]:
    out = []
    while not sub.queue.empty():
        out.append(sub.queue.get_nowait())
    return out


def test_committed_events_reach_a_subscriber_once(parts: Parts, tmp_path: Path) -> None:
    everything = Subscriber(Subscription(None, None, None))
    parts.hub.add(everything)
    transcript(tmp_path / "home", SID_A, 2)
    parts.queue.reconcile(parts.ingestor, parts.progress)
    parts.scheduler.run_round()
    got = _queued(everything)
    assert [r["kind"] for r in got].count("prompt") == 2 and len(got) == 2 * 3 - 1


def test_only_the_events_some_subscriber_wants_are_built(
    parts: Parts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With only filtered subscribers the committer builds the JSON of the events they
    want, not of every event committed (store/batch.py, Inserted.rows)."""
    from agentsrc_daemon.store import batch as batch_mod

    built: list[str] = []
    real = batch_mod.event_row_to_json

    def counting(row: Any) -> dict[str, Any]:
        built.append(row[2])  # its kind
        return real(row)

    monkeypatch.setattr(batch_mod, "event_row_to_json", counting)
    prompts = Subscriber(Subscription(None, ["prompt"], None))
    other_session = Subscriber(Subscription(None, None, "claude:" + SID_B))
    parts.hub.add(prompts)
    parts.hub.add(other_session)
    transcript(tmp_path / "home", SID_A, 2)
    parts.queue.reconcile(parts.ingestor, parts.progress)
    parts.scheduler.run_round()
    assert built == ["prompt", "prompt"]
    assert [r["kind"] for r in _queued(prompts)] == ["prompt", "prompt"]
    assert _queued(other_session) == []
    # One subscriber that takes everything: every event is built, once.
    everything = Subscriber(Subscription(None, [], None))
    parts.hub.add(everything)
    built.clear()
    transcript(tmp_path / "home", SID_A, 1, start=2)
    parts.queue.reconcile(parts.ingestor, parts.progress)
    parts.scheduler.run_round()
    assert len(built) == len(_queued(everything)) >= 1 and "prompt" in built
    assert [r["kind"] for r in _queued(prompts)] == ["prompt"]


# ---- the WAL's upkeep -------------------------------------------------------------------


def test_an_idle_wal_is_truncated_once_no_commit_came_for_a_while(
    tmp_path: Path
) -> None:
    clock = Clock()
    store = Store(tmp_path / "db.sqlite")
    wal = WalUpkeep(store, None, clock)
    steps = StepTimer()
    assert wal.truncate_if_idle(steps.step) == float("inf")  # nothing written yet
    store.conn.execute("CREATE TABLE scratch(x)")
    wal.committed()
    assert wal.dirty and (tmp_path / "db.sqlite-wal").stat().st_size > 0
    # Without a checkpointer thread there is nothing to wait for: truncated at once.
    assert wal.truncate_if_idle(steps.step) == float("inf")
    assert not wal.dirty and (tmp_path / "db.sqlite-wal").stat().st_size == 0
    store.close()


def test_with_a_checkpointer_the_wal_waits_for_quiet_then_asks_it_first(
    tmp_path: Path
) -> None:
    clock = Clock()
    store = Store(tmp_path / "db.sqlite")
    asked: list[bool] = []

    class Checkpointer:  # records what the upkeep asks of the real thread
        running = False

        def notify(self, *, hurry: bool = False) -> None:
            asked.append(hurry)

    wal = WalUpkeep(store, Checkpointer(), clock)  # type: ignore[arg-type]
    steps = StepTimer()
    store.conn.execute("CREATE TABLE scratch(x)")
    wal.committed()
    assert asked == []  # a small WAL: not worth a checkpoint after a commit
    assert wal.truncate_if_idle(steps.step) == 1000.0 + WAL_IDLE_S
    clock.now += WAL_IDLE_S
    again = wal.truncate_if_idle(steps.step)
    assert asked == [False] and again > clock.now and wal.dirty
    clock.now = again
    assert wal.truncate_if_idle(steps.step) == float("inf") and not wal.dirty
    store.close()


def test_past_a_quarter_of_the_bound_the_checkpointer_catches_up_and_no_restart_runs(
    tmp_path: Path
) -> None:
    """Past WAL_CHECKPOINT_PAGES the ingest thread waits for the checkpointer thread to
    copy every frame (not while an append waits), and SQLite starts the log over at
    the next commit: the writer's RESTART (a copy and sync on the ingest thread) is not
    run. Past WAL_FORCE_PAGES it still is."""
    store = Store(tmp_path / "db.sqlite")
    checkpointer = Checkpointer(store.db_path, interval_s=30.0)
    wal = WalUpkeep(store, checkpointer, Clock())
    steps = StepTimer()
    restarts: list[int] = []
    real_check = store.check_wal

    def check_wal() -> None:
        restarts.append(store.wal_pages)
        real_check()

    store.check_wal = check_wal  # type: ignore[method-assign]
    store.conn.execute("CREATE TABLE scratch(x BLOB)")

    def fill(pages: int) -> None:  # commits of 32 pages each, as the loop makes them
        while store.wal_pages < pages:
            with store.conn:
                store.conn.executemany("INSERT INTO scratch VALUES (?)",
                                       [(bytes(PAGE_SIZE),)] * 32)
            wal.committed()

    checkpointer.start()
    try:
        fill(WAL_CHECKPOINT_PAGES)
        assert store.wal_due
        wal.check(lambda: True, steps.step)  # an append waits: no wait, no restart
        assert store.wal_due and restarts == []
        wal.check(lambda: False, steps.step)
        assert restarts == [] and checkpointer.caught_up == checkpointer.started
        with store.conn:
            store.conn.execute("INSERT INTO scratch VALUES (x'00')")
        assert store.wal_pages < 8 and not store.wal_due  # the log began again
        # A reader on an old snapshot keeps every frame after it in the log: past
        # WAL_FORCE_PAGES the writer's RESTART runs (and waits the reader out).
        reader = Reader(store.db_path)
        reader.conn.execute("BEGIN")
        reader.conn.execute("SELECT count(*) FROM scratch").fetchone()
        fill(WAL_FORCE_PAGES)
        threading.Timer(0.1, lambda: reader.conn.execute("COMMIT")).start()
        wal.check(lambda: False, steps.step)
        assert restarts and restarts[0] >= WAL_FORCE_PAGES and store.wal_pages == 0
        reader.close()
    finally:
        checkpointer.stop()
        store.close()


# ---- status -------------------------------------------------------------------------------


def test_the_board_says_catching_up_until_live_and_nothing_waits(
    parts: Parts, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    errors = StoreErrors(parts.clock)
    backlog = Backlog(lambda: 7, lambda: 1, parts.clock)
    backlog.progress = parts.progress
    working = [True]
    owed: list[dict[str, Any] | None] = [None]
    board = StatusBoard(parts.cfg, parts.progress, backlog, parts.queue, errors, parts.hub,
                        lambda: working[0], lambda: owed[0])
    parts.progress.bytes_total = 100
    backlog.refresh(force=True)
    assert backlog.value == (100, 1)  # the first catch-up's total less what is done
    assert board.state() == "catching_up"
    assert board.line() == "catching up: 0/0 files, 0/0 MiB"
    # Before the store is ready only status answers, with the migration's progress.
    board.migration = {"name": "keys", "done": 5, "total": 20}
    reader = Reader(parts.cfg.db_path)
    try:
        st = board.report(reader)
        assert st["state"] == "migrating" and st["migration"]["fraction"] == 0.25
        monkeypatch.setattr(status_mod, "MIGRATION_WAIT_S", 0.01)
        with pytest.raises(RpcError, match=r"being migrated \(keys: 5/20 events\)"):
            board.gated(lambda r, p: "answered")(reader, {})
        board.store_ready.set()
        assert board.gated(lambda r, p: "answered")(reader, {}) == "answered"
        board.live = True
        assert board.state() == "catching_up"  # files still wait
        working[0] = False
        backlog.progress = None
        backlog.refresh(force=True)
        st = board.report(reader)
        assert (st["state"], st["pending_bytes"], st["pending_files"]) == ("live", 7, 1)
        assert st["store_errors"] == {"count": 0, "last_error": None, "last_at": None,
                                      "retry_in_s": 0.0}
        assert board.line() == "live: 0 files ingested"
        # Caught up, the deferred work still owed: "indexing", with what it is.
        owed[0] = {"search_build_left": 12345, "search_merge_pages": 0, "reprice": True}
        st = board.report(reader)
        assert (st["state"], st["indexing"]) == ("indexing", owed[0])
        assert board.caught_up()
        assert board.line() == ("indexing: search index, 12,345 events left;"
                                " pricing history again")
        owed[0] = {"search_build_left": 0, "search_merge_pages": 640, "reprice": False}
        assert board.line() == "indexing: search index merges, 640 pages"
        working[0] = True  # a file waits again: catching up comes first
        assert board.state() == "catching_up" and not board.caught_up()
        working[0], owed[0] = False, None
        assert board.report(reader)["indexing"] is None
    finally:
        reader.close()


@pytest.mark.parametrize("table", [False, True], ids=["dict", "cursor_table"])
def test_states_of_files_not_read_lately_go_back_to_the_store_and_come_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: bool
) -> None:
    """Past KEPT_STATES, a committed file's adapter state is dropped from memory and read
    again from the store when the file is: the events after it are the same as with
    every state kept (the turn a prompt closes is in that state). In the daemon's
    CursorTable those files' cursors are packed again, and unpacked when read."""
    from agentsrc_daemon.ingest import round as round_mod

    packed: list[int] = []

    def run(kept: int, home: Path, data: Path) -> tuple[list[str], Parts]:
        monkeypatch.setattr(round_mod, "KEPT_STATES", kept)
        parts = Parts(home, data, Clock())
        if table:
            parts.ingestor.cursors = CursorTable()
        paths = [transcript(home, f"{c * 8}-0000-4000-8000-000000000000", 2) for c in "abcde"]
        parts.queue.reconcile(parts.ingestor, parts.progress)
        parts.scheduler.run_round()
        held = sorted(p for p, c in peek_items(parts.ingestor.cursors) if not c.state_in_store)
        if isinstance(parts.ingestor.cursors, CursorTable):
            packed.append(parts.ingestor.cursors.packed_count())
        # More lines in the first file: its state (the open turn) is needed again.
        transcript(home, f"{'a' * 8}-0000-4000-8000-000000000000", 2, start=2)
        parts.scheduler.appended({str(paths[0])})
        parts.scheduler.run_round()
        reader = Reader(parts.cfg.db_path)
        try:
            keys = [(e["kind"], e["turn_id"], e["source_path"].rsplit("/", 1)[1])
                    for e in reader.events(limit=1000)]
        finally:
            reader.close()
        parts.close()
        return held + [repr(k) for k in keys], parts

    released, parts = run(2, tmp_path / "a" / "home", tmp_path / "a" / "data")
    kept_all, _ = run(64, tmp_path / "b" / "home", tmp_path / "b" / "data")
    # Two states kept in memory, not five; the events identical to keeping them all.
    held_released = [h for h in released if h.startswith("/")]
    held_all = [h for h in kept_all if h.startswith("/")]
    assert (len(held_released), len(held_all)) == (2, 5)
    strip = lambda rows: [r for r in rows if not r.startswith("/")]  # noqa: E731
    assert strip(released) == strip(kept_all)
    assert len(strip(released)) == 5 * 5 + 6  # 5 files of 2 prompts, then 2 more in one
    assert packed == ([3, 0] if table else [])
