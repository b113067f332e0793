"""The store's read queries, one module per thing asked: ``status`` (sizes, skipped
lines, drift, sources), ``sessions`` (the listing, one session, an id resolved),
``events`` (pages of events, files, commands, findings, documents), ``fidelity``
(what became of the records read, per agent version and record type), ``search`` (the
hits of search.query) and ``turns`` (a session turn by turn). Each takes the Reader's
connection and runs in the read transaction the Reader opens (store/reader.py)."""
