"""Finding things and reading them back: ``search`` (the socket's search.query) and
``log`` (sessions.turns: a session turn by turn)."""

from __future__ import annotations

import sys
from typing import Any

import typer

from ..events import AGENTS
from .output import emit_json, short
from .typer_app import app, call

_BOLD, _RESET = "\x1b[1;33m", "\x1b[0m"


def marked(text: str, marks: list[list[int]], tty: bool) -> str:
    """The snippet with its matches highlighted (ANSI) on a terminal, plain otherwise."""
    if not tty or not marks:
        return text
    out, last = [], 0
    for start, end in marks:
        out.append(text[last:start])
        out.append(_BOLD + text[start:end] + _RESET)
        last = end
    out.append(text[last:])
    return "".join(out)


def hit_line(hit: dict[str, Any], tty: bool) -> str:
    sid = hit["session_id"]
    short_id = sid.split(":", 1)[-1][:8]
    when = (hit.get("ts") or "")[:16].replace("T", " ")
    return (
        f"{when:<16}  {hit['agent'] or '':<11}  {short_id}  {hit['kind']:<9}  "
        + marked(hit["snippet"], hit.get("marks") or [], tty)
    )


@app.command()
def search(
    query: str = typer.Argument(..., help='Words, "phrases", prefix*, AND, OR, NOT, ( ).'),
    agent: str | None = typer.Option(None, "--agent", help=", ".join(AGENTS) + "."),
    project: str | None = typer.Option(None, "--project", help="Project root or cwd."),
    session: str | None = typer.Option(None, "--session", help="Session id (or prefix)."),
    kind: list[str] = typer.Option([], "--kind", help="prompt, message, command, read, "
                                   "edit, tool_call, title (repeatable)."),
    since: str | None = typer.Option(None, "--since", help="7d, 12h, 30m or ISO time."),
    until: str | None = typer.Option(None, "--until", help="7d, 12h, 30m or ISO time."),
    limit: int = typer.Option(20, "--limit", help="At most this many hits."),
    recent: bool = typer.Option(False, "--recent", help="Newest first, not best first."),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """Full-text search over prompts, answers, titles, commands, paths and tool names."""
    params: dict[str, Any] = {"q": query, "limit": limit}
    for name, value in (("agent", agent), ("project", project), ("session", session),
                        ("since", since), ("until", until)):
        if value:
            params[name] = value
    if kind:
        params["kinds"] = kind
    if recent:
        params["order"] = "recent"
    result = call("search.query", params)
    if json:
        emit_json(result)
        return
    tty = sys.stdout.isatty()
    for hit in result["hits"]:
        typer.echo(hit_line(hit, tty))
    if not result["hits"]:
        typer.echo("no hits", err=True)
    elif result.get("next_cursor"):
        typer.echo(f"(more: --limit {limit * 2}, or search.query with cursor)", err=True)
    if result.get("capped"):
        typer.echo(f"(ranked the newest {result.get('ranked_over')} hits only; --recent lists"
                   " every hit, newest first)", err=True)





def _one_line(text: str | None, full: bool, n: int = 100) -> str:
    if text is None:
        return ""
    return text if full else short(text, n)


def step_line(step: dict[str, Any], full: bool = False) -> str:
    """One step of a turn, as `log` and `tail` print it."""
    kind = step.get("kind")
    summary = _one_line(step.get("summary"), full)
    if kind == "read":
        text = f"Read {summary}"
    elif kind == "edit":
        text = f"{(step.get('tool') or 'Edit')} {summary} ({step.get('op') or 'edit'})"
    elif kind == "command":
        extra = []
        if step.get("exit_code") is not None:
            extra.append(f"exit {step['exit_code']}")
        if step.get("duration_ms") is not None:
            extra.append(f"{step['duration_ms'] / 1000:.1f}s")
        text = f"$ {summary}" + (f"  [{', '.join(extra)}]" if extra else "")
    elif kind == "grep":
        text = f"Grep {summary}"
    elif kind == "subagent":
        text = f"Sub-agent: {summary}"
    elif kind == "mcp":
        text = f"MCP {summary}"
    else:
        text = f"{step.get('tool') or 'tool'} {summary}".rstrip()
    return "  " * int(step.get("depth") or 0) + text


def _turn_lines(turn: dict[str, Any], n: int, full: bool) -> list[str]:
    wall = turn.get("wall_ms")
    head = f"── turn {n}  {(turn.get('started_at') or '')[:19].replace('T', ' ')}"
    head += f"  {turn.get('tokens') or 0} tokens"
    if wall is not None:
        head += f"  {wall / 1000:.1f}s"
    if turn.get("status"):
        head += f"  {turn['status']}"
    lines = [head]
    if turn.get("prompt") is not None:
        lines.append("> " + _one_line(turn["prompt"], full))
    lines.extend("    " + step_line(s, full) for s in turn["steps"])
    if turn.get("answer"):
        lines.append("< " + _one_line(turn["answer"], full))
    return lines


@app.command()
def log(
    session: str = typer.Argument(..., help="Session id (or unique prefix)."),
    full: bool = typer.Option(False, "--full", help="Whole texts, not one line each."),
    limit: int = typer.Option(1000, "--limit", help="At most this many turns."),
    json: bool = typer.Option(False, "--json"),
) -> None:
    """A session read back turn by turn: prompt, steps, answer, tokens, wall time."""
    turns: list[dict[str, Any]] = []
    after = 0
    while len(turns) < limit:
        page = call("sessions.turns", {"id": session, "after_id": after,
                                       "limit": min(100, limit - len(turns))})
        turns.extend(page["turns"])
        if not page.get("next_after_id"):
            break
        after = page["next_after_id"]
    if json:
        emit_json({"session_id": page["session_id"], "turns": turns})
        return
    for i, turn in enumerate(turns, 1):
        for line in _turn_lines(turn, i, full):
            typer.echo(line)
