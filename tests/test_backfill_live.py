"""A live session during a cold backfill, on the real daemon: an append is committed
(and sent to subscribers) at once, ahead of the backlog, not after it; the search index
of a large first backfill is built after it and finds what was backfilled; memory is
handed back once live."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentsrc_daemon.errors import DaemonNotRunning

from corpus import corpus_home
from harness import SID, DaemonFactory, claude_line, wait_for
from replicate import replicate

pytestmark = pytest.mark.slow

TOKEN = "appendedduringthebackfill"


def _subscribe_prompts(d: Any, on_prompt: Callable[[dict[str, Any]], bool]) -> None:
    """A subscriber to the daemon's prompts on a thread of its own, subscribed when this
    returns; ``on_prompt`` gets each prompt event's params and ends it by returning True."""
    subscribed = threading.Event()

    def listen() -> None:
        # The daemon may stop before a prompt ends the loop (a test that failed).
        with d.client() as c, contextlib.suppress(DaemonNotRunning):
            for msg in c.subscribe({"kinds": ["prompt"]}):
                if msg["method"] == "subscribed":
                    subscribed.set()
                elif msg["method"] == "event" and on_prompt(msg["params"]):
                    return

    threading.Thread(target=listen, daemon=True).start()
    assert subscribed.wait(30)


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

    def on_prompt(params: dict[str, Any]) -> bool:
        if params.get("text") != TOKEN:
            return False
        seen["after"] = time.monotonic() - seen["written"]
        seen["status"] = d.call("status")
        return True

    _subscribe_prompts(d, on_prompt)
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


def _big_rounds_home(tmp_path: Path, files: int, lines: int) -> tuple[Path, Path]:
    """Files of tiny prompts, each over a 4 MiB round: a worker's round of one is
    tens of thousands of events."""
    import orjson

    home = tmp_path / "home"
    proj = home / ".claude" / "projects" / "-big-rounds"
    proj.mkdir(parents=True)
    for f in range(files):
        sid = f"{f:08d}-1111-4111-8111-111111111111"
        with (proj / f"{sid}.jsonl").open("wb") as fh:
            for n in range(lines):
                fh.write(orjson.dumps({
                    "type": "user", "sessionId": sid, "uuid": f"u{f}-{n}",
                    "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work/proj",
                    "message": {"role": "user", "content": f"prompt {n} of file {f}"},
                }) + b"\n")
    live = home / ".claude" / "projects" / "-zz-live" / f"{SID}.jsonl"
    live.parent.mkdir(parents=True)
    live.write_bytes(claude_line("live-0", text="the first prompt"))
    return home, live


def test_appends_wait_for_a_piece_of_the_backfill_not_a_workers_round(
    tmp_path: Path, daemon_factory: DaemonFactory
) -> None:
    """With a worker reading rounds of 4 MiB of tiny lines (about 24,000 events each,
    a commit of seconds), each append during the backfill reaches a subscriber after
    at most a piece of it: the worker's rounds come back in pieces, committed a few at
    a time with a look for appends between, and a batch read here waits for the
    appends. (Before, an append waited for every finished round committed whole:
    24,000 events and more in front of it.)"""
    home, live = _big_rounds_home(tmp_path, files=6, lines=40_000)
    d = daemon_factory(
        home,
        AGENTSRC_WORKERS="1",
        AGENTSRC_WORKER_MIN_BACKLOG="1",
        AGENTSRC_SEARCH_DEFER_MIN_BACKLOG="1",
    ).start()
    wait_for(lambda: d.call("status")["events"] > 30_000, timeout=300, interval=0.05)
    arrived: dict[str, float] = {}
    ids: dict[str, int] = {}

    def on_prompt(params: dict[str, Any]) -> bool:
        if params.get("text", "").startswith(TOKEN):
            arrived[params["text"]] = time.monotonic()
            ids[params["text"]] = params["id"]
        return False

    _subscribe_prompts(d, on_prompt)
    between: list[int] = []
    took: list[float] = []
    for n in range(5):
        before = d.call("status")
        assert before["state"] == "catching_up"
        token = f"{TOKEN}{n}"
        written = time.monotonic()
        with live.open("ab") as fh:
            fh.write(claude_line(f"live-{n + 1}", text=token))
        wait_for(lambda t=token: t in arrived, timeout=120, interval=0.005)
        took.append(arrived[token] - written)
        # Events are numbered in commit order: the ones committed between the status
        # asked before the write and the append's own.
        between.append(ids[token] - before["events"])
        time.sleep(0.3)
    # A piece is at most a batch (2,000 events; 250 once appends come in) of the worker's
    # pieces or of this thread's reading, and the batch under way when the append came.
    assert max(between) < 8_000, (between, took)
    assert d.call("status")["state"] == "catching_up", (between, took)
