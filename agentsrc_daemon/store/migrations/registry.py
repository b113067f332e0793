"""The schema's migrations as a list registered by name and version (the model:
sqlite-utils' ``Migrations``): ``PRAGMA user_version`` is the version a store is at, and
the migration registered as version v brings it from v - 1 to v, as one transaction of
SQL or as a ``ChunkedMigration`` of several."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import apsw


@dataclass(frozen=True)
class ChunkedMigration:
    """A migration too long for one transaction (it rewrites every event): ``begin`` (one
    transaction, idempotent: a resumed migration runs it again), then ``step`` over id
    ranges, each chunk its own transaction with the high-water mark in ``counters``
    (``<name>_done`` of ``<name>_target``), so a kill -9 resumes after the last committed
    chunk; ``finish`` runs in the transaction that bumps the version."""

    name: str
    begin: Callable[[apsw.Connection], None]
    step: Callable[[apsw.Connection, int, int], None]  # (conn, after_id, upto_id)
    finish: Callable[[apsw.Connection], None]
    # Units per transaction, when the units are not event ids (0: MIGRATE_CHUNK_IDS).
    chunk: int = 0


@dataclass(frozen=True)
class Migration:
    """One migration: from schema ``version - 1`` to ``version``, under its name."""

    version: int
    name: str
    body: str | ChunkedMigration  # SQL run in one transaction, or chunked


class Migrations:
    """The migrations in the order they were registered, each at the next version.
    ``MIGRATIONS[v]`` is the one a store at version v runs next. Never edit a released
    one: register a new one (and write the schema it makes into
    store/migrations/current.py)."""

    def __init__(self) -> None:
        self._list: list[Migration] = []

    def sql(self, name: str, sql: str) -> Migration:
        """Register SQL run in one transaction as the next version."""
        return self._add(name, sql)

    def chunked(self, body: ChunkedMigration) -> Migration:
        """Register a chunked migration, under its own name, as the next version."""
        return self._add(body.name, body)

    def _add(self, name: str, body: str | ChunkedMigration) -> Migration:
        if any(m.name == name for m in self._list):
            raise ValueError(f"a migration is already named {name!r}")
        m = Migration(len(self._list) + 1, name, body)
        self._list.append(m)
        return m

    @property
    def version(self) -> int:
        """The version a store is at once every migration ran: the current schema's."""
        return len(self._list)

    def named(self, name: str) -> Migration:
        for m in self._list:
            if m.name == name:
                return m
        raise KeyError(name)

    def __getitem__(self, found: int) -> Migration:
        return self._list[found]

    def __iter__(self) -> Iterator[Migration]:
        return iter(self._list)

    def __len__(self) -> int:
        return len(self._list)
