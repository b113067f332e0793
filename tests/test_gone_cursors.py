"""The cursors of files marked gone stay in the store at start (a large home has more of
them than files on disk) and are fetched by path when the path is seen again: the real
daemon, restarted on the same store, with a transcript moved away, moved back and
replaced."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from harness import (
    DaemonFactory,
    DaemonProcess,
    all_events,
    claude_line,
    claude_session,
    wait_for,
)

pytestmark = pytest.mark.slow

OTHER = "99999999-8888-7777-6666-555555555555"


def _logged(d: DaemonProcess, event: str) -> list[dict[str, Any]]:
    """The daemon's JSON log lines of one event, oldest first (every start appends)."""
    out = []
    for line in d.log().splitlines():
        if line.startswith("{"):
            rec = orjson.loads(line)
            if rec.get("event") == event:
                out.append(rec)
    return out


def _source(d: DaemonProcess, path: Path) -> dict[str, Any]:
    return next(s for s in d.call("sources.list")["sources"] if s["path"] == str(path))


def _prompts(d: DaemonProcess) -> list[tuple[int, str]]:
    return sorted((e["offset"], e["text"]) for e in all_events(d, kinds=["prompt"]))


def _park(f: Path, parked: Path, d: DaemonProcess) -> None:
    """Move the transcript out of every root and wait until the daemon marks it gone."""
    os.replace(f, parked)
    wait_for(lambda: _source(d, f)["gone_at"] is not None, timeout=15)


def test_gone_cursors_stay_in_the_store_until_their_path_comes_back(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory()
    f = claude_session(d.home)
    other = f.with_name(f"{OTHER}.jsonl")
    parked = d.home / "parked.jsonl"  # outside every root
    one, reply, two = (
        claude_line("u1", text="one"), claude_line("a1", "assistant", "reply"),
        claude_line("u2", text="two"),
    )
    f.write_bytes(one + reply)
    other.write_bytes(claude_line("o1", text="other"))
    d.start()
    d.wait_live()
    _park(f, parked, d)
    d.stop()

    # The same file moved back, one line longer, while the daemon was stopped: the start
    # loads the cursors of the live files only; the reconcile sees the path, fetches its
    # gone cursor, and the catch-up reads the new line alone (same inode, same head).
    os.replace(parked, f)
    with f.open("ab") as fh:
        fh.write(two)
    d.start()
    st = d.wait_live()
    started, live = _logged(d, "started")[-1], _logged(d, "live")[-1]
    assert (started["cursors"], started["files_gone"]) == (2, 1)
    assert (live["files"], live["bytes"]) == (1, len(two))
    src = _source(d, f)
    assert (src["gone_at"], src["generation"], src["offset"], src["lines"]) == (
        None, 0, len(one + reply + two), 3
    )
    assert _prompts(d) == sorted([(0, "one"), (len(one + reply), "two"), (0, "other")])
    assert (st["files"], st["files_gone"]) == (2, 0)

    # Gone again, then a start with it gone: its cursor is not loaded at all, and status
    # counts it (from SQL) as before.
    _park(f, parked, d)
    d.stop()
    d.start()
    st = d.wait_live()
    started = _logged(d, "started")[-1]
    assert (started["cursors"], started["files_gone"]) == (1, 1)
    assert (st["files"], st["files_gone"]) == (1, 1)

    # Another file at the path while live (a watch event): the gone cursor is fetched,
    # its identity differs (another inode), so it is read from 0 as a new generation,
    # with its line counter carried on, exactly as when every cursor was loaded.
    nine = claude_line("u9", text="nine")
    tmp = f.with_suffix(".tmp")
    tmp.write_bytes(nine)
    os.replace(tmp, f)
    wait_for(lambda: _source(d, f)["gone_at"] is None and _source(d, f)["offset"] == len(nine),
             timeout=15)
    src = _source(d, f)
    assert (src["generation"], src["offset"], src["lines"]) == (1, len(nine), 4)
    assert _prompts(d) == sorted(
        [(0, "one"), (len(one + reply), "two"), (0, "other"), (0, "nine")]
    )
    st = d.call("status")
    assert (st["files"], st["files_gone"]) == (2, 0)
    resets = [r for r in _logged(d, "source_reset") if r.get("path") == str(f)]
    assert [r.get("reason") for r in resets] == ["replaced"]
