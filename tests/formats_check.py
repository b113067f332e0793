"""The adapters' records summarized as tests/raw_counts.py counts the raw records, so the
two can be compared exactly (test_formats.py)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePath

from agentsrc_daemon.derive.derive import Deriver
from agentsrc_daemon.events import (
    COMMAND,
    DIRECTIVE,
    EDIT,
    MESSAGE,
    PROMPT,
    TOOL_CALL,
    USAGE,
    Event,
    Record,
    SessionFacts,
)

from raw_counts import USAGE_KEYS, Counts


def strongest(records: Iterable[Record]) -> list[Event]:
    """One event per key, as the store keeps it: the strongest claim (the earliest start
    between equals), the highest revision's data."""
    best: dict[str, Event] = {}
    data: dict[str, tuple[int, dict]] = {}
    for r in records:
        if not isinstance(r, Event):
            continue
        held = best.get(r.key)
        rank = (r.claim, _since(r.claim_since))
        if held is None or rank > (held.claim, _since(held.claim_since)):
            best[r.key] = r
        if r.key not in data or r.revision > data[r.key][0]:
            data[r.key] = (r.revision, r.data)
    for key, event in best.items():
        event.data = data[key][1]
    return list(best.values())


def _since(value: str | None) -> str:
    # The earlier start wins: invert the order by mapping None to the latest possible.
    return "".join(chr(0x10FFFF - ord(c)) for c in value) if value else ""


def summarize(records: list[Record], session_id: str) -> Counts:
    """The counts of one session's events (after derivation) among ``records``."""
    deriver = Deriver(lambda cwd: None)
    for r in records:
        if isinstance(r, SessionFacts):
            deriver.learn(r)
    events = strongest(records)
    derived = [d for e in events for d in deriver(e)]
    mine = [e for e in events + derived if e.session_id == session_id]
    counts = Counts()
    for e in mine:
        if e.kind == PROMPT:
            counts.prompts += 1
        elif e.kind == DIRECTIVE:
            counts.briefs += 1
        elif e.kind == MESSAGE:
            counts.messages += 1
        elif e.kind == TOOL_CALL:
            counts.tool_calls += 1
        elif e.kind == COMMAND:
            counts.commands.append(e.data.get("exit_code"))
        elif e.kind == EDIT:
            counts.edits.append((PurePath(str(e.data.get("path", "")).replace("\\", "/")).name, str(e.data.get("op"))))
        elif e.kind == USAGE:
            for key in USAGE_KEYS:
                counts.usage[key] += e.data.get(key) or 0
    return counts.normalized()
