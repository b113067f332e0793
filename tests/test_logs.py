"""The console log's lines for a person (logs.py ConsoleLines): the start, live, and the
indexing after a large backfill, each a plain line with the time of day."""

from __future__ import annotations

from typing import Any

from agentsrc_daemon.logs import ConsoleLines

AT = "2026-12-06T05:21:53.118Z"


def render(**event: Any) -> str:
    return ConsoleLines()(None, "info", {"timestamp": AT, "level": "info", **event})


def test_the_start_reads_as_a_person_says_it() -> None:
    assert render(event="started", version="0.1.0", pid=7667, agents=["claude-code", "codex"],
                  missing={"muse": "/h/agents"}, database="/d/agentsrc.db",
                  socket="/r/agentsrc.sock").splitlines() == [
        "05:21:53 agentsrc 0.1.0 started (pid 7667)",
        "05:21:53 agents: claude-code, codex; not found yet: muse (/h/agents)",
        "05:21:53 database: /d/agentsrc.db",
        "05:21:53 socket: /r/agentsrc.sock",
    ]
    assert render(event="started", agents=[], version="0.1.0", pid=1).splitlines()[1] == (
        "05:21:53 agents: none yet")
    # The editors' extension roots (three per editor) fold into one count.
    missing = {"pi": "/h/.pi/agent", "cline@Code": "/c/1", "roo-code@Code": "/c/2",
               "kilo-code@Code": "/c/3", "cline@Cursor": "/c/4"}
    assert render(event="started", agents=["codex"], missing=missing, version="0.1.0",
                  pid=1).splitlines()[1] == (
        "05:21:53 agents: codex; not found yet: pi (/h/.pi/agent), the editor extensions"
        " in 2 editors (agentsrc doctor names them)")


def test_live_says_whether_indexing_follows_and_when_it_is_done() -> None:
    assert render(event="live", files=12, bytes=4404019, indexing=False) == (
        "05:21:53 live: 12 files read (4.2 MiB)")
    assert render(event="live", files=4812, bytes=3 << 30, indexing=True) == (
        "05:21:53 caught up: 4812 files read (3072.0 MiB); indexing")
    assert render(event="indexed") == "05:21:53 live: indexing done"


def test_other_events_keep_structlogs_rendering_with_the_time_of_day() -> None:
    line = render(event="root_missing", agent="muse")
    assert line.startswith("05:21:53 ") and "root_missing" in line and "agent=muse" in line
