"""Feeding a transcript to an adapter the way the tail-reader does, for adapter tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from agentsrc_daemon.adapters import Adapter
from agentsrc_daemon.events import Record


def read_lines(path: Path) -> list[tuple[int, Any]]:
    """(byte offset, decoded line) for every non-blank line, as the tail-reader gives them."""
    out = []
    offset = 0
    for raw in path.read_bytes().splitlines(keepends=True):
        if raw.strip():
            out.append((offset, orjson.loads(raw)))
        offset += len(raw)
    return out


def parse_lines_with(
    adapter: Adapter,
    path: Path,
    lines: list[tuple[int, Any]],
    state: dict[str, Any] | None = None,
) -> tuple[list[Record], dict[str, Any]]:
    """Records from ``lines`` (continuing from ``state`` when given), and the state after.
    Non-object lines are the tail-reader's to skip, so they are skipped here too."""
    state = adapter.initial_state(str(path)) if state is None else state
    records: list[Record] = []
    for offset, obj in lines:
        if isinstance(obj, dict):
            records += adapter.parse(obj, offset, str(path), state)
    return records, state


def parse_document_with(adapter: Adapter, obj: Any, path: Path | str) -> list[Record]:
    """Records from a whole document, given the file's state as ingest gives it (fresh
    here). The adapters today have nothing to remember about a document: they must
    leave the state as it was."""
    state = adapter.initial_state(str(path))
    records = adapter.parse_document(obj, str(path), state)
    assert state == adapter.initial_state(str(path))
    return records
