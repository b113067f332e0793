"""Every socket method's answer over a whole store, as the bytes of its JSON: two daemons
whose stores hold the same events answer the same bytes (bench/size.py compares main's
daemon with this tree's; tests/test_store_size.py a migrated store with a fresh one).

Answers that say when the daemon runs are left out (status; a search hit's rank, which
weighs its age against now): they differ between any two runs. Both daemons must read
the same home (events name their source files)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

Call = Callable[[str, dict[str, Any]], Any]

# Words common in the corpus's prompts, commands and paths (a query the index must answer).
SEARCH_WORDS = ("test", "the", "error", "file", "git", "src", "python")


def _pages(call: Call, method: str, params: dict[str, Any], key: str) -> list[Any]:
    """Every page of an id-cursor method (next_since_id), up to 5,000 rows."""
    out: list[Any] = []
    since = 0
    while len(out) < 5000:
        got = call(method, {**params, "since_id": since, "limit": 500})
        out.extend(got[key])
        since = got.get("next_since_id") or 0
        if not since:
            return out
    return out


def socket_answers(call: Call) -> dict[str, bytes]:
    answers: dict[str, Any] = {}
    sessions = call("sessions.list", {"limit": 1000})["sessions"]
    answers["sessions.list"] = sessions
    for sort in ("started", "tokens", "tools"):
        answers[f"sessions.list sort={sort}"] = call("sessions.list", {"limit": 1000, "sort": sort})
    for s in sessions:
        sid = s["id"]
        answers[f"sessions.get {sid}"] = call("sessions.get", {"id": sid})
        answers[f"events.list {sid}"] = _pages(call, "events.list", {"session_id": sid}, "events")
        answers[f"sessions.files {sid}"] = call("sessions.files", {"id": sid})
        answers[f"sessions.turns {sid}"] = call("sessions.turns", {"id": sid})
    answers["events.list"] = _pages(call, "events.list", {}, "events")
    for method in ("files.reads", "files.edits"):
        rows = call(method, {"limit": 1000})
        answers[method] = rows
        paths = sorted({r["path"] for r in _rows(rows) if r.get("path")})[:20]
        for p in paths:
            answers[f"{method} {p}"] = call(method, {"path": p, "limit": 1000})
    answers["files.reads glob"] = call("files.reads", {"path": "*.py", "limit": 1000})
    for params in ({}, {"failed": True}, {"failed": False}, {"exit_code": 1}):
        answers[f"commands.list {params}"] = call("commands.list", {**params, "limit": 1000})
    answers["findings.list"] = call("findings.list", {"limit": 1000})
    answers["findings.report"] = call("findings.report", {})
    answers["documents.list"] = call("documents.list", {})
    answers["usage.summary"] = call("usage.summary", {})
    for word in SEARCH_WORDS:
        for order in ("rank", "recent"):
            got = call("search.query", {"q": word, "order": order, "limit": 200})
            # A hit's rank weighs its age against now: it moves between two runs, and two
            # hits of nearly equal score can trade places as time passes (seen once in
            # 1,700 tests). The hits are compared as a set; their order is
            # test_ranked_search's.
            got.pop("next_cursor", None)
            for hit in got.get("hits", []):
                hit.pop("rank", None)
            if order == "rank" and isinstance(got.get("hits"), list):
                got["hits"].sort(key=orjson.dumps)
            answers[f"search.query {word} {order}"] = got
    return {name: orjson.dumps(value) for name, value in answers.items()}


def _rows(answer: Any) -> list[dict[str, Any]]:
    for value in answer.values() if isinstance(answer, dict) else ():
        if isinstance(value, list):
            return value
    return []


def differences(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    """The names of the answers that differ (or are missing on one side)."""
    return sorted(n for n in a.keys() | b.keys() if a.get(n) != b.get(n))
