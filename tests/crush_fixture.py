"""A Crush database written as Crush writes it (charmbracelet/crush: internal/db and
internal/message): the tables its migrations make, times in seconds (its
``strftime('%s', 'now')``), messages created and then updated as a response streams,
the session's tokens and cost saved after each response. The DDL is written here from
the columns the migrations name, not copied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import orjson

T0 = 1768471200  # 2026-01-15T10:00:00Z, in seconds as Crush writes it

SCHEMA_SQL = """
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, parent_session_id TEXT, title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0, cost REAL NOT NULL DEFAULT 0.0,
    updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL, summary_message_id TEXT);
CREATE TABLE messages (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, role TEXT NOT NULL,
    parts TEXT NOT NULL DEFAULT '[]', model TEXT, created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL, finished_at INTEGER, provider TEXT,
    is_summary_message INTEGER NOT NULL DEFAULT 0);
CREATE TABLE files (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, path TEXT NOT NULL,
    content TEXT NOT NULL, version INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TRIGGER count_messages AFTER INSERT ON messages BEGIN
    UPDATE sessions SET message_count = message_count + 1 WHERE id = new.session_id;
END;
"""


def part(kind: str, **data: Any) -> dict[str, Any]:
    return {"type": kind, "data": data}


def text(t: str) -> dict[str, Any]:
    return part("text", text=t)


def finish(reason: str, at: int, **more: Any) -> dict[str, Any]:
    return part("finish", reason=reason, time=at, **more)


def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return part("tool_call", id=call_id, name=name, input=orjson.dumps(args).decode(),
                type="function", finished=True)


def result(call_id: str, content: str, metadata: dict[str, Any] | None = None,
           is_error: bool = False) -> dict[str, Any]:
    return part("tool_result", tool_call_id=call_id, name="", content=content,
                metadata=orjson.dumps(metadata).decode() if metadata else "",
                is_error=is_error)


class Writer:
    """Crush's side: one connection in WAL mode."""

    def __init__(self, path: Path, create: bool = True) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = apsw.Connection(str(path))
        self.conn.setbusytimeout(2000)
        self.conn.execute("PRAGMA journal_mode = WAL")
        if create:
            self.conn.execute(SCHEMA_SQL)

    def session(self, sid: str, t: int, title: str = "New Session", parent: str | None = None,
                prompt: int = 0, completion: int = 0, cost: float = 0.0) -> None:
        self.conn.execute(
            "INSERT INTO sessions(id, parent_session_id, title, prompt_tokens, completion_tokens,"
            " cost, created_at, updated_at) VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET"
            " title=excluded.title, prompt_tokens=excluded.prompt_tokens,"
            " completion_tokens=excluded.completion_tokens, cost=excluded.cost,"
            " updated_at=excluded.updated_at",
            (sid, parent, title, prompt, completion, cost, t, t),
        )

    def message(self, mid: str, sid: str, role: str, t: int, parts: list[dict[str, Any]],
                model: str | None = None, provider: str | None = None,
                finished: int | None = None, summary: bool = False) -> None:
        self.conn.execute(
            "INSERT INTO messages(id, session_id, role, parts, model, provider, created_at,"
            " updated_at, finished_at, is_summary_message) VALUES(?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(id) DO UPDATE SET parts=excluded.parts,"
            " finished_at=excluded.finished_at, updated_at=excluded.updated_at",
            (mid, sid, role, orjson.dumps(parts).decode(), model, provider, t, t, finished,
             int(summary)),
        )

    def turn(self, sid: str, n: int, t: int, *, model: str = "gpt-4o") -> None:
        """One prompt, a bash call and its result, the answer; the session's usage."""
        self.message(f"{sid}-u{n}", sid, "user", t, [text(f"question {n}"), finish("stop", t)])
        self.message(f"{sid}-a{n}", sid, "assistant", t,
                     [call(f"{sid}-c{n}", "bash", {"command": f"echo {n}"}),
                      finish("tool_use", t)], model=model, provider="openai", finished=t)
        self.message(f"{sid}-t{n}", sid, "tool", t,
                     [result(f"{sid}-c{n}", f"{n}\n\n<cwd>/w</cwd>",
                             {"start_time": t * 1000, "end_time": t * 1000 + 5,
                              "output": f"{n}\n", "working_directory": "/w"}),
                      finish("stop", t)])
        self.message(f"{sid}-b{n}", sid, "assistant", t,
                     [text(f"answer {n}"), finish("end_turn", t)], model=model,
                     provider="openai", finished=t)
        self.session(sid, t, prompt=100 * n, completion=10 * n, cost=0.01 * n)

    def close(self) -> None:
        self.conn.close()
