"""Adapters: pure functions from one transcript line (already decoded JSON) plus
per-file state to normalized records. They know nothing of files, SQLite or sockets.

Contract (every adapter module exposes an ``ADAPTER`` object with):

* ``name``: one of ``events.AGENTS`` | "gemini" | "copilot" | "opencode"
* ``initial_state(source_path) -> dict``: fresh per-file state. It must stay
  JSON-serializable: ingest stores it beside the file's cursor in the same transaction
  as the events, so a restart resumes exactly (open turn, pending calls).
* ``parse(obj, offset, source_path, state) -> list[Record]``: one decoded line (a dict)
  at byte ``offset`` of ``source_path``. Mutates ``state``. Unknown types yield a
  ``Drift`` record.
* ``parse_document(obj, source_path, state) -> list[Record]``: a whole-file JSON
  document (Codex legacy ``.json`` rollouts, Claude subagent ``.meta.json``, Muse
  ``sessions.json``, Gemini ``.json`` chats, Copilot legacy sessions, OpenCode's JSON
  tree), read again whole each time it changes. ``state`` is that file's
  state, kept across its versions like a JSONL file's, so an adapter for a format
  rewritten on every update can tell what is new (by message id, say). An adapter
  with nothing to remember ignores it.

Adapters do not catch their own bugs: an exception is counted by ingest as the file's
``adapter_error`` skip (shown in ``status.skipped``) and that line or document is
skipped. Odd input is not a bug: it yields ``Drift`` or nothing.

``ADAPTERS`` maps each name to its adapter. OpenCode's database rows go through
``opencode.records_from_rows`` (ingest/round.py), and the sidecar helpers of Gemini
(``.project_root``) and Copilot (``workspace.yaml``) are called by the ingest layer,
which reads those files: adapters never touch a file.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..events import Record
from . import claude, codex, copilot, gemini, muse, opencode


class Adapter(Protocol):
    name: str

    def initial_state(self, source_path: str) -> dict[str, Any]: ...

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]: ...

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]: ...


ADAPTERS: dict[str, Adapter] = {
    adapter.name: adapter
    for adapter in (
        codex.ADAPTER,
        claude.ADAPTER,
        muse.ADAPTER,
        gemini.ADAPTER,
        copilot.ADAPTER,
        opencode.ADAPTER,
    )
}
