"""The cursor: where the tail-reader is in one file (the checkpoint). The store
persists it in the same transaction as the events it covers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Cursor:
    """Where the tail-reader is in one file. Persisted in ``sources``."""

    path: str
    adapter: str
    mode: str
    source_id: int | None = None
    dev: int | None = None
    ino: int | None = None
    size: int | None = None
    mtime_ns: int | None = None
    offset: int = 0
    head_len: int = 0
    head_hash: bytes | None = None
    skipping: bool = False
    state: dict[str, Any] | None = None
    generation: int = 0
    lines: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    gone_at: str | None = None
