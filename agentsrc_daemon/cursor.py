"""The cursor: where the tail-reader is in one file. A plain record below both ingest
(which moves it) and the store (which persists it in the same transaction as the events
it covers: store/cursors.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

# Where a source's state keeps what it read of its sidecar (ingest/round.py), "sig" its
# stat: the store reads that signature alone at start (CursorStore.load).
SIDECAR_KEY = "~sidecar"


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
    # The state as the store holds it, not decoded yet: a large home's states are about
    # 100 MB of JSON (decoding them all took 3 s of every start), and most files are
    # never read again. ``load_state`` decodes it when the file is.
    state_json: bytes | str | None = None
    # The state was not even read at start (CursorStore.load(states=False)): it is
    # still in the store, fetched when the file is read (Ingestor.load_state), and a
    # cursor saved without it leaves the store's copy as it is.
    state_in_store: bool = False
    # With the state in the store: its sidecar's signature (the reconcile compares the
    # sidecar's stat with it), read at start without the rest of the state.
    sidecar_sig: list[int] | None = None

    def load_state(self) -> dict[str, Any] | None:
        if self.state_in_store:
            raise RuntimeError(f"the state of {self.path} is still in the store")
        if self.state_json is not None:
            if self.state is None:
                self.state = orjson.loads(self.state_json)
            self.state_json = None
        return self.state
