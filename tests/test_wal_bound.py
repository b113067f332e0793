"""The writer's WAL bound (store/wal.py, WalBound): a RESTART at a quarter of the bound
gives up on a reader that outlasts WAL_RESTART_BUSY_MS, and past half the bound it is
tried again until it completes (a stall of the writer rather than a WAL past its bound).
Real SQLite connections on one WAL file; the reader is a real read transaction held
open on another thread."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import apsw

from agentsrc_daemon.store.connection import PAGE_SIZE, WAL_CHECKPOINT_PAGES, connect
from agentsrc_daemon.store.wal import (
    WAL_HARD_PAGES,
    WAL_RESTART_BUSY_MS,
    WalBound,
    restart_checkpoint,
    restart_checkpoint_within,
)


def _writer(tmp_path: Path) -> apsw.Connection:
    conn = connect(tmp_path / "db")
    conn.execute("CREATE TABLE t (v BLOB)")
    return conn


def _write_pages(conn: apsw.Connection, pages: int) -> None:
    with conn:
        for _ in range(pages):
            conn.execute("INSERT INTO t VALUES (randomblob(?))", (PAGE_SIZE - 200,))


class HeldRead:
    """A reader on the current snapshot, held for ``seconds`` on its own thread;
    ``ends_at``: the moment (monotonic) just before its read transaction ends."""

    def __init__(self, db: Path, seconds: float) -> None:
        self.ends_at = float("inf")
        started = threading.Event()

        def run() -> None:
            reader = connect(db, readonly=True)
            with reader:
                reader.execute("SELECT COUNT(*) FROM t").fetchone()
                started.set()
                time.sleep(seconds)
                self.ends_at = time.monotonic()
            reader.close()

        self.thread = threading.Thread(target=run)
        self.thread.start()
        assert started.wait(5)

    def join(self) -> None:
        self.thread.join()


def test_a_restart_gives_up_on_a_long_reader_and_the_retries_outwait_it(tmp_path: Path) -> None:
    conn = _writer(tmp_path)
    _write_pages(conn, 20)
    held = HeldRead(tmp_path / "db", 1.0)
    _write_pages(conn, 20)  # frames the reader's snapshot does not have
    t0 = time.monotonic()
    assert restart_checkpoint(conn) is False
    assert time.monotonic() - t0 >= WAL_RESTART_BUSY_MS / 1000 * 0.8
    assert time.monotonic() < held.ends_at
    assert restart_checkpoint_within(conn, 10_000) is True
    assert time.monotonic() >= held.ends_at  # it waited for the reader, then completed
    held.join()
    conn.close()


def test_another_checkpoint_running_fails_a_restart_at_once_and_the_retries_wait_it_out(
    tmp_path: Path,
) -> None:
    """The case the retries are for: a RESTART finds another connection's checkpoint
    running (the Checkpointer thread's) and fails without its busy handler, whatever
    its timeout. The other checkpoint is kept running by a reader it waits for."""
    db = tmp_path / "db"
    conn = _writer(tmp_path)
    _write_pages(conn, 20)
    held = HeldRead(db, 1.0)
    _write_pages(conn, 20)
    other = connect(db)
    other.setbusytimeout(5000)
    other_done: list[tuple[int, int]] = []
    thread = threading.Thread(target=lambda: other_done.append(
        other.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_RESTART)))
    thread.start()
    time.sleep(0.2)  # the other checkpoint now waits for the reader
    t0 = time.monotonic()
    assert restart_checkpoint(conn, busy_ms=5000) is False
    assert time.monotonic() - t0 < 0.1  # at once: no busy handler
    assert restart_checkpoint_within(conn, 10_000) is True
    assert time.monotonic() >= held.ends_at  # once the other one could end
    thread.join()
    assert len(other_done) == 1 and other_done[0][0] == other_done[0][1] > 0  # it completed
    held.join()
    other.close()
    conn.close()


def test_the_retries_stop_at_their_deadline(tmp_path: Path) -> None:
    conn = _writer(tmp_path)
    _write_pages(conn, 5)
    held = HeldRead(tmp_path / "db", 3.0)
    _write_pages(conn, 5)
    t0 = time.monotonic()
    assert restart_checkpoint_within(conn, 400) is False
    assert time.monotonic() - t0 >= 0.35 and time.monotonic() < held.ends_at
    held.join()
    conn.close()


def test_past_half_the_bound_the_writer_waits_for_the_restart(tmp_path: Path) -> None:
    conn = _writer(tmp_path)
    bound = WalBound(conn)
    _write_pages(conn, WAL_CHECKPOINT_PAGES + 10)
    assert bound.due and bound.pages < WAL_HARD_PAGES
    held = HeldRead(tmp_path / "db", 2.0)
    _write_pages(conn, 10)
    bound.check(conn)  # a quarter: gives up after WAL_RESTART_BUSY_MS
    assert bound.pages > WAL_CHECKPOINT_PAGES and time.monotonic() < held.ends_at
    held.join()
    held = HeldRead(tmp_path / "db", 2.0)
    _write_pages(conn, WAL_HARD_PAGES - bound.pages + 10)
    assert bound.pages >= WAL_HARD_PAGES
    bound.check(conn)  # past half: waits the reader out
    assert bound.pages == 0 and time.monotonic() >= held.ends_at
    held.join()
    # The next commit writes the log from its start.
    _write_pages(conn, 3)
    assert bound.pages < 10
    conn.close()
