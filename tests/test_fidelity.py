"""The fidelity tally (docs/formats.md, "Fidelity"): every record read is counted once,
per adapter, agent version and record type, by what became of it (events, ignored on
purpose, folded, not understood)."""

from __future__ import annotations

from pathlib import Path

from agentsrc_daemon.store import Batch, Reader, Store
from agentsrc_daemon.store.batch import OUTCOMES, tally_record
from agentsrc_daemon.store.queries import fidelity


def test_the_store_adds_up_the_tallies_of_its_commits(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    for _ in range(2):
        batch = Batch()
        for outcome in (0, 0, 1, 2, 3):
            tally_record(batch.fidelity, "codex", "0.160.0", "event_msg/x", outcome)
        tally_record(batch.fidelity, "codex", "0.159.0", "session_meta", 2)
        later = Batch()
        tally_record(later.fidelity, "codex", "0.160.0", "event_msg/x", 0)
        batch.merge(later)  # a worker's round read in pieces: one commit of both
        assert not batch.empty()
        store.commit(batch)
    store.close()
    reader = Reader(tmp_path / "db.sqlite")
    try:
        with reader.snapshot():
            rows = reader.fidelity()
            assert reader.fidelity("codex", "0.159.0") == [rows[0]]
    finally:
        reader.close()
    assert OUTCOMES == ("events", "ignored", "folded", "not_understood")
    assert [(r["version"], r["record_type"], r["read"], r["events"], r["ignored"], r["folded"],
             r["not_understood"]) for r in rows] == [
        ("0.159.0", "session_meta", 2, 0, 0, 2, 0),
        ("0.160.0", "event_msg/x", 12, 6, 2, 2, 2),
    ]
    versions = fidelity.summary(rows)
    assert [(v["version"], v["read"], v["not_understood"], v["not_understood_share"],
             v["not_understood_types"]) for v in versions] == [
        ("0.159.0", 2, 0, 0.0, []),
        ("0.160.0", 12, 2, 2 / 12, [["event_msg/x", 2]]),
    ]
    assert fidelity.warnings(versions) == [versions[1]]
    assert fidelity.warnings(versions, share=0.2) == []
