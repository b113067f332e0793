"""The user-role texts of every session in a home, read straight from the agents' files.

Independent of the adapters: each reader below knows only where an agent writes what
was said in the user's name, in the order it wrote it, one content block at a time
where the agent writes several. Nothing is filtered: deciding which of these texts a
person typed is the injected-context rule's job (agentsrc_daemon/adapters/injected.py),
and tests/test_injected.py checks its choices against these lists.

A session here is one file (or one database session): a forked file's copy of its
parent's history is part of that file's list, as it is written there. Records the agent
itself flags as not the user's are left out, since the flag is the agent's own word:
Claude Code's ``isMeta``, ``isCompactSummary`` and ``promptSource: "system"`` records and,
in a main session file, its inline sub-agent (``isSidechain``) records; Codex blocks whose
``content_item_kinds`` entry is not ``user.text``; OpenCode's ``synthetic`` parts; Copilot
messages from another ``source`` than the user. A sub-agent's file holds the brief its
parent agent wrote: such sessions are marked (``subagent``), their texts kept.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Session:
    agent: str
    name: str  # the file's name, or the database's session id
    texts: list[str]  # user-role texts, in order
    subagent: bool = False  # a sub-agent's transcript: its user texts are its brief


def _json_lines(path: Path) -> Iterator[Any]:
    for raw in path.read_bytes().splitlines():
        if raw.strip():
            try:
                yield json.loads(raw)
            except ValueError:
                continue


def _block_texts(content: Any, key: str = "text") -> list[str]:
    """The texts of a string or a list of content blocks (dicts with ``key``)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    out = []
    for block in content:
        if isinstance(block, str):
            out.append(block)
        elif (
            isinstance(block, dict)
            and isinstance(block.get(key), str)
            and block.get("type") in (None, "text", "input_text")
        ):
            out.append(block[key])
    return out


def codex(path: Path) -> list[str]:
    """Rollouts: the user items' blocks (what the model saw in the user's name)."""
    if path.suffix == ".json":
        items = json.loads(path.read_bytes()).get("items") or []
        return [t for i in items if i.get("role") == "user" for t in _block_texts(i.get("content"))]
    texts = []
    for obj in _json_lines(path):
        item = obj.get("payload") if "payload" in obj else obj
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user":
            content = item.get("content")
            blocks: list[Any] = content if isinstance(content, list) else []
            kinds = (item.get("internal_chat_message_metadata_passthrough") or {}).get(
                "content_item_kinds"
            )
            if isinstance(kinds, list) and len(kinds) == len(blocks):
                blocks = [b for b, k in zip(blocks, kinds, strict=True) if k == "user.text"]
            texts += _block_texts(blocks or item.get("content"))
    return texts


def codex_is_subagent(path: Path) -> bool:
    """A rollout whose first session_meta says it is a sub-agent's."""
    if path.suffix != ".jsonl":
        return False
    for obj in _json_lines(path):
        source = (obj.get("payload") or {}).get("source") if obj.get("type") == "session_meta" else None
        return isinstance(source, dict) and "subagent" in source
    return False


def claude_is_subagent(path: Path) -> bool:
    return path.name.startswith("agent-") or path.parent.name == "subagents"


def claude(path: Path) -> list[str]:
    texts = []
    main = not claude_is_subagent(path)
    for obj in _json_lines(path):
        if obj.get("type") != "user" or obj.get("isMeta") is True:
            continue
        if obj.get("isCompactSummary") is True or obj.get("promptSource") == "system":
            continue
        if main and obj.get("isSidechain") is True:
            continue
        texts += _block_texts((obj.get("message") or {}).get("content"))
    return texts


def gemini(path: Path) -> list[str]:
    if path.suffix == ".json":
        messages = json.loads(path.read_bytes()).get("messages") or []
    else:
        messages = [o for o in _json_lines(path) if isinstance(o, dict) and "type" in o and "id" in o]
    seen: dict[str, list[str]] = {}
    for message in messages:
        if message.get("type") == "user":
            shown = message.get("displayContent") or message.get("content")
            seen[message["id"]] = _block_texts(shown)
    return [t for texts in seen.values() for t in texts]


def copilot(path: Path) -> list[str]:
    if path.suffix == ".json":
        chat = json.loads(path.read_bytes()).get("chatMessages") or []
        return [t for m in chat if m.get("role") == "user" for t in _block_texts(m.get("content"))]
    return [
        (o.get("data") or {}).get("content", "")
        for o in _json_lines(path)
        if o.get("type") == "user.message"
        and (o.get("data") or {}).get("source") in (None, "user")
        and not (o.get("data") or {}).get("isAutopilotContinuation")
        and not o.get("agentId")
    ]


def qwen(path: Path) -> list[str]:
    return [
        t
        for o in _json_lines(path)
        if o.get("type") == "user"
        for t in _block_texts((o.get("message") or {}).get("parts"))
    ]


def cursor(path: Path) -> list[str]:
    if path.suffix == ".txt":
        blocks = re.split(r"^(user|assistant):\n", path.read_text(encoding="utf-8"), flags=re.M)
        return [blocks[i + 1].strip() for i in range(1, len(blocks) - 1, 2) if blocks[i] == "user"]
    return [
        t
        for o in _json_lines(path)
        if o.get("role") == "user"
        for t in _block_texts((o.get("message") or {}).get("content"))
    ]


def cline(path: Path) -> list[str]:
    """The task and the person's feedback (Cline said "text" for the task, the first row,
    until 2026; Roo Code and Kilo Code still do)."""
    rows = json.loads(path.read_bytes())
    return [
        r.get("text") or ""
        for i, r in enumerate(rows)
        if r.get("say") in ("task", "user_feedback") or (i == 0 and r.get("say") == "text")
    ]


def amp(path: Path) -> list[str]:
    messages = json.loads(path.read_bytes()).get("messages") or []
    return [t for m in messages if m.get("role") == "user" for t in _block_texts(m.get("content"))]


def continue_(path: Path) -> list[str]:
    history = json.loads(path.read_bytes()).get("history") or []
    return [
        t
        for h in history
        if (h.get("message") or {}).get("role") == "user"
        for t in _block_texts(h["message"].get("content"))
    ]


def aider(path: Path) -> list[str]:
    """``#### `` lines are what was typed (a multi-line input is several such lines)."""
    texts: list[str] = []
    follows = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#### "):
            if follows:
                texts[-1] += "\n" + line[5:].rstrip()
            else:
                texts.append(line[5:].rstrip())
            follows = True
        else:
            follows = False
    return texts


def _sqlite_rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of a database read from a private copy (with its -wal), never the original."""
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(path) + suffix)
            if src.exists():
                shutil.copyfile(src, Path(tmp) / (path.name + suffix))
        conn = sqlite3.connect(Path(tmp) / path.name)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()


def crush(path: Path) -> dict[str, list[str]]:
    rows = _sqlite_rows(
        path, "SELECT session_id, parts FROM messages WHERE role = 'user' ORDER BY created_at, id"
    )
    out: dict[str, list[str]] = {}
    for session, parts in rows:
        texts = [
            (p.get("data") or {}).get("text", "")
            for p in json.loads(parts)
            if isinstance(p, dict) and p.get("type") == "text"
        ]
        out.setdefault(session, []).extend(texts)
    return out


def opencode_db(path: Path) -> dict[str, list[str]]:
    rows = _sqlite_rows(
        path,
        "SELECT m.session_id, p.data FROM message m JOIN part p ON p.message_id = m.id"
        " WHERE json_extract(m.data, '$.role') = 'user' ORDER BY m.time_created, m.id,"
        " p.time_created, p.id",
    )
    out: dict[str, list[str]] = {}
    for session, data in rows:
        part = json.loads(data)
        if part.get("type") == "text" and isinstance(part.get("text"), str) and not part.get("synthetic"):
            out.setdefault(session, []).append(part["text"])
    return out


def opencode_tree(storage: Path) -> dict[str, list[str]]:
    """OpenCode 0.5's JSON tree: session/message/<session>/<msg>.json, session/part/..."""
    out: dict[str, list[str]] = {}
    for message_file in sorted((storage / "session" / "message").glob("*/*.json")):
        message = json.loads(message_file.read_bytes())
        if message.get("role") != "user":
            continue
        parts_dir = storage / "session" / "part" / message_file.parent.name / message_file.stem
        for part_file in sorted(parts_dir.glob("*.json")):
            part = json.loads(part_file.read_bytes())
            if part.get("type") == "text" and not part.get("synthetic"):
                out.setdefault(message_file.parent.name, []).append(part.get("text", ""))
    return out


def sessions(home: Path) -> list[Session]:
    """Every session under ``home`` (a corpus home) with its user-role texts."""
    found: list[Session] = []

    def files(pattern: str) -> list[Path]:
        return sorted(p for p in home.glob(pattern) if p.is_file())

    def add(agent: str, name: str, texts: list[str], subagent: bool = False) -> None:
        found.append(Session(agent, name, texts, subagent))

    for path in files(".codex/**/*.json*"):
        add("codex", path.name, codex(path), codex_is_subagent(path))
    for path in files(".claude/projects/**/*.jsonl"):
        add("claude-code", path.name, claude(path), claude_is_subagent(path))
    for path in files(".gemini/tmp/*/chats/**/*.json*"):
        add("gemini", path.name, gemini(path), path.parent.name != "chats")
    for path in files(".copilot/session-state/**/*.jsonl"):
        add("copilot", path.name if path.name != "events.jsonl" else path.parent.name, copilot(path))
    for path in files(".copilot/history-session-state/*.json"):
        add("copilot", path.name, copilot(path))
    for path in files(".local/share/opencode/*.db"):
        for session, texts in opencode_db(path).items():
            add("opencode", session, texts)
    for storage in sorted(home.glob(".local/share/opencode/project/*/storage")):
        for session, texts in opencode_tree(storage).items():
            add("opencode", session, texts)
    for path in files(".cursor/projects/*/agent-transcripts/**/*.*"):
        add("cursor", path.name, cursor(path), path.parent.name == "subagents")
    for path in files(".config/*/User/globalStorage/*/tasks/*/ui_messages.json"):
        add("cline", path.parent.name, cline(path))
    for path in files(".qwen/projects/*/chats/*.jsonl"):
        add("qwen", path.name, qwen(path))
    for path in files(".local/share/amp/threads/*.json"):
        add("amp", path.name, amp(path))
    for path in files(".continue/sessions/*.json"):
        if path.name != "sessions.json":
            add("continue", path.name, continue_(path))
    for path in files("code/*/.aider.chat.history.md"):
        add("aider", path.parent.name, aider(path))
    for path in files("code/*/.crush/crush.db"):
        for session, texts in crush(path).items():
            add("crush", session, texts)
    return found
