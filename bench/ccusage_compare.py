"""ccusage and agentsrc side by side on one home: cost and tokens per session, day and
model, with the differences (docs/usage.md explains each).

    .venv/bin/python bench/ccusage_compare.py [--home DIR] [--ccusage BIN] [--json OUT]

ccusage 20.0.24 is installed into a temporary npm prefix (``npm i ccusage@20.0.24
@ccusage/ccusage-linux-x64@20.0.24``: 20.0.26 ships no Linux binary) unless ``--ccusage``
names one, and run offline, days in UTC, on a copy of the home (default: the corpus):
``ccusage session|daily --json --offline --timezone UTC`` (every agent it knows, Claude
Code's with ``CLAUDE_CONFIG_DIR=<home>/.claude``) and ``ccusage codex session``.

Our side, phase 1: the home's source files parsed by our adapters directly (JSONL and
JSON documents; OpenCode's SQLite databases are not read here), each usage event key
once and owned by its strongest claim as the store keeps it, each event priced by
``pricing`` (the table exported from the installed genai-prices). Phase 2 asks the
daemon's socket instead. Prints ids, models, token counts and dollars only: no
transcript content."""

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
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from agentsrc_daemon.adapters import ADAPTERS
from agentsrc_daemon.config import load_config
from agentsrc_daemon.events import USAGE, Event
from agentsrc_daemon.ingest.sources import walk_sources
from agentsrc_daemon.pricing import cost, export, table
from agentsrc_daemon.pricing.price import Pricer
from agentsrc_daemon.pricing.usage import RequestUsage, normalize
from agentsrc_daemon.store.writer import claim_order

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


@dataclass(slots=True)
class Tally:
    spent: cost.Cost = cost.NOTHING
    input: int = 0  # uncached input
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    models: set[str] = field(default_factory=set)

    def add(self, usage: RequestUsage, priced: cost.Cost) -> None:
        self.spent = self.spent + priced
        self.input += usage.input_tokens
        self.output += usage.output_tokens
        self.cache_read += usage.cache_read_tokens
        self.cache_write += usage.cache_write_tokens
        if usage.model:
            self.models.add(usage.model)


def usage_events(home: Path) -> Iterator[Event]:
    """Every usage event of the home's JSONL and document sources, each key once, from
    its strongest claim (the store's rule)."""
    cfg = load_config(env={"HOME": str(home)})
    best: dict[str, Event] = {}
    for root in dict.fromkeys(cfg.roots().values()):
        for spec, _ in walk_sources(root, cfg.roots()):
            if spec.mode not in ("jsonl", "document"):
                continue
            adapter = ADAPTERS[spec.adapter]
            state = adapter.initial_state(spec.path)
            raw = Path(spec.path).read_bytes()
            records: list[Any] = []
            if spec.mode == "document":
                try:
                    records = adapter.parse_document(orjson.loads(raw), spec.path, state)
                except orjson.JSONDecodeError:
                    continue
            else:
                offset = 0
                for line in raw.splitlines(keepends=True):
                    try:
                        obj = orjson.loads(line) if line.strip() else None
                    except orjson.JSONDecodeError:
                        obj = None
                    if isinstance(obj, dict):
                        records += adapter.parse(obj, offset, spec.path, state)
                    offset += len(line)
            for record in records:
                if isinstance(record, Event) and record.kind == USAGE:
                    held = best.get(record.key)
                    if held is None or _claim(record) < _claim(held):
                        best[record.key] = record
    yield from best.values()


def _claim(e: Event) -> tuple[Any, ...]:
    return claim_order(e.claim, e.claim_since, e.holder or e.session_id, e.subagent_id,
                       e.source_path, e.offset)


def our_tallies(home: Path, pricer: Pricer) -> dict[str, dict[str, Tally]]:
    by: dict[str, dict[str, Tally]] = {"session": defaultdict(Tally), "day": defaultdict(Tally),
                                       "model": defaultdict(Tally)}
    for event in usage_events(home):
        usage = normalize(event.adapter, event.data, event.ts)
        priced = pricer.price(usage).cost
        for dim, key in (("session", event.session_id), ("day", (event.ts or "?")[:10]),
                         ("model", usage.model or "(none)")):
            by[dim][key].add(usage, priced)
    return by


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


def _usd(c: cost.Cost) -> str:
    if c.usd is None:
        return f"unpriced ({c.unpriced_tokens:,} tok)"
    tail = "" if c.kind == "estimated" else f" {c.kind}"
    return f"{c.usd:,.4f}{tail}"


def table_lines(title: str, ours: dict[str, Tally], cc: dict[str, dict[str, Any]]) -> list[str]:
    lines = [f"## {title}", "",
             "| key | ccusage $ | agentsrc $ | diff $ | input (cc / ours) | output (cc / ours) | cache read (cc / ours) | cache write (cc / ours) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    keys = sorted(set(ours) | set(cc), key=lambda k: (-(cc.get(k, {}).get("totalCost") or 0), k))
    for key in keys:
        mine, their = ours.get(key), cc.get(key)
        their_usd = Decimal(str(round(their["totalCost"], 6))) if their else None
        my_usd = mine.spent.usd if mine else None
        diff = "" if their_usd is None or my_usd is None else f"{my_usd - their_usd:+,.4f}"

        def pair(cc_name: str, attr: str, mine: Tally | None = mine, their: Any = their) -> str:
            a = f"{int(their[cc_name]):,}" if their else "-"
            b = f"{getattr(mine, attr):,}" if mine else "-"
            return f"{a} / {b}"

        lines.append(
            f"| {key} | {'-' if their_usd is None else f'{their_usd:,.4f}'} | "
            f"{_usd(mine.spent) if mine else '-'} | {diff} | {pair('inputTokens', 'input')} | "
            f"{pair('outputTokens', 'output')} | {pair('cacheReadTokens', 'cache_read')} | "
            f"{pair('cacheCreationTokens', 'cache_write')} |"
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
        pricer = Pricer(table.loads(export.bundled_table()))
        ours = our_tallies(home, pricer)
    cc_sessions = theirs(sessions, "session", lambda r: our_session_of(r["agent"], r["period"]))
    cc_days = theirs(daily, "daily", lambda r: r["period"])
    out = [f"ccusage {CCUSAGE_VERSION} (offline, UTC) and agentsrc (genai-prices "
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
                                         "ours": {dim: {k: str(t.spent.usd) for k, t in rows.items()}
                                                  for dim, rows in ours.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
