"""Issue 9, end to end: corpus sessions copied into other sessions' files with the SAME
record uuids (as Claude Code does for resumed and forked sessions), read by the real
daemon forwards, in reverse (tests/daemon_with_fakes.py --reverse-order),
and killed with SIGKILL at random points of the backfill then restarted: every
session's counters are the same in all three."""

from __future__ import annotations

import random
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from corpus import corpus_home
from harness import DaemonFactory, copy_tree, wait_for

pytestmark = pytest.mark.slow

_UUID = re.compile(rb"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _home_with_copies(tmp_path: Path) -> Path:
    """The corpus, plus for each Claude session file two "resumed" copies: one whose
    records keep the original sessionId (copies carrying another session's id), one
    whose records carry the new session's id (both sessions claim them as their own).
    Record uuids and message ids are unchanged: the copies share them."""
    home = tmp_path / "home"
    copy_tree(corpus_home(), home)
    projects = home / ".claude" / "projects"
    for path in sorted(projects.rglob("*.jsonl")):
        sid = path.stem.encode()
        if not _UUID.match(sid) or "subagents" in path.parts:
            continue
        data = path.read_bytes()
        keep = b"c0py0000" + sid[8:]
        renamed = b"c0py1111" + sid[8:]
        (path.parent / f"{keep.decode()}.jsonl").write_bytes(data)
        (path.parent / f"{renamed.decode()}.jsonl").write_bytes(data.replace(sid, renamed))
    return home


def _counters(d: Any) -> dict[str, tuple[Any, ...]]:
    sessions = d.call("sessions.list", {"limit": 1000})["sessions"]
    out = {}
    for s in sessions:
        full = d.call("sessions.get", {"id": s["id"]})["session"]
        out[s["id"]] = (
            s["prompts"], s["messages"], s["tool_calls"], s["compactions"], s["errors"],
            tuple(sorted(s["tokens"].items())), tuple(sorted(full["kinds"].items())),
            tuple(sorted(full["inherited"].items())),
        )
    return out


def test_shared_uuids_any_order_any_crash(tmp_path: Path, daemon_factory: DaemonFactory) -> None:
    home = _home_with_copies(tmp_path)
    ref = daemon_factory(home, AGENTSRC_WORKERS="0").start()
    ref.wait_live(timeout=300)
    expected = _counters(ref)
    ref.stop()
    # Some copies were taken over: the sessions holding them show them as inherited.
    assert any(c[-1] for c in expected.values())

    rev = daemon_factory(home, AGENTSRC_WORKERS="0")
    rev.fakes.append("--reverse-order")
    rev.start()
    rev.wait_live(timeout=300)
    assert _counters(rev) == expected
    rev.stop()

    rng = random.Random(9)
    d = daemon_factory(home, AGENTSRC_WORKERS="0")
    d.fakes.append("--reverse-order")
    for _ in range(2):
        d.start()
        target = rng.randint(200, 4000)
        wait_for(lambda t=target: d.call("status")["events"] > t, timeout=120, interval=0.005)
        d.stop(signal.SIGKILL)
    d.start()
    d.wait_live(timeout=300)
    assert _counters(d) == expected
