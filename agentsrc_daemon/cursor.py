"""The cursor: where the tail-reader is in one file. A plain record below both ingest
(which moves it) and the store (which persists it in the same transaction as the events
it covers: store/cursors.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

# Where a source's state keeps what it read of its sidecar (ingest/round.py), "sig" its
# stat: the store reads that signature alone at start (CursorStore.load).
SIDECAR_KEY = "~sidecar"


class _NoSkips(Mapping[str, int]):
    """The skip counts of a file that has none: one object shared by every cursor
    loaded so (most files: 20,000 empty dicts were 1.3 MB of the live daemon's RSS).
    Read-only, so a count goes through ``Cursor.count_skip``, which gives the cursor a
    dict of its own; pickled by name (a cursor goes to a backfill worker and back)."""

    def __getitem__(self, key: str) -> int:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "NO_SKIPS"

    def __reduce__(self) -> str:
        return "NO_SKIPS"


NO_SKIPS: Mapping[str, int] = _NoSkips()


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
    skipped: Mapping[str, int] = field(default_factory=dict)  # count_skip adds to it
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

    def count_skip(self, reason: str, n: int = 1) -> None:
        skipped = self.skipped
        if not isinstance(skipped, dict):  # NO_SKIPS
            skipped = self.skipped = dict(skipped)
        skipped[reason] = skipped.get(reason, 0) + n

    def load_state(self) -> dict[str, Any] | None:
        if self.state_in_store:
            raise RuntimeError(f"the state of {self.path} is still in the store")
        if self.state_json is not None:
            if self.state is None:
                self.state = orjson.loads(self.state_json)
            self.state_json = None
        return self.state
