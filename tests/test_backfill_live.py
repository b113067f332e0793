"""A live session during a cold backfill, on the real daemon: an append is committed
(and sent to subscribers) at once, ahead of the backlog, not after it; the search index
of a large first backfill is built after it and finds what was backfilled; memory is
handed back once live."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from corpus import corpus_home
from harness import SID, DaemonFactory, claude_line, wait_for
from replicate import replicate

pytestmark = pytest.mark.slow

TOKEN = "appendedduringthebackfill"


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    replicate(corpus_home(), home, 3)
    # The live session's project sorts last, so its file is the last one queued: only a
    # queue that lets appends jump ahead commits the append before the backlog.
    live = home / ".claude" / "projects" / "-zz-live" / f"{SID}.jsonl"
    live.parent.mkdir(parents=True)
    live.write_bytes(claude_line("live-0", text="the first prompt"))
    return home, live


@pytest.mark.parametrize("workers", ["0", "1"])
def test_an_append_during_a_backfill_is_committed_ahead_of_the_backlog(
    tmp_path: Path, daemon_factory: DaemonFactory, workers: str
) -> None:
    home, live = _home(tmp_path)
    d = daemon_factory(
        home,
        AGENTSRC_WORKERS=workers,
        AGENTSRC_WORKER_MIN_BACKLOG="1",
        AGENTSRC_SEARCH_DEFER_MIN_BACKLOG="1",
    ).start()
    wait_for(lambda: d.call("status")["events"] > 500, timeout=120, interval=0.01)
    seen: dict[str, Any] = {}
    subscribed = threading.Event()

    def listen() -> None:
        with d.client() as c:
            for msg in c.subscribe({"kinds": ["prompt"]}):
                if msg["method"] == "subscribed":
                    subscribed.set()
                elif msg["method"] == "event" and msg["params"].get("text") == TOKEN:
                    seen["after"] = time.monotonic() - seen["written"]
                    seen["status"] = d.call("status")
                    return

    threading.Thread(target=listen, daemon=True).start()
    assert subscribed.wait(30)
    before = d.call("status")
    assert before["state"] == "catching_up"
    seen["written"] = time.monotonic()
    with live.open("ab") as fh:
        fh.write(claude_line("live-1", text=TOKEN))
    wait_for(lambda: "status" in seen, timeout=120, interval=0.01)
    st = seen["status"]
    # Committed while the backfill goes on, after at most a batch or a worker's round of
    # it (before appends jumped the queue: 17,000-22,000 events, 2.4-4.2 s, against
    # 400-520 events, 40-60 ms).
    assert st["state"] == "catching_up", seen["after"]
    assert st["events"] - before["events"] < 5000, (seen["after"], st["events"] - before["events"])
    d.wait_live(timeout=600)
    # The index of this first backfill was left to the build, which completes after it.
    index = wait_for(lambda: (s := d.call("status")["search_index"])["state"] == "ready" and s,
                     timeout=300)
    assert index["indexed_upto"] == index["target"] > 1000
    hits = d.call("search.query", {"q": TOKEN})["hits"]
    assert [(h["session_id"], h["kind"]) for h in hits] == [(f"claude-code:{SID}", "prompt")]
    first = d.call("search.query", {"q": "the first prompt", "session": f"claude-code:{SID}"})
    assert sorted(h["kind"] for h in first["hits"]) == ["prompt", "title"]  # its title too
    assert "memory_released" in d.log()
