"""The watcher's fallback when inotify is exhausted.

Running out of inotify watches for real means lowering fs.inotify.max_user_watches,
a system-wide setting that would break every other program on the test machine; so
here the observer's schedule() raises the ENOSPC the kernel would give, and the rest
(the polling observer, the warning, file events) is real."""

from __future__ import annotations

import errno
import time
from pathlib import Path

import pytest
from watchdog.observers.api import BaseObserver

from agentsrc_daemon.ingest import watch


def test_enospc_falls_back_to_polling_and_still_sees_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def exhausted(self: BaseObserver, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(watch.Observer, "schedule", exhausted)
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
