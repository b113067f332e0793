"""What a Cursor transcript holds,
counted straight from its raw records, independently of the adapters: the oracle
tests/test_agents_a.py checks the adapters' events against exactly. The rules are those
docs/formats.md states for each agent, written again in the plainest code (see
tests/raw_counts.py for the first agents', and what each count means).

``cost`` is the dollars the agent itself recorded (``reported``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raw_counts import Counts


@dataclass
class AgentCounts(Counts):
    cost: float = 0.0
    costs: int = 0  # how many usage records carried a cost


def _name(path: Any) -> str:
    return str(path or "").replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]


# --------------------------------------------------------------------------- Cursor

CURSOR_EDITS = {"StrReplace": "update", "Write": "write", "Delete": "delete"}


def cursor_counts(path: Path) -> AgentCounts:
    """A Cursor transcript: a prompt is a user record with a ``<user_query>`` (a
    sub-agent's is its brief); each assistant record (JSONL line, text block) with text
    outside ``<think>`` and the tool lines is one message; every tool use is a call;
    a Shell call is a command (no exit code is ever recorded)."""
    counts = AgentCounts()
    brief = path.parent.name == "subagents"
    if path.suffix == ".jsonl":
        for rec in _json_lines(path):
            blocks = rec["message"]["content"]
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            if rec["role"] == "user" and "<user_query>" in text:
                if brief:
                    counts.briefs += 1
                else:
                    counts.prompts += 1
            if rec["role"] == "assistant":
                counts.messages += bool(text.strip())
                for b in blocks:
                    if b.get("type") == "tool_use":
                        _cursor_call(counts, b["name"], b.get("input") or {})
        return counts
    text = path.read_text(encoding="utf-8")
    pieces = re.split(r"^(user|assistant):[ \t]*$", text, flags=re.M)
    for role, body in zip(pieces[1::2], pieces[2::2], strict=True):
        if role == "user":
            counts.prompts += "<user_query>" in body
            continue
        body = re.sub(r"<think>.*?(?:</think>|\Z)", "\n\x00\n", body, flags=re.S)
        prose: list[str] = []
        in_call = False
        for line in body.split("\n"):
            if line.startswith("[Tool call] "):
                in_call = True
                name = line[len("[Tool call] ") :].strip()
                path_arg = None
                counts.tool_calls += 1
                counts.commands += [None] if name == "Shell" else []
                if name in CURSOR_EDITS:
                    counts.edits.append(("?", CURSOR_EDITS[name]))  # its path follows
                continue
            if line.startswith("[Tool result] ") or line == "\x00":
                in_call = False
                continue
            if in_call:
                if line.startswith("  path: ") and path_arg is None:
                    path_arg = line[len("  path: ") :]
                    if counts.edits and counts.edits[-1][0] == "?":
                        counts.edits[-1] = (_name(path_arg), counts.edits[-1][1])
                continue
            prose.append(line)
        counts.messages += bool("".join(prose).strip())
    return counts


def _cursor_call(counts: AgentCounts, name: str, args: dict[str, Any]) -> None:
    counts.tool_calls += 1
    if name == "Shell":
        counts.commands.append(None)
    if name in CURSOR_EDITS:
        counts.edits.append((_name(args.get("path")), CURSOR_EDITS[name]))
