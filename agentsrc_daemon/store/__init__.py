"""The event store: SQLite (apsw) in WAL mode. All SQL of the project lives in this
package; it knows nothing of agent formats.

``connection`` opens the database and ``migrations`` brings it to the current schema,
``batch`` holds what one commit is given, ``writer`` commits it (the ``Store``),
``reader`` answers queries (the ``Reader``, with ``queries``)."""

from .batch import Batch, DocumentFacts, Inserted, Row, prepare, utc_now
from .connection import connect
from .migrations.runner import migrate
from .queries.sessions import project_roots
from .reader import Reader
from .writer import Store

__all__ = [
    "Batch",
    "DocumentFacts",
    "Inserted",
    "Reader",
    "Row",
    "Store",
    "connect",
    "migrate",
    "prepare",
    "project_roots",
    "utc_now",
]
