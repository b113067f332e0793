"""The event store: SQLite (apsw) in WAL mode. All SQL of the project lives in this
package; it knows nothing of agent formats.

``schema`` opens and migrates the database, ``batch`` holds what one commit is given,
``writer`` commits it (the ``Store``), ``reader`` answers queries (the ``Reader``)."""

from .batch import Batch, DocumentFacts, Inserted, Row, prepare, utc_now
from .reader import Reader
from .schema import connect, migrate
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
    "utc_now",
]
