"""The event store: SQLite (apsw) in WAL mode. All SQL of the project lives in this
package; it knows nothing of agent formats."""

from .reader import (
    Batch,
    DocumentFacts,
    Inserted,
    Reader,
    Row,
    Store,
    connect,
    migrate,
    prepare,
    utc_now,
)

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
