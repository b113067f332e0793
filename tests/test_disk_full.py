"""Disk full during a commit: the daemon keeps running, says so in status, reads nothing
further while it waits, and once there is space again every line arrives exactly once.

The data dir is a small tmpfs when the test may mount one (root, as in the CI
container); elsewhere a stand-in (tests/daemon_with_fakes.py --disk-full-file) makes every
commit fail as SQLite does on a full disk. The test prints which it used."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import SID, DaemonFactory, DaemonProcess, all_events, claude_line, wait_for

TMPFS_BYTES = 24 << 20
MARKER = "zebra-quartz-7731"  # in every appended line's text: must never reach the log


def _try_mount(path: Path) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES},mode=0700", "tmpfs", str(path)],
        capture_output=True, timeout=30,
    )
    return done.returncode == 0


@contextlib.contextmanager
def small_filesystem(path: Path) -> Iterator[bool]:
    """A tmpfs of TMPFS_BYTES at ``path`` (True), or nothing (False); unmounted even when
    the test fails."""
    mounted = _try_mount(path)
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=30)


def fill(directory: Path) -> Path:
    """Write a file until the filesystem says ENOSPC."""
    filler = directory / "filler"
    chunk = b"\0" * (1 << 20)
    with filler.open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        small = b"\0" * 4096
        try:
            while True:
                fh.write(small)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def transcript(d: DaemonProcess) -> Path:
    proj = d.home / ".claude" / "projects" / "-work-proj"
    proj.mkdir(parents=True, exist_ok=True)
    return proj / f"{SID}.jsonl"


def append(path: Path, start: int, n: int) -> None:
    """The lines in one write: written a buffer at a time, the daemon could read and
    commit the first few lines on their own (a small commit can fit in room freed on
    the full filesystem, and the test could not tell what failed)."""
    text = f"{MARKER} " + "words of a prompt " * 60
    lines = b"".join(claude_line(f"u-{i:05d}", text=f"{text} {i}")
                     for i in range(start, start + n))
    with path.open("ab") as fh:
        fh.write(lines)


@pytest.mark.slow
def test_disk_full_then_space_again(daemon_factory: DaemonFactory) -> None:
    d = daemon_factory()
    hook = d.run_dir / "disk-full"
    d.fakes += ["--disk-full-file", str(hook)]
    f = transcript(d)
    append(f, 0, 10)
    with small_filesystem(d.data_dir) as mounted:
        print(f"disk full by: {'a tmpfs of 24 MiB' if mounted else 'the stand-in'}")
        d.start()
        st = d.wait_live()
        # A user line is a turn's start and its prompt, and ends the turn before it.
        assert st["events"] == 3 * 10 - 1
        assert st["store_errors"] == {"count": 0, "last_error": None, "last_at": None,
                                      "retry_in_s": 0.0}
        # The daemon truncates its WAL once idle: filled before that, the truncation
        # would free room on the full filesystem for the next commit.
        wal = d.data_dir / "agentsrc.db-wal"
        wait_for(lambda: not wal.exists() or wal.stat().st_size == 0, timeout=30)
        filler = fill(d.data_dir) if mounted else None
        if not mounted:
            hook.write_text("")
        # Enough lines that the commit needs new pages (a WAL with room left from
        # earlier commits could take a small one).
        append(f, 10, 3000)
        st = wait_for(lambda: (s := d.call("status"))["store_errors"]["count"] >= 2 and s,
                      timeout=60)
        assert st["store_errors"]["last_error"].startswith("FullError: database or disk is full")
        assert st["events"] == 29  # nothing of the failed commits is visible
        assert st["state"] == "catching_up"  # the file is still to be read
        assert d.proc is not None and d.proc.poll() is None
        lines = [line for line in d.cli("status").stdout.splitlines()
                 if line.startswith("store:     ")]
        assert len(lines) == 1
        assert "commits failed (FullError: database or disk is full" in lines[0]
        # Space again.
        if filler is not None:
            filler.unlink()
        else:
            hook.unlink()
        st = wait_for(lambda: (s := d.call("status"))["state"] == "live"
                      and s["events"] == 3 * 3010 - 1 and s, timeout=120)
        assert st["store_errors"]["retry_in_s"] == 0.0
        events = all_events(d)
        prompts = [e for e in events if e["kind"] == "prompt"]
        assert len(events) == 3 * 3010 - 1
        assert len(prompts) == 3010
        assert sorted(int(e["text"].rsplit(" ", 1)[1]) for e in prompts) == list(range(3010))
        assert len({e["turn_id"] for e in events}) == 3010
        session = d.call("sessions.get", {"id": f"claude-code:{SID}"})["session"]
        assert session["prompts"] == 3010
        # Once more, live: one line, one event.
        append(f, 3010, 1)
        wait_for(lambda: d.call("status")["events"] == 3 * 3011 - 1, timeout=30)
        log = d.log()
        assert '"commit_failed"' in log
        assert MARKER not in log
        d.stop()
