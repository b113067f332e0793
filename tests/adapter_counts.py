"""What an adapter made of a transcript, in the shape tests/raw_counts.py counts raw
records in, so the two can be compared exactly: prompts (a sub-agent's are briefs, with
the runtime's directives), messages, tool calls, the exit code of each derived command,
each derived edit's (file name, operation), usage totals and the recorded cost."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

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
)

from raw_counts import USAGE_KEYS, Counts


def adapter_counts(records: Iterable[Record]) -> tuple[Counts, Decimal]:
    """Counts and the summed ``cost`` of the events among ``records``, with the events
    derive makes of them. An event emitted again under the same key (a higher revision)
    counts once, as the store keeps it: its last version."""
    latest: dict[str, Event] = {}
    for rec in records:
        if isinstance(rec, Event):
            kept = latest.get(rec.key)
            if kept is None or rec.revision >= kept.revision:
                latest[rec.key] = rec
    deriver = Deriver(lambda cwd: cwd)
    counts = Counts()
    cost = Decimal(0)
    for event in latest.values():
        if event.kind == PROMPT:
            if event.subagent_id is None:
                counts.prompts += 1
            else:
                counts.briefs += 1
        elif event.kind == DIRECTIVE:
            counts.briefs += 1
        elif event.kind == MESSAGE:
            counts.messages += 1
        elif event.kind == TOOL_CALL:
            counts.tool_calls += 1
        elif event.kind == USAGE:
            for key in USAGE_KEYS:
                counts.usage[key] += event.data.get(key) or 0
            if event.data.get("cost") is not None:
                cost += Decimal(str(event.data["cost"]))
        for derived in deriver(event):
            if derived.kind == COMMAND:
                counts.commands.append(derived.data["exit_code"])
            elif derived.kind == EDIT:
                name = derived.data["path"].replace("\\", "/").rsplit("/", 1)[-1]
                counts.edits.append((name, derived.data["op"]))
    return counts.normalized(), cost
