"""ccusage and agentsrc side by side on one home: cost and tokens per session, day and
model, with the differences (docs/usage.md explains each).

    .venv/bin/python bench/ccusage_compare.py [--home DIR] [--ccusage BIN] [--json OUT]

ccusage 20.0.24 is installed into a temporary npm prefix (``npm i ccusage@20.0.24
@ccusage/ccusage-linux-x64@20.0.24``: 20.0.26 ships no Linux binary) unless ``--ccusage``
names one, and run offline, days in UTC, on a copy of the home (default: the corpus):
``ccusage session|daily --json --offline --timezone UTC`` (every agent it knows, Claude
Code's with ``CLAUDE_CONFIG_DIR=<home>/.claude``) and ``ccusage codex session``.

Our side: the real daemon (``agentsrc run``, bench/run.py's) started on the same copy,
asked over its socket (``usage.report`` by session, UTC day and model): what every
surface of agentsrc shows, OpenCode's SQLite databases and sub-agents included. Prints
ids, models, token counts and dollars only: no transcript content."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

from agentsrc_daemon.pricing import export

CCUSAGE_VERSION = "20.0.24"
# ccusage's agent names -> ours.
AGENTS = {"claude": "claude-code", "codex": "codex", "gemini": "gemini", "copilot": "copilot",
          "opencode": "opencode", "amp": "amp", "qwen": "qwen"}
_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$")


def default_home() -> Path:
    env = os.environ.get("AGENTSRC_CORPUS")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "home"


# -- ccusage --------------------------------------------------------------------------


def install_ccusage(prefix: Path) -> Path:
    subprocess.run(
        ["npm", "i", "--prefix", str(prefix), "--no-audit", "--no-fund",
         f"ccusage@{CCUSAGE_VERSION}", f"@ccusage/ccusage-linux-x64@{CCUSAGE_VERSION}"],
        check=True, capture_output=True,
    )
    return prefix / "node_modules" / ".bin" / "ccusage"


def run_ccusage(binary: Path, home: Path, *args: str) -> dict[str, Any]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home),
           "CLAUDE_CONFIG_DIR": str(home / ".claude"), "CODEX_HOME": str(home / ".codex"),
           "NO_COLOR": "1"}
    out = subprocess.run([str(binary), *args, "--json", "--offline", "--timezone", "UTC"],
                         env=env, check=True, capture_output=True, timeout=300)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def our_session_of(agent: str, period: str) -> str:
    """ccusage's session id as ours: Claude's sessionId (a sub-agent file is a session
    of its own there, ``agent-<id>``), Codex's rollout path (ours: the uuid in it)."""
    ours = AGENTS.get(agent, agent)
    if agent == "codex":
        match = _UUID.search(period + ".jsonl" if not period.endswith(".jsonl") else period)
        return f"codex:{match.group(1)}" if match else f"codex:{period}"
    return f"{ours}:{period}"


# -- ours -----------------------------------------------------------------------------


def our_reports(home: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Our side, from the real daemon started on the home (its socket's usage.report, by
    session, UTC day and model): each row's cost (its dollars and kind) and tokens."""
    from run import Daemon  # bench/run.py: the daemon in a directory of its own

    d = Daemon(home)
    try:
        d.start()
        d.wait_live(poll=0.2)
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for by in ("session", "day", "model"):
            rows = d.call("usage.report", {"by": by, "limit": 10_000})["rows"]
            out[by] = {str(r[by]) if r[by] is not None else "(none)": r for r in rows}
        return out
    finally:
        d.stop()


# -- the comparison -------------------------------------------------------------------


def theirs(report: dict[str, Any], rows: str, key: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in report[rows]:
        k = key(row)
        if k in out:  # sub-agent files and such: ccusage rows that are one of ours
            for name in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens"):
                out[k][name] += row[name]
            out[k]["totalCost"] += row["totalCost"]
        else:
            out[k] = dict(row)
    return out


def by_model(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(float))
    for row in report["session"]:
        for m in row["modelBreakdowns"]:
            for name in ("inputTokens", "outputTokens", "cacheReadTokens", "cacheCreationTokens"):
                out[m["modelName"]][name] += m[name]
            out[m["modelName"]]["totalCost"] += m["cost"]
    return out


def _usd(c: dict[str, Any]) -> str:
    if c["usd"] is None:
        return f"unpriced ({c.get('unpriced_tokens', 0):,} tok)"
    tail = "" if c["kind"] == "estimated" else f" {c['kind']}"
    return f"{c['usd']:,.4f}{tail}"


def table_lines(title: str, ours: dict[str, dict[str, Any]], cc: dict[str, dict[str, Any]]) -> list[str]:
    lines = [f"## {title}", "",
             "| key | ccusage $ | agentsrc $ | diff $ | tokens (cc / ours) |",
             "| --- | ---: | ---: | ---: | ---: |"]
    keys = sorted(set(ours) | set(cc), key=lambda k: (-(cc.get(k, {}).get("totalCost") or 0), k))
    for key in keys:
        mine, their = ours.get(key), cc.get(key)
        their_usd = Decimal(str(round(their["totalCost"], 6))) if their else None
        my_usd = None if mine is None or mine["cost"]["usd"] is None else Decimal(str(mine["cost"]["usd"]))
        diff = "" if their_usd is None or my_usd is None else f"{my_usd - their_usd:+,.4f}"
        their_tok = sum(int(their[n]) for n in ("inputTokens", "outputTokens", "cacheReadTokens",
                                                "cacheCreationTokens")) if their else None
        tokens = f"{'-' if their_tok is None else f'{their_tok:,}'} / {mine['total_tokens']:,}" if mine else (
            f"{their_tok:,} / -")
        lines.append(
            f"| {key} | {'-' if their_usd is None else f'{their_usd:,.4f}'} | "
            f"{_usd(mine['cost']) if mine else '-'} | {diff} | {tokens} |"
        )
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--home", type=Path, default=default_home())
    parser.add_argument("--ccusage", type=Path, help="a ccusage binary (else installed)")
    parser.add_argument("--json", type=Path, help="write both sides' figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ccusage-compare-") as tmp:
        home = Path(tmp, "home")
        shutil.copytree(args.home, home)  # ccusage and we read a copy: the home is never touched
        binary = args.ccusage or install_ccusage(Path(tmp, "npm"))
        sessions = run_ccusage(binary, home, "session")
        daily = run_ccusage(binary, home, "daily")
        codex = run_ccusage(binary, home, "codex", "session")
        ours = our_reports(home)
    cc_sessions = theirs(sessions, "session", lambda r: our_session_of(r["agent"], r["period"]))
    cc_days = theirs(daily, "daily", lambda r: r["period"])
    out = [f"ccusage {CCUSAGE_VERSION} (offline, UTC) and the agentsrc daemon (genai-prices "
           f"{export.library_version()}), per request", ""]
    out += table_lines("Sessions", ours["session"], cc_sessions)
    out += table_lines("Days (UTC)", ours["day"], cc_days)
    out += table_lines("Models", ours["model"], by_model(sessions))
    fallback = sorted(our_session_of("codex", r["sessionId"]) for r in codex["sessions"]
                      if any(m.get("isFallback") for m in r["models"].values()))
    out.append(f"ccusage codex session: {codex['totals']['costUSD']:,.4f} $ over "
               f"{len(codex['sessions'])} sessions, priced at a fallback model: {fallback}; "
               f"ccusage session (every agent): {sessions['totals']['totalCost']:,.4f} $, "
               f"unpriced models {sessions['totals'].get('unpricedModels', [])}")
    print("\n".join(out))
    if args.json:
        args.json.write_text(json.dumps({"ccusage": {"session": sessions, "daily": daily, "codex": codex},
                                         "ours": ours}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
