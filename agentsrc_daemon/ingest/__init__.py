"""Ingest: which files are sources, watching them, tailing them from persisted cursors,
and turning one file round into a batch for the store."""
