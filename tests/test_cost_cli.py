"""Cost in the terminal (issue 27): ``agentsrc usage`` with its cost column and
``--by`` every grouping, ``--since``/``--until`` and ``--json``; ``show``'s cost line,
a session without a model unpriced and saying so; ``agentsrc statusline`` as Claude Code
runs it (its JSON on stdin, one line out), and its one-line fallback when the daemon is
down. The real daemon on a copy of the corpus, the installed ``agentsrc`` command."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsrc_daemon.cli.render import cost_text

from corpus import corpus_home
from harness import REPO, DaemonProcess, copy_tree

pytestmark = pytest.mark.slow

E2E4 = "e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06"


@pytest.fixture(scope="module")
def d(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    home = tmp_path_factory.mktemp("costcli") / "home"
    copy_tree(corpus_home(), home)
    daemon = DaemonProcess(home)
    try:
        daemon.start()
        daemon.wait_live()
        yield daemon
    finally:
        daemon.cleanup()


def agentsrc(d: DaemonProcess, *args: str, stdin: bytes | None = None,
             **env: str) -> subprocess.CompletedProcess[bytes]:
    script = Path(sys.executable).parent / "agentsrc"
    return subprocess.run([sys.executable, str(script), *args], env={**d.env, "COLUMNS": "200", **env},
                          input=stdin, capture_output=True, timeout=60, cwd=str(REPO))


def test_usage_prints_each_grouping_with_its_cost(d: DaemonProcess) -> None:
    for by in ("day", "week", "month", "session", "project", "model", "agent"):
        report = d.call("usage.report", {"by": by, "limit": 5, "since": "2025-01-01T00:00:00Z"})
        out = agentsrc(d, "usage", "--by", by, "--limit", "5", "--since", "2025-01-01T00:00:00Z")
        assert out.returncode == 0, out.stderr
        lines = out.stdout.decode().splitlines()
        assert lines[0].split()[0] == by.upper() and lines[0].endswith("COST")
        assert len(lines) == 1 + len(report["rows"]) + 1
        for line, row in zip(lines[1:], report["rows"], strict=False):
            assert line.endswith(cost_text(row["cost"])), (by, line)
        assert lines[-1].startswith("(total)") and lines[-1].endswith(cost_text(report["totals"]["cost"]))
        as_json = json.loads(agentsrc(d, "usage", "--by", by, "--limit", "5", "--since",
                                      "2025-01-01T00:00:00Z", "--json").stdout)
        assert as_json == report
    # A model none was recorded for says so (it printed an empty name before).
    models = agentsrc(d, "usage", "--by", "model", "--limit", "100").stdout.decode().splitlines()
    (none,) = [line for line in models if line.startswith("(none recorded)")]
    assert none.endswith("unpriced (no model recorded)")
    total = d.call("usage.summary", {})["totals"]["cost"]
    assert models[-1].endswith(f"${total['usd']:,.2f} mixed + {total['unpriced_tokens']:,} tokens unpriced")


def test_usage_by_block_and_a_range(d: DaemonProcess) -> None:
    blocks = d.call("usage.blocks", {"since": "2026-04-07T00:00:00Z", "until": "2026-04-08T00:00:00Z"})
    out = agentsrc(d, "usage", "--by", "block", "--since", "2026-04-07T00:00:00Z",
                   "--until", "2026-04-08T00:00:00Z", "--json")
    assert json.loads(out.stdout) == blocks
    text = agentsrc(d, "usage", "--by", "block", "--since", "2026-04-07T00:00:00Z",
                    "--until", "2026-04-08T00:00:00Z").stdout.decode().splitlines()
    assert text[0].split()[:3] == ["BLOCK", "START", "END"]
    assert len(text) == 2 and "$4.09" in text[1] and "3473302" in text[1]
    refused = agentsrc(d, "usage", "--by", "year")
    assert refused.returncode == 1 and b"--by must be" in refused.stderr


def test_show_says_what_a_session_cost_or_why_not(d: DaemonProcess) -> None:
    priced = agentsrc(d, "show", E2E4).stdout.decode().splitlines()
    assert "cost:          $4.09" in priced
    unpriced = agentsrc(d, "show", "97b66f6c").stdout.decode().splitlines()
    assert "cost:          unpriced (no model recorded)" in unpriced
    shown = json.loads(agentsrc(d, "show", "97b66f6c", "--json").stdout)
    assert shown["cost"] == {"usd": None, "kind": "unpriced", "unpriced_tokens": 53_077_637,
                             "reason": "no model recorded"}


CLAUDE_CODE = json.dumps({
    "session_id": E2E4, "transcript_path": "/dev/null", "cwd": "/tmp",
    "model": {"id": "claude-opus-4-6", "display_name": "Opus 4.6"},
    "workspace": {"current_dir": "/tmp"}, "cost": {"total_cost_usd": 4.12},
}).encode()


def test_statusline_as_claude_code_runs_it(d: DaemonProcess) -> None:
    out = agentsrc(d, "statusline", stdin=CLAUDE_CODE)
    assert out.returncode == 0 and out.stderr == b""
    # The corpus is older than today and than any active block: neither has a cost.
    assert out.stdout.decode() == "Opus 4.6 · session $4.09 · today $0.00\n"
    # The typer path says the same.
    assert agentsrc(d, "statusline", stdin=CLAUDE_CODE, AGENTSRC_CLI_FAST="0").stdout == out.stdout
    # Not ingested yet: Claude Code's own figure, said to be its.
    unknown = CLAUDE_CODE.replace(E2E4.encode(), b"not-seen-yet")
    assert agentsrc(d, "statusline", stdin=unknown).stdout.decode() == \
        "Opus 4.6 · session $4.12 (Claude Code) · today $0.00\n"
    # Empty or broken stdin: still a line.
    assert agentsrc(d, "statusline", stdin=b"").stdout.decode() == "Claude · today $0.00\n"


def test_statusline_loads_almost_nothing(d: DaemonProcess) -> None:
    """Claude Code runs it every few hundred milliseconds: three modules of ours and
    the standard library's json and _socket; not orjson (its import loads dataclasses,
    enum and inspect), typing, the config module or the socket client."""
    out = subprocess.run([sys.executable, "-X", "importtime", str(Path(sys.executable).parent / "agentsrc"),
                          "statusline"], env=d.env, input=CLAUDE_CODE, capture_output=True,
                         timeout=60, cwd=str(REPO))
    assert out.stdout.decode() == "Opus 4.6 · session $4.09 · today $0.00\n"
    loaded = {line.rsplit("|", 1)[1].strip() for line in out.stderr.decode().splitlines()
              if line.startswith("import time:") and "|" in line}
    assert sorted(m for m in loaded if m.startswith("agentsrc_daemon")) == [
        "agentsrc_daemon", "agentsrc_daemon.cli", "agentsrc_daemon.cli.statusline"]
    assert not loaded & {"orjson", "typing", "dataclasses", "typer", "apsw", "socket", "selectors"}


def test_statusline_when_the_daemon_is_down(d: DaemonProcess, tmp_path: Path) -> None:
    down = "Opus 4.6 · session $4.12 (Claude Code) · agentsrc: daemon not running\n"
    for args, env in (((), {"AGENTSRC_SOCKET": str(tmp_path / "none.sock")}),  # the lean path
                      (("--socket", str(tmp_path / "none.sock")), {})):  # the fast path
        out = agentsrc(d, *args, "statusline", stdin=CLAUDE_CODE, **env)
        assert (out.returncode, out.stdout.decode(), out.stderr) == (0, down, b"")
    # A socket that accepts and never answers: the line after half a second.
    import socket

    mute = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    mute.bind(str(tmp_path / "mute.sock"))
    mute.listen(1)
    try:
        out = agentsrc(d, "statusline", stdin=CLAUDE_CODE, AGENTSRC_SOCKET=str(tmp_path / "mute.sock"))
    finally:
        mute.close()
    assert out.stdout.decode() == "Opus 4.6 · session $4.12 (Claude Code) · agentsrc: no answer in 0.5 s\n"
