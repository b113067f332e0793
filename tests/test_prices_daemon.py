"""The real daemon and its prices (issue 27): the table exported at the first start by
a child process (the daemon never imports genai-prices), each request priced at
ingest, and history priced again when the prices change (an override on reload, or
at a start), resumable after kill -9, ending with the costs a fresh store computes.

A real daemon on a copy of the corpus, over its socket."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from agentsrc_daemon.pricing import export

from corpus import corpus_files, corpus_home
from harness import DaemonFactory, DaemonProcess, copy_tree, wait_for

pytestmark = pytest.mark.slow

# Claude Code 2.1.92, 1-hour cache writes: $4.0860 by ccusage and by genai-prices
# (tests/test_pricing_anchors.py).
E2E4 = "claude-code:e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06"
# Every Claude model at an enterprise rate, and GPT-5 models free: the Claude and Codex
# requests' costs change.
OVERRIDE = """
[prices.models."claude-*"]
input = 1.5
output = 7.5
cache_read = 0.15
cache_write = 1.875
cache_write_1h = 3

[prices.models."gpt-5*"]
input = 0
output = 0
"""


def _one_session_home(home: Path) -> None:
    (src,) = [p for p in corpus_files(".claude/projects/**/*.jsonl") if p.name.startswith("e2e4f7f7")]
    dest = home / ".claude" / "projects" / src.parent.name / src.name
    dest.parent.mkdir(parents=True)
    dest.write_bytes(src.read_bytes())


def _config(d: DaemonProcess, text: str) -> None:
    path = d.run_dir / "config" / "agentsrc" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_first_start_exports_the_table_and_prices_what_it_reads(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _one_session_home(home)
    d = DaemonProcess(home, seed_prices=False)
    try:
        d.start()
        st = d.wait_live()
        assert st["prices"]["table"] == {"library": "genai-prices", "data": "bundled",
                                         "version": export.installed_version()}
        table = d.data_dir / "prices.json"
        assert table.stat().st_mode & 0o777 == 0o600
        assert "price_table_exported" in d.log()
        session = d.call("sessions.get", {"id": E2E4})["session"]
        assert session["cost"] == {"usd": 4.086012, "kind": "estimated"}
        assert st["reprice"] is None
        # The table is the library's: a second start keeps it (no export).
        first = table.read_bytes()
        d.stop()
        d.start()
        assert d.wait_live()["prices"]["fingerprint"] == st["prices"]["fingerprint"]
        assert table.read_bytes() == first
        assert d.log().count("price_table_exported") == 1
    finally:
        d.cleanup()


def test_an_override_on_reload_prices_history_again(daemon_factory: DaemonFactory, tmp_path: Path) -> None:
    home = tmp_path / "home"
    _one_session_home(home)
    d = daemon_factory(home).start()
    before = d.wait_live()
    assert d.call("sessions.get", {"id": E2E4})["session"]["cost"]["usd"] == 4.086012
    # Free: the session costs nothing, estimated (an override is our price).
    _config(d, '[prices.models."claude-opus-4-6"]\ninput = 0\noutput = 0\n')
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: d.call("sessions.get", {"id": E2E4})["session"]["cost"]
             == {"usd": 0.0, "kind": "estimated"}, timeout=30)
    st = d.call("status")
    assert st["prices"]["fingerprint"] != before["prices"]["fingerprint"]
    assert d.call("usage.summary", {})["totals"]["cost"] == {"usd": 0.0, "kind": "estimated"}
    # And back.
    _config(d, "")
    d.send_signal(signal.SIGHUP)
    wait_for(lambda: d.call("sessions.get", {"id": E2E4})["session"]["cost"]["usd"] == 4.086012,
             timeout=30)
    assert d.call("status")["prices"]["fingerprint"] == before["prices"]["fingerprint"]
    assert "repriced" in d.log()


def _costs(d: DaemonProcess) -> dict[str, Any]:
    """Every cost the daemon answers with, by what it is of."""
    summary = d.call("usage.summary", {})
    sessions = d.call("usage.report", {"by": "session", "limit": 10_000})["rows"]
    return {"summary": summary, "sessions": {r["session"]: r["cost"] for r in sessions}}


def test_a_reprice_killed_midway_resumes_and_ends_where_a_fresh_store_does(
    daemon_factory: DaemonFactory, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    copy_tree(corpus_home(), home)
    d = daemon_factory(home, AGENTSRC_REPRICE_CHUNK="2")
    d.start()
    d.wait_live()
    priced = _costs(d)
    d.stop()
    # The prices change while it is stopped: its next start prices history again, two
    # requests a transaction, and is killed midway.
    _config(d, OVERRIDE)
    d.start()
    at_kill = wait_for(lambda: (r := d.call("status")["reprice"]) and r["done"] >= 50 and r, timeout=60)
    d.stop(signal.SIGKILL)
    assert 0 < at_kill["done"] < at_kill["total"]
    d.start()
    resumed = wait_for(lambda: d.call("status")["reprice"], timeout=30)
    assert resumed["done"] >= at_kill["done"]  # carried on from its mark, not begun again
    assert resumed["total"] == at_kill["total"]
    wait_for(lambda: d.call("status")["reprice"] is None, timeout=120)
    repriced = _costs(d)
    assert repriced != priced
    # A fresh store read with the same prices from the start.
    fresh = daemon_factory(home)
    _config(fresh, OVERRIDE)
    fresh.start()
    fresh.wait_live()
    assert _costs(fresh) == repriced
    assert fresh.call("status")["reprice"] is None
