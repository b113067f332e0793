"""A file appended live has its adapter state stored as JSON (a quicker commit), packed
once the file has been quiet for a while and at a stop: the real daemon, its store read
beside it, with real appends. store/cursors.py, STATE_QUIET_S."""

from __future__ import annotations

import apsw
import pytest

from agentsrc_daemon.store.packing import PACKED_V1

from harness import DaemonFactory, DaemonProcess, all_events, claude_line, claude_session, wait_for

pytestmark = pytest.mark.slow


def _raw_state(d: DaemonProcess, path: str) -> bytes:
    conn = apsw.Connection(str(d.data_dir / "agentsrc.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        (value,) = conn.execute("SELECT state FROM sources WHERE path = ?", (path,)).fetchone()
        return bytes(value)
    finally:
        conn.close()


def _prompts(d: DaemonProcess) -> list[str]:
    return sorted(e["text"] for e in all_events(d, kinds=["prompt"]))


def test_a_live_files_state_is_json_until_quiet_then_packed_and_at_a_stop(
    daemon_factory: DaemonFactory,
) -> None:
    d = daemon_factory(AGENTSRC_STATE_QUIET_S="3")
    f = claude_session(d.home)
    f.write_bytes(claude_line("u1", text="first prompt " + "x" * 200))
    d.start()
    d.wait_live()
    assert _raw_state(d, str(f))[:1] == PACKED_V1  # read by the catch-up: packed at once
    with f.open("ab") as fh:
        fh.write(claude_line("u2", text="second prompt"))
    wait_for(lambda: len(_prompts(d)) == 2, timeout=15)
    raw = _raw_state(d, str(f))
    assert raw[:1] == b"{"  # the append's commit: JSON
    # Quiet for 3 s: packed by the idle loop (which wakes for it).
    wait_for(lambda: _raw_state(d, str(f))[:1] == PACKED_V1, timeout=15)
    # Appended again, then stopped before it is quiet: the stop packs it.
    with f.open("ab") as fh:
        fh.write(claude_line("u3", text="third prompt"))
    wait_for(lambda: len(_prompts(d)) == 3, timeout=15)
    assert _raw_state(d, str(f))[:1] == b"{"
    assert d.stop() == 0
    assert _raw_state(d, str(f))[:1] == PACKED_V1
    # The state reads back the same: a restart tails on without a duplicate or a loss.
    d.start()
    d.wait_live()
    with f.open("ab") as fh:
        fh.write(claude_line("u4", text="fourth prompt"))
    wait_for(lambda: len(_prompts(d)) == 4, timeout=15)
    assert _prompts(d) == ["first prompt " + "x" * 200, "fourth prompt", "second prompt",
                           "third prompt"]
