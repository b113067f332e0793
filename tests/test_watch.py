"""The watcher: its own inotify tree (real inotify), and its fallback when inotify is
exhausted.

Running out of inotify watches for real means lowering fs.inotify.max_user_watches,
a system-wide setting that would break every other program on the test machine; so
here the inotify tree's add() raises the ENOSPC the kernel would give, and the rest
(the polling observer, the warning, file events) is real."""

from __future__ import annotations

import errno
import struct
import time
from pathlib import Path

import pytest

from agentsrc_daemon.config import WatchPoint
from agentsrc_daemon.ingest import inotify, watch, watchdog_observer
from agentsrc_daemon.ingest.tree_watch import InotifyTree


def test_enospc_falls_back_to_polling_and_still_sees_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def exhausted(self: InotifyTree, root: str, recursive: bool) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")  # the kernel's answer

    monkeypatch.setattr(InotifyTree, "add", exhausted)
    root = tmp_path / "projects"
    root.mkdir()
    dirty = watch.DirtySet()
    w = watch.Watcher({"claude-code": root}, dirty)
    try:
        w.start()
        assert w.modes[str(root)] == "polling"
        assert "fs.inotify.max_user_watches" in capsys.readouterr().out
        f = root / "a.jsonl"
        f.write_text("{}\n")
        deadline = time.monotonic() + 10
        seen: set[str] = set()
        while time.monotonic() < deadline and str(f) not in seen:
            dirty.wakeup.wait(0.5)
            seen |= dirty.take()[0]
        assert str(f) in seen  # the polling observer saw it
    finally:
        w.stop()


def test_missing_root_is_watched_when_it_appears(tmp_path: Path) -> None:
    root = tmp_path / "later"
    dirty = watch.DirtySet()
    w = watch.Watcher({"codex": root}, dirty)
    appeared: list[Path] = []
    try:
        w.start(on_root_appeared=appeared.append)
        assert w.modes[str(root)] == "missing"
        root.mkdir()
        assert w.check_roots() == [root] and appeared == [root]
        assert w.modes[str(root)] == "inotify"
        (root / "x.jsonl").write_text("{}\n")
        deadline = time.monotonic() + 5
        seen: set[str] = set()
        while time.monotonic() < deadline and str(root / "x.jsonl") not in seen:
            dirty.wakeup.wait(0.2)
            seen |= dirty.take()[0]
        assert str(root / "x.jsonl") in seen
    finally:
        w.stop()


def test_watchdog_still_logs_an_overflow_as_the_hook_expects() -> None:
    """The hook matches watchdog's own log record; a watchdog that words it otherwise
    fails here, not silently where watchdog watches (another system, or polling)."""
    import inspect

    import watchdog.observers.inotify_c as inotify_c

    assert inotify_c.__name__ == watchdog_observer.INOTIFY_LOGGER
    assert f'"{watchdog_observer.OVERFLOW_MESSAGE}; filesystem events were lost"' in (
        inspect.getsource(inotify_c))


def test_an_overflow_record_asks_for_a_reconcile() -> None:
    import logging

    dirty = watch.DirtySet()
    hook = watchdog_observer.overflow_hook(dirty)
    logger = logging.getLogger(watchdog_observer.INOTIFY_LOGGER)
    try:
        assert dirty.take_reconcile_request() is False
        logger.warning("Some other warning")
        assert dirty.take_reconcile_request() is False
        logger.warning("Inotify queue overflowed; filesystem events were lost")
        assert dirty.wakeup.is_set()
        assert dirty.take_reconcile_request() is True
        assert dirty.take_reconcile_request() is False  # once per request
    finally:
        watchdog_observer.remove_overflow_hook(hook)
    logger.warning("Inotify queue overflowed; filesystem events were lost")
    assert dirty.take_reconcile_request() is False  # the hook left with the watcher


def test_the_kernels_overflow_record_asks_for_a_reconcile(tmp_path: Path) -> None:
    """The roots' own inotify reader: the record the kernel queues when its queue
    overflowed (watch descriptor -1, IN_Q_OVERFLOW, no name) asks for a reconcile."""
    dirty = watch.DirtySet()
    tree = InotifyTree(dirty)
    try:
        tree._events(struct.pack("iIII", -1, inotify.IN_Q_OVERFLOW, 0, 0))
        assert dirty.take_reconcile_request() is True
    finally:
        tree.stop()


def test_the_tree_follows_directories_made_moved_and_removed(tmp_path: Path) -> None:
    """Real inotify, one instance for every root: a directory made in a recursive root
    is watched (a file written in it later is marked) and marked for a scan; one moved
    in is watched under its new name and one moved out or removed is dropped; a plain
    root's new directory is marked for a scan, not watched."""
    deep, flat = tmp_path / "deep", tmp_path / "flat"
    (deep / "a" / "b").mkdir(parents=True)
    flat.mkdir()
    outside = tmp_path / "outside"
    (outside / "c").mkdir(parents=True)
    dirty = watch.DirtySet()
    w = watch.Watcher([WatchPoint("codex", deep), WatchPoint("gemini", flat, recursive=False)],
                      dirty)
    try:
        w.start()
        assert w.tree is not None and w.modes == {str(deep): "inotify", str(flat): "inotify"}
        assert w.tree.watched() == 4  # deep, deep/a, deep/a/b, flat
        made = deep / "a" / "new"
        made.mkdir()
        _settle(dirty)
        assert dirty.take() == (set(), {str(made)})
        (made / "x.jsonl").write_bytes(b"{}\n")
        assert _took(dirty) == {str(made / "x.jsonl")}
        (outside / "c").rename(deep / "moved")
        _settle(dirty)
        assert dirty.take() == (set(), {str(deep / "moved")})
        (deep / "moved" / "y.jsonl").write_bytes(b"{}\n")
        assert _took(dirty) == {str(deep / "moved" / "y.jsonl")}
        (deep / "a" / "b").rename(outside / "b")
        made.joinpath("x.jsonl").unlink()
        _took(dirty)
        made.rmdir()
        _settle(dirty)
        dirty.take()
        (outside / "b" / "z.jsonl").write_bytes(b"{}\n")  # moved out: not watched
        assert _took(dirty) == set()
        assert w.tree.watched() == 4  # deep, deep/a, deep/moved, flat
        (flat / "sub").mkdir()
        _settle(dirty)
        assert dirty.take() == (set(), {str(flat / "sub")})
        (flat / "sub" / "w.jsonl").write_bytes(b"{}\n")
        assert _took(dirty) == set()  # a plain root's subdirectory: the scans find it
    finally:
        w.stop()


def _settle(dirty: watch.DirtySet) -> None:
    """Until the events of what was just done are in (they come in the same burst)."""
    dirty.wakeup.wait(2)
    time.sleep(0.2)


def _took(dirty: watch.DirtySet) -> set[str]:
    _settle(dirty)
    return dirty.take()[0]


def test_reconcile_pace() -> None:
    from agentsrc_daemon.ingest.queue import ReconcileStats

    def pace(cpu_ms: float, configured: float = 30.0) -> float:
        return ReconcileStats(cpu_ms=cpu_ms).next_interval(configured)

    assert pace(2.0) == 30.0  # a small home: the configured interval
    assert pace(9.9) == 30.0
    assert pace(10.0) == 50.0  # 0.02% of a core: 10 ms every 50 s
    assert pace(300.0) == 1500.0  # 20,000 files: every 25 minutes
    assert pace(2.0, configured=2.0) == 2.0
    assert pace(300.0, configured=3600.0) == 3600.0


def _marks(dirty: watch.DirtySet, wait_s: float) -> list[set[str]]:
    """The dirty sets taken over ``wait_s``, each as the loop would take it on waking."""
    out: list[set[str]] = []
    deadline = time.monotonic() + wait_s
    while (left := deadline - time.monotonic()) > 0:
        if dirty.wakeup.wait(left):
            out.append(dirty.take()[0])
    return out


def test_a_write_wakes_the_loop_once_and_a_close_alone_still_does(tmp_path: Path) -> None:
    """Real inotify: an append (open, write, close) is one mark, not a second for its
    close; bytes written through a mapping tell no modify, so their close marks."""
    import mmap

    root = tmp_path / "projects"
    root.mkdir()
    f = root / "a.jsonl"
    f.write_bytes(b"{}\n" * 4)
    dirty = watch.DirtySet()
    w = watch.Watcher({"claude-code": root}, dirty)
    try:
        w.start()
        assert w.modes[str(root)] == "inotify"
        time.sleep(0.2)
        dirty.take()
        with f.open("ab") as fh:
            fh.write(b"{}\n")
            fh.flush()
            first = _marks(dirty, 0.3)  # the modify, while the file is still open
        assert first == [{str(f)}]
        assert _marks(dirty, 0.5) == []  # its close: nothing more
        with f.open("r+b") as fh, mmap.mmap(fh.fileno(), 0) as m:
            m[0:2] = b"[]"
            m.flush()
        assert _marks(dirty, 0.5) == [{str(f)}]  # no modify: the close
    finally:
        w.stop()


def test_a_root_that_is_a_link_to_its_directory_is_watched(tmp_path: Path) -> None:
    """A root kept among one's dotfiles (~/.claude a symbolic link): watched through the
    link, its files marked under the root's own path; links below it are not followed."""
    real = tmp_path / "dotfiles" / "claude"
    (real / "projects").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (real / "projects" / "linked").symlink_to(elsewhere)
    root = tmp_path / ".claude"
    root.symlink_to(real)
    dirty = watch.DirtySet()
    w = watch.Watcher({"claude-code": root}, dirty)
    try:
        w.start()
        assert w.modes[str(root)] == "inotify"
        assert w.tree is not None and w.tree.watched() == 2  # the root and projects/
        (root / "projects" / "s.jsonl").write_bytes(b"{}\n")
        assert _took(dirty) == {str(root / "projects" / "s.jsonl")}
        (elsewhere / "t.jsonl").write_bytes(b"{}\n")  # through a link below the root
        assert _took(dirty) == set()
    finally:
        w.stop()


def test_write_notices_mark_a_write_once_and_a_close_alone() -> None:
    """The rule both watchers apply (dirty.WriteNotices), notice by notice."""
    from agentsrc_daemon.ingest.dirty import MODIFIED_REMEMBERED, WriteNotices

    w = WriteNotices()
    marks = [
        w.marks("a", modified=True, closed=False),  # a write
        w.marks("a", modified=True, closed=False),  # another before the close
        w.marks("a", modified=False, closed=True),  # its close: nothing new
        w.marks("a", modified=False, closed=True),  # a close alone (a mapping's write)
        w.marks("b", modified=True, closed=False),
        w.marks("b", modified=False, closed=False),  # moved or deleted: marks, forgets
        w.marks("b", modified=False, closed=True),  # so its close marks again
    ]
    assert marks == [True, True, False, True, True, True, True]
    for i in range(MODIFIED_REMEMBERED):  # bounded: the oldest forgotten at once
        w.marks(f"f{i}", modified=True, closed=False)
    w.marks("last", modified=True, closed=False)
    assert w.marks("f0", modified=False, closed=True) is True
    assert w.marks("last", modified=False, closed=True) is False
