"""What doctor asks of the store file (store/health.py), in-process on a real store in a
temporary directory: quick_check's answer, and the largest sessions by their counters."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from agentsrc_daemon.store import Store
from agentsrc_daemon.store.health import largest_sessions, quick_check


def test_quick_check_of_a_sound_store_and_of_no_database(tmp_path: Path) -> None:
    Store(tmp_path / "db.sqlite").close()
    assert quick_check(tmp_path / "db.sqlite", 100) == ["ok"]
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all" * 300)
    with pytest.raises(apsw.Error):
        quick_check(tmp_path / "junk.sqlite", 100)


def test_the_largest_sessions_by_their_counters(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    assert largest_sessions(store.db_path, 5, 100) == ([], 0)
    with store.conn:
        for sid, prompts, messages, tools, tokens in (
            ("codex:a", 1, 2, 3, 10), ("codex:b", 5, 5, 5, 20), ("claude:c", 0, 6, 0, 30),
            ("codex:d", 0, 0, 0, 0),
        ):
            store.conn.execute(
                "INSERT INTO sessions(id, agent, native_id, prompts, messages, tool_calls,"
                " total_tokens) VALUES(?, 'codex', ?, ?, ?, ?, ?)",
                (sid, sid, prompts, messages, tools, tokens),
            )
    rows, total = largest_sessions(store.db_path, 2, 100)
    assert total == 4
    assert rows == [("codex:b", 15, 5, 5, 5, 20), ("claude:c", 6, 0, 6, 0, 30)]
    store.close()
