"""The checkpointer thread (store/wal.py) on a real SQLite file: it copies the
WAL into the database off the writer's thread, so the writer's next commit starts the
log over and the file stops growing, with no checkpoint run by the writer."""

from __future__ import annotations

import time
from pathlib import Path

from agentsrc_daemon.store.connection import PAGE_SIZE, connect
from agentsrc_daemon.store.wal import Checkpointer


def _writer(db: Path):  # type: ignore[no-untyped-def]
    conn = connect(db)
    conn.execute("PRAGMA wal_autocheckpoint=0")  # only the checkpointer checkpoints
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB)")
    return conn


def _commits(conn, n: int, ckpt: Checkpointer | None) -> None:  # type: ignore[no-untyped-def]
    for i in range(n):
        with conn:
            conn.execute("INSERT INTO t(v) VALUES(?)", (bytes(PAGE_SIZE // 2),))
        if ckpt is not None:
            before = ckpt.checkpoints
            ckpt.notify()
            deadline = time.monotonic() + 10
            while ckpt.checkpoints == before and time.monotonic() < deadline:
                time.sleep(0.002)
            assert ckpt.checkpoints > before, i


def test_without_it_the_wal_grows_with_every_commit(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    conn = _writer(db)
    _commits(conn, 60, None)
    wal = Path(str(db) + "-wal").stat().st_size
    assert wal > 60 * PAGE_SIZE // 2  # every commit appended its pages
    conn.close()


def test_it_keeps_the_wal_to_a_few_frames(tmp_path: Path) -> None:
    db = tmp_path / "b.db"
    conn = _writer(db)
    ckpt = Checkpointer(db, interval_s=0.0)
    ckpt.start()
    try:
        _commits(conn, 60, ckpt)
        wal = Path(str(db) + "-wal").stat().st_size
        # The log restarts after each copy: the file holds a couple of commits' frames.
        assert wal <= 8 * (PAGE_SIZE + 24) + 32, wal
        assert ckpt.checkpoints >= 60
        # Everything is in the database file: another connection reads it all.
        check = connect(db, readonly=True)
        assert check.execute("SELECT count(*) FROM t").fetchone() == (60,)
        check.close()
    finally:
        ckpt.stop()
        conn.close()
    assert not ckpt._thread.is_alive()


def test_stop_without_a_commit_ends_the_thread(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    _writer(db).close()
    ckpt = Checkpointer(db)
    ckpt.start()
    ckpt.stop()
    assert (ckpt._thread.is_alive(), ckpt.checkpoints) == (False, 0)


def _checkpoints_within(ckpt: Checkpointer, n: int, seconds: float) -> int:
    deadline = time.monotonic() + seconds
    while ckpt.checkpoints < n and time.monotonic() < deadline:
        time.sleep(0.002)
    return ckpt.checkpoints


def test_a_hurried_checkpoint_skips_the_pause(tmp_path: Path) -> None:
    """Near the writer's RESTART (CHECKPOINT_HURRY_PAGES) the daemon notifies with
    hurry: the next checkpoint runs as soon as the last is done, not after the pause."""
    db = tmp_path / "d.db"
    conn = _writer(db)

    def checkpointed(ckpt: Checkpointer, hurry: bool, seconds: float) -> int:
        """A commit, the daemon's notify, and the checkpoints done within ``seconds``."""
        before = ckpt.checkpoints
        _commits(conn, 1, None)
        ckpt.notify(hurry=hurry)
        return _checkpoints_within(ckpt, before + 1, seconds)

    plain = Checkpointer(db, interval_s=30.0)
    hurried = Checkpointer(db, interval_s=30.0)
    try:
        plain.start()
        assert checkpointed(plain, False, 10) == 1
        # A commit during the pause waits for it: no second checkpoint for now.
        assert checkpointed(plain, False, 0.5) == 1
        plain.stop()
        # Hurried: the one after a checkpoint follows it at once.
        hurried.start()
        assert checkpointed(hurried, True, 10) == 1
        assert checkpointed(hurried, True, 10) == 2
        # Without a hurry the next one still runs at once (no pause after a hurried
        # one), and the pause comes after it again.
        assert checkpointed(hurried, False, 10) == 3
        assert checkpointed(hurried, False, 0.5) == 3
    finally:
        plain.stop()
        hurried.stop()
        conn.close()


def test_a_hurry_cuts_the_pause_short(tmp_path: Path) -> None:
    """A hurry that comes during the pause after a plain checkpoint ends the pause: the
    WAL nearing the writer's RESTART is copied now, not up to interval_s later."""
    db = tmp_path / "e.db"
    conn = _writer(db)
    ckpt = Checkpointer(db, interval_s=30.0)
    try:
        ckpt.start()
        _commits(conn, 1, None)
        ckpt.notify()
        assert _checkpoints_within(ckpt, 1, 10) == 1
        _commits(conn, 1, None)
        ckpt.notify()  # in the pause: waits for it
        assert _checkpoints_within(ckpt, 2, 0.3) == 1
        ckpt.notify(hurry=True)
        assert _checkpoints_within(ckpt, 2, 10) == 2
    finally:
        ckpt.stop()
        conn.close()


def _frames_counted(conn) -> list[int]:  # type: ignore[no-untyped-def]
    """The WAL's frames after each commit, as SQLite's WAL hook tells them."""
    frames: list[int] = []

    def hook(_conn, _name: str, pages: int) -> int:  # type: ignore[no-untyped-def]
        frames.append(pages)
        return 0

    conn.set_wal_hook(hook)
    return frames


def test_catch_up_waits_for_every_frame_then_the_next_commit_starts_the_log_over(
    tmp_path: Path
) -> None:
    db = tmp_path / "f.db"
    conn = _writer(db)
    frames = _frames_counted(conn)
    ckpt = Checkpointer(db, interval_s=30.0)
    try:
        ckpt.start()
        _commits(conn, 1, None)
        ckpt.notify()  # a first checkpoint, then the pause
        assert _checkpoints_within(ckpt, 1, 10) == 1
        _commits(conn, 5, None)  # not copied: the checkpointer pauses
        assert frames[-1] > frames[0]
        assert ckpt.catch_up(10, lambda: False)
        assert ckpt.caught_up == ckpt.started == 2
        _commits(conn, 1, None)
        # Every frame was copied: SQLite began the log again at this commit, whose own
        # frames are all it holds (no RESTART by the writer).
        assert frames[-1] == frames[0]
    finally:
        ckpt.stop()
        conn.close()


def test_catch_up_gives_up_when_told_or_when_a_reader_holds_the_log(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    conn = _writer(db)
    ckpt = Checkpointer(db, interval_s=0.0)
    reader = connect(db, readonly=True)
    try:
        ckpt.start()
        _commits(conn, 2, None)
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM t").fetchone() == (2,)  # a snapshot
        _commits(conn, 2, None)  # frames past the reader's snapshot: not copied while it reads
        t0 = time.monotonic()
        assert not ckpt.catch_up(0.2, lambda: False)
        assert 0.2 <= time.monotonic() - t0 < 5
        assert ckpt.started > ckpt.caught_up
        t0 = time.monotonic()
        assert not ckpt.catch_up(10, lambda: True)  # an append came in: at once
        assert time.monotonic() - t0 < 1
        reader.execute("COMMIT")
        assert ckpt.catch_up(10, lambda: False)
    finally:
        ckpt.stop()
        reader.close()
        conn.close()
