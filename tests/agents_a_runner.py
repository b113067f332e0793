"""Running the Cursor, Cline and Continue adapters over a file as ingest does (lines,
text or a whole document; the file's time and cwd handed over; derive after), and the
counts of what they made, in the shape of tests/raw_counts_agents.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from agentsrc_daemon.adapters import ADAPTERS, FILE_TIME, FOLDER_CWD
from agentsrc_daemon.derive.derive import derive
from agentsrc_daemon.events import (
    COMMAND,
    EDIT,
    MESSAGE,
    PROMPT,
    TOOL_CALL,
    USAGE,
    Event,
    Record,
)

from raw_counts import USAGE_KEYS
from raw_counts_agents import AgentCounts

FILE_TIME_VALUE = "2026-02-02T03:00:00.000Z"
SHELL_TOOLS = frozenset({"Shell", "execute_command", "run_commands", "run_terminal_command"})


def parse_file(agent: str, path: Path, state: dict[str, Any] | None = None,
               data: bytes | None = None) -> tuple[list[Record], dict[str, Any]]:
    """The records of one source file (its bytes, or ``data``), as ingest hands it over."""
    adapter: Any = ADAPTERS[agent]
    state = adapter.initial_state(str(path)) if state is None else state
    if getattr(adapter, "times_from_file", False):
        state[FILE_TIME] = FILE_TIME_VALUE
    if hasattr(adapter, "project_folder"):
        state.setdefault(FOLDER_CWD, None)
    raw = path.read_bytes() if data is None else data
    if path.suffix == ".jsonl":
        records: list[Record] = []
        offset = 0
        for line in raw.splitlines(keepends=True):
            if line.strip():
                obj = orjson.loads(line)
                if isinstance(obj, dict):
                    records += adapter.parse(obj, offset, str(path), state)
            offset += len(line)
        return records, state
    if path.suffix == ".txt":
        return adapter.parse_text(raw.decode("utf-8", "replace"), str(path), state), state
    return adapter.parse_document(orjson.loads(raw), str(path), state), state


def with_derived(records: list[Record]) -> list[Record]:
    out: list[Record] = []
    for rec in records:
        out.append(rec)
        if isinstance(rec, Event):
            out += derive(rec, lambda cwd: cwd)
    return out


def events_of(records: list[Record]) -> list[Event]:
    return [r for r in records if isinstance(r, Event)]


def counts_of(events: list[Event]) -> AgentCounts:
    """The adapters' events counted as tests/raw_counts_agents.py counts the raw records
    (edits: those of file tools, not of shell commands parsed)."""
    counts = AgentCounts()
    for ev in events:
        if ev.kind == PROMPT:
            if ev.subagent_id is None:
                counts.prompts += 1
            else:
                counts.briefs += 1
        elif ev.kind == MESSAGE:
            counts.messages += 1
        elif ev.kind == TOOL_CALL:
            counts.tool_calls += 1
        elif ev.kind == COMMAND:
            counts.commands.append(ev.data.get("exit_code"))
        elif ev.kind == EDIT and ev.tool not in SHELL_TOOLS:
            counts.edits.append((Path(ev.data["path"]).name, ev.data["op"]))
        elif ev.kind == USAGE:
            for key in USAGE_KEYS:
                counts.usage[key] += ev.data.get(key) or 0
            if "cost" in ev.data:
                counts.cost += ev.data["cost"]
                counts.costs += 1
    return counts


def same(a: AgentCounts, b: AgentCounts) -> tuple[Any, Any]:
    """Both sides comparable: order-free lists, cost to the micro-dollar."""
    def shape(c: AgentCounts) -> Any:
        n = c.normalized()
        return (n.prompts, n.briefs, n.messages, n.tool_calls, n.commands, n.edits, n.usage,
                round(c.cost, 6), c.costs)
    return shape(a), shape(b)
