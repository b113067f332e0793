"""Commands over sessions and their events: ``sessions``, ``show``, ``events`` and
``tail`` (the live stream)."""

from __future__ import annotations

import sys
from typing import Any

import orjson
import typer

from ..rpc.client import Client
from .app import app, call, get_config
from .output import EXIT_DROPPED, emit_json, fail, print_table, reporting_daemon_errors, short


@app.command()
def sessions(
    agent: str | None = typer.Option(None, help="codex, claude-code or muse."),
    limit: int = typer.Option(50, help="At most this many, newest first."),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """Sessions, newest first."""
    params: dict[str, Any] = {"limit": limit}
    if agent:
        params["agent"] = agent
    result = call("sessions.list", params)["sessions"]
    if json:
        emit_json(result)
        return
    print_table(
        [
            [
                s["id"][:48],
                short(s.get("last_event_at"), 19),
                s.get("prompts"),
                s.get("tool_calls"),
                short(s.get("model"), 20),
                short(s.get("cwd"), 40),
                short(s.get("title"), 40),
            ]
            for s in result
        ],
        ["SESSION", "LAST EVENT", "PROMPTS", "TOOLS", "MODEL", "CWD", "TITLE"],
    )


@app.command()
def show(session: str, json: bool = typer.Option(False, "--json")) -> None:
    """One session: facts, counts, turns, sources."""
    s = call("sessions.get", {"id": session})["session"]
    if json:
        emit_json(s)
        return
    for key in ("id", "agent", "native_id", "cwd", "project_root", "model", "version",
                "started_at", "last_event_at", "title", "prompts", "messages", "tool_calls",
                "subagents", "compactions", "errors", "source_state"):
        typer.echo(f"{key + ':':<15}{short(s.get(key), 100)}")
    typer.echo(f"{'tokens:':<15}" + ", ".join(f"{k}={v}" for k, v in s["tokens"].items()))
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


@app.command()
def tail(
    count: int = typer.Option(0, "--count", help="Stop after this many events (0: follow forever)."),
    since_id: int | None = typer.Option(None, "--since-id", help="Replay from this id first."),
    session: str | None = typer.Option(None, "--session"),
    kind: list[str] = typer.Option([], "--kind"),
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
    try:
        with reporting_daemon_errors(), Client(cfg.socket_path, timeout=None) as client:
            for msg in client.subscribe(params):
                if msg.get("method") == "dropped":
                    fail("dropped by the daemon: too slow; resume with --since-id "
                         f"{msg['params'].get('last_id')}", EXIT_DROPPED)
                if msg.get("method") != "event":
                    continue
                ev = msg["params"]
                if json:
                    sys.stdout.write(orjson.dumps(ev).decode() + "\n")
                else:
                    typer.echo(_event_line(ev))
                sys.stdout.flush()
                seen += 1
                if count and seen >= count:
                    return
    except KeyboardInterrupt:
        return
