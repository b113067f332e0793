"""Commands over sessions and their events: ``sessions``, ``show``, ``events`` and
``tail`` (the live stream)."""

from __future__ import annotations

import sys
from typing import Any

import orjson
import typer

from ..events import AGENTS
from ..rpc.client import Client
from .output import EXIT_DROPPED, emit_json, fail, print_table, reporting_daemon_errors, short
from .render import cost_text, local_time, sessions_lines, sessions_params
from .typer_app import app, call, get_config


@app.command()
def sessions(
    agent: str | None = typer.Option(None, help=", ".join(AGENTS) + "."),
    project: str | None = typer.Option(None, "--project", help="Project root (or cwd)."),
    cwd: str | None = typer.Option(None, "--cwd", help="Started in this directory."),
    since: str | None = typer.Option(None, "--since", help="Active since: 7d, 12h or ISO."),
    until: str | None = typer.Option(None, "--until", help="Started before: 7d, 12h or ISO."),
    model: str | None = typer.Option(None, "--model"),
    search: str | None = typer.Option(None, "--search", help="Only sessions with a hit."),
    sort: str = typer.Option("last", "--sort", help="last, started, tokens or tools."),
    limit: int = typer.Option(50, help="At most this many."),
    cursor: str | None = typer.Option(None, "--cursor", help="The next page (printed)."),
    relative: bool = typer.Option(False, "--relative", help="Times as '3h ago'."),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """Sessions, most recently active first (or --sort)."""
    params = sessions_params(agent=agent, project=project, cwd=cwd, since=since, until=until,
                             model=model, search=search, sort=sort, limit=limit, cursor=cursor)
    page = call("sessions.list", params)
    if json:
        emit_json(page["sessions"])
        return
    table, hint = sessions_lines(page, relative)
    for line in table:
        typer.echo(line)
    for line in hint:
        typer.echo(line, err=True)


@app.command()
def show(session: str, json: bool = typer.Option(False, "--json")) -> None:
    """One session: facts, counts, turns, sources."""
    s = call("sessions.get", {"id": session})["session"]
    if json:
        emit_json(s)
        return
    for key in ("id", "agent", "native_id", "cwd", "project_root", "model", "version",
                "started_at", "last_event_at", "title", "prompts", "messages", "tool_calls",
                "subagents", "compactions", "errors", "failed_commands", "source_state"):
        typer.echo(f"{key + ':':<15}{short(s.get(key), 100)}")
    source = s.get("source")
    if isinstance(source, dict) and source.get("times") == "file":
        typer.echo(f"{'times:':<15}from the transcript file ({s['agent']} writes no times: each"
                   " event has the time its file was last written when it was read)")
    typer.echo(f"{'tokens:':<15}" + ", ".join(f"{k}={v}" for k, v in s["tokens"].items()))
    typer.echo(f"{'cost:':<15}{cost_text(s.get('cost'))}")
    typer.echo(f"{'turns:':<15}{len(s['turns'])}")
    if s.get("parent_session_id"):
        typer.echo(f"{'parent:':<15}{s['parent_session_id']}")
    for child in s.get("children") or []:
        typer.echo(f"{'child:':<15}{child}")
    if s.get("known_from_replay"):
        typer.echo(f"{'known from:':<15}the replay of its history in {s['known_from_replay']}"
                   " (its own transcript was not read)")
    if s.get("inherited"):
        typer.echo(f"{'inherited:':<15}" + ", ".join(
            f"{k}={v}" for k, v in sorted(s["inherited"].items()))
            + " (copies of records another session owns; not counted here)")
    for t in s.get("inherited_turns") or []:
        typer.echo(f"{'inherited turn:':<15}{t['turn_id']} ({t['events']} events, owned by"
                   f" {t['owner']})")
    turns = call("sessions.turns", {"id": s["id"], "limit": 1000})["turns"]
    for i, turn in enumerate(turns, 1):
        first = (turn.get("prompt") or "").strip().split("\n", 1)[0]
        typer.echo(f"  {i:>3}. {short(first, 100)}")
    for src in s["sources"]:
        typer.echo(f"{'source:':<15}{src['path']}{' (gone)' if src['gone'] else ''}")


def _event_line(ev: dict[str, Any]) -> str:
    detail = ev.get("path") or ev.get("command") or ev.get("text") or ev.get("type") or ""
    who = f" [{ev['subagent_id']}]" if ev.get("subagent_id") else ""
    return (
        f"{ev['id']:>8}  {short(ev.get('ts'), 24):<24}  {ev['kind']:<12}  "
        f"{short(ev.get('tool'), 14):<14}{who}  {short(detail, 80)}"
    )


@app.command()
def events(
    session: str | None = typer.Option(None, "--session", help="Session id (or unique prefix)."),
    kind: list[str] = typer.Option([], "--kind", help="Only these kinds (repeatable)."),
    since_id: int = typer.Option(0, "--since-id", help="Only events with a larger id."),
    limit: int = typer.Option(100, "--limit"),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """Events in id order, paginated with --since-id."""
    params: dict[str, Any] = {"since_id": since_id, "limit": limit}
    if session:
        params["session_id"] = session
    if kind:
        params["kinds"] = kind
    result = call("events.list", params)
    if json:
        emit_json(result["events"])
        return
    for ev in result["events"]:
        typer.echo(_event_line(ev))
    if result.get("next_since_id"):
        typer.echo(f"(more: --since-id {result['next_since_id']})", err=True)


def _session_place(
    cfg: Any, session_id: str, cache: dict[str, tuple[str, str | None, str | None]]
) -> tuple[str, str | None, str | None]:
    """(short id, project root, cwd) of a session, asked of the daemon once."""
    if session_id not in cache:
        from .output import call_daemon

        try:
            s = call_daemon(cfg, "sessions.get", {"id": session_id})["session"]
            root, cwd = s.get("project_root"), s.get("cwd")
        except typer.Exit:
            root = cwd = None
        cache[session_id] = (session_id.split(":", 1)[-1][:8], root, cwd)
    return cache[session_id]


def _live_line(ev: dict[str, Any], where: tuple[str, str | None, str | None] | None) -> str:
    """A live event on a terminal: its session (short id, project) and the same one-line
    step summary as `log`."""
    from .search import step_line

    short_id, root, cwd = where or (ev["session_id"][:8], None, None)
    project = (root or cwd or "").rstrip("/").rsplit("/", 1)[-1]
    kind = ev["kind"]
    if kind in ("read", "edit", "command"):
        step = {"kind": kind, "tool": ev.get("tool"), "op": ev.get("op"),
                "summary": ev.get("rel_path") or ev.get("path") or ev.get("command") or "",
                "exit_code": ev.get("exit_code"), "duration_ms": ev.get("duration_ms")}
        detail = step_line(step)
    elif kind in ("prompt", "message"):
        detail = ("> " if kind == "prompt" else "< ") + short(ev.get("text"), 100)
    else:
        detail = f"{kind} {ev.get('tool') or ''}".rstrip()
    when = (ev.get("ts") or "")[11:19]
    return f"{when}  {short_id}  {short(project, 16):<16}  {detail}"


@app.command()
def tail(
    count: int = typer.Option(0, "--count", help="Stop after this many events (0: follow forever)."),
    since_id: int | None = typer.Option(None, "--since-id", help="Replay from this id first."),
    session: str | None = typer.Option(None, "--session"),
    kind: list[str] = typer.Option([], "--kind"),
    project: str | None = typer.Option(None, "--project", help="Only this project (root or cwd)."),
    agent: str | None = typer.Option(None, "--agent", help="Only this agent."),
    json: bool = typer.Option(False, "--json", help="NDJSON, one event per line."),
) -> None:
    """Follow live events as they are ingested."""
    cfg = get_config()
    params: dict[str, Any] = {}
    if since_id is not None:
        params["since_id"] = since_id
    if session:
        params["session_id"] = session
    if kind:
        params["kinds"] = kind
    seen = 0
    tty = sys.stdout.isatty()
    places: dict[str, tuple[str, str | None, str | None]] = {}
    try:
        with reporting_daemon_errors(), Client(cfg.socket_path, timeout=None) as client:
            for msg in client.subscribe(params):
                if msg.get("method") == "dropped":
                    fail("dropped by the daemon: too slow; resume with --since-id "
                         f"{msg['params'].get('last_id')}", EXIT_DROPPED)
                if msg.get("method") != "event":
                    continue
                ev = msg["params"]
                if agent and ev.get("adapter") != agent:
                    continue
                where = _session_place(cfg, ev["session_id"], places) if (
                    project or (tty and not json)) else None
                if project and (where is None or project not in (where[1], where[2])):
                    continue
                if json:
                    sys.stdout.write(orjson.dumps(ev).decode() + "\n")
                elif tty:
                    typer.echo(_live_line(ev, where))
                else:
                    typer.echo(_event_line(ev))
                sys.stdout.flush()
                seen += 1
                if count and seen >= count:
                    return
    except KeyboardInterrupt:
        return


USAGE_BYS = ("day", "week", "month", "session", "project", "model", "agent", "block")
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens",
                "reasoning_tokens", "total_tokens")
TOKEN_HEADERS = ["INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "REASONING", "TOTAL"]


@app.command()
def usage(
    since: str | None = typer.Option(None, "--since", help="7d, 12h, 30m or ISO time."),
    until: str | None = typer.Option(None, "--until", help="Before this: a duration or ISO time."),
    project: str | None = typer.Option(None, "--project", help="Project root."),
    agent: str | None = typer.Option(None, "--agent"),
    by: str = typer.Option(
        "model", "--by",
        help="day, week, month, session, project, model, agent or block (5-hour windows)."),
    limit: int = typer.Option(50, "--limit", help="At most this many rows."),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """Tokens and cost by model, day, week, month, session, project, agent or block."""
    if by not in USAGE_BYS:
        fail("--by must be " + ", ".join(USAGE_BYS[:-1]) + " or block")
    if by == "block":
        _usage_blocks(since, until, limit, json)
        return
    params = {k: v for k, v in (("since", since), ("until", until), ("project", project),
                                ("agent", agent)) if v}
    r = call("usage.report", {**params, "by": by, "limit": limit})
    if json:
        emit_json(r)
        return
    rows = [[_usage_key(by, row), row["sessions"], row["responses"],
             *(row[f] for f in TOKEN_FIELDS), cost_text(row["cost"])] for row in r["rows"]]
    totals = r["totals"]
    rows.append(["(total)", totals["sessions"], totals["responses"],
                 *(totals[f] for f in TOKEN_FIELDS), cost_text(totals["cost"])])
    print_table(rows, [by.upper(), "SESSIONS", "RESPONSES", *TOKEN_HEADERS, "COST"])


def _usage_key(by: str, row: dict[str, Any]) -> str:
    """A row's key for a person: a model that none was recorded for says so (its cost
    says it is unpriced), a session with its agent's model and title."""
    key = row.get(by)
    if key is None:
        return "(none recorded)" if by == "model" else "(unknown)"
    if by == "session":
        return short(f"{key}  {row.get('title') or ''}", 70)
    return short(key, 50)


def _usage_blocks(since: str | None, until: str | None, limit: int, json: bool) -> None:
    """``usage --by block``: the 5-hour windows, newest first, the active one with its
    burn rate, its projection and the time left."""
    params = {k: v for k, v in (("since", since or "2d"), ("until", until)) if v}
    r = call("usage.blocks", params)
    r["blocks"] = r["blocks"][:limit]
    if json:
        emit_json(r)
        return
    rows = []
    for b in r["blocks"]:
        note = ""
        if b["active"]:
            note = "now"
            if b.get("burn_usd_per_hour") is not None:
                note += f", ${b['burn_usd_per_hour']:,.2f}/h"
            if b.get("projected"):
                note += f", projected {cost_text(b['projected'])}"
        rows.append([local_time(b["start"]), local_time(b["end"])[11:], b["responses"],
                     b["total_tokens"], cost_text(b["cost"]), note])
    print_table(rows, ["BLOCK START", "END", "RESPONSES", "TOKENS", "COST", ""])
