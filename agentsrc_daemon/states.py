"""The daemon's states as ``status`` names them, and what an "indexing" daemon still
does, in words: shared by the daemon's status line (ingest/status.py) and the CLI
(cli/render.py), which imports nothing heavy."""

from __future__ import annotations

from typing import Any

MIGRATING = "migrating"  # a chunked schema migration runs: only status answers
CATCHING_UP = "catching_up"  # the first catch-up, or files wait
INDEXING = "indexing"  # caught up; the work a backfill deferred still runs
LIVE = "live"  # every file read, nothing deferred owed


def indexing_text(owed: dict[str, Any]) -> str:
    """``status``'s ``indexing`` object in words."""
    parts = []
    if owed.get("search_build_left"):
        parts.append(f"search index, {owed['search_build_left']:,} events left")
    elif owed.get("search_merge_pages"):
        parts.append(f"search index merges, {owed['search_merge_pages']:,} pages")
    if owed.get("reprice"):
        parts.append("pricing history again")
    return "; ".join(parts) or "finishing"
