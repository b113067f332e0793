"""What the query commands print, as plain lines, without typer: the typer commands and
the fast path (cli/fast.py) print the same lines, so their output cannot drift apart.

Only the standard library and orjson here: this module is on the fast path, where every
import is paid by every `agentsrc status`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ..states import indexing_text


def emit_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def short(value: Any, n: int) -> str:
    text = " ".join(("" if value is None else str(value)).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def table_lines(rows: list[list[Any]], headers: list[str]) -> list[str]:
    cells = [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for r in cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return lines


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def progress_line(st: dict[str, Any]) -> str:
    if st["state"] == "migrating":  # a schema migration that rewrites every event
        m = st.get("migration", {})
        return (
            f"migrating the store ({m.get('name')}): {m.get('fraction', 0) * 100:5.1f}%  "
            f"{m.get('done', 0)}/{m.get('total', 0)} events"
        )
    p = st.get("progress", {})
    total = max(1, p.get("bytes_total", 0))
    done = min(p.get("bytes_done", 0), total)
    frac = done / total
    bar = "#" * int(frac * 30) + "-" * (30 - int(frac * 30))
    return (
        f"[{bar}] {frac * 100:5.1f}%  {p.get('files_done', 0)}/{p.get('files_total', 0)} files  "
        f"{fmt_bytes(done)}/{fmt_bytes(total)}  {fmt_bytes(p.get('rate_bytes_per_s', 0))}/s"
        f"  ETA {p.get('eta_s', 0):.0f}s"
    )


def wait_live(call: Callable[[str], Any]) -> None:
    """``status --wait``: a progress bar on a terminal until the daemon is live."""
    while True:
        st = call("status")
        if st["state"] == "live":
            break
        if sys.stderr.isatty():
            line = (f"indexing: {indexing_text(st.get('indexing') or {})}"
                    if st["state"] == "indexing" else progress_line(st))
            sys.stderr.write("\r\x1b[K" + line)
            sys.stderr.flush()
        time.sleep(0.5)
    if sys.stderr.isatty():
        sys.stderr.write("\n")


def status_lines(st: dict[str, Any]) -> list[str]:
    """``agentsrc status`` for a person."""
    lines = [f"state:     {st['state']}"]
    if st["state"] == "migrating":  # only the migration's progress is known yet
        return [*lines, f"progress:  {progress_line(st)}"]
    if st["state"] == "catching_up":
        lines.append(f"progress:  {progress_line(st)}")
    if st["state"] == "indexing":  # caught up; answers may be slower until it is done
        lines.append(f"indexing:  {indexing_text(st.get('indexing') or {})}")
    lines.append(f"files:     {st['files']} ({st.get('files_gone', 0)} gone)")
    lines.append(f"sessions:  {st['sessions']}")
    lines.append(f"events:    {st['events']}")
    lines.append(f"pending:   {fmt_bytes(st['pending_bytes'])}")
    hidden = 0
    for agent, root in st.get("roots", {}).items():
        if "@" in agent and root.get("watch") in ("missing", None):
            hidden += 1  # an editor's extension folder that is not there: one line for all
            continue
        lines.append(f"root:      {agent:<12} {root['path']} ({root['watch']})")
    if hidden:
        lines.append(f"root:      {'editors':<12} {hidden} extension folders of editors not present")
    lines += project_lines(st.get("projects") or {})
    scan = st.get("scan", {})
    lines.append(
        f"scanning:  {'on' if scan.get('enabled') else 'OFF: content is not scanned for secrets'}"
    )
    store = st.get("store_errors") or {}
    if store.get("count"):
        waiting = store.get("retry_in_s")
        lines.append(
            f"store:     {store['count']} commits failed ({store.get('last_error')}),"
            f" last at {store.get('last_at')}"
            + (f", retrying in {waiting:.0f} s" if waiting else ", writing again")
        )
    sink = st.get("sink", {})
    if sink.get("enabled"):
        lines.append(
            f"sink:      {sink['state']} -> {sink['url']} ({sink['database']}), "
            f"lag {sink['lag_events']} events / {sink['lag_seconds']:.1f} s"
            + (f", last error: {sink['last_error']}" if sink.get("last_error") else "")
        )
    if st.get("skipped"):
        lines.append(
            "skipped:   " + ", ".join(f"{k}={v}" for k, v in sorted(st["skipped"].items()))
        )
    for v in st.get("fidelity", []):
        if v.get("not_understood"):
            types = ", ".join(f"{t} x{n}" for t, n in v.get("not_understood_types", [])[:3])
            lines.append(
                f"fidelity:  {v['adapter']} {v['version']} {v['not_understood_share']:.1%} of"
                f" {v['read']} records not understood ({types})"
            )
    for d in st.get("drift", [])[:10]:
        lines.append(f"drift:     {d['adapter']} {d['version']} {d['record_type']} x{d['count']}")
    return lines


def project_lines(projects: dict[str, Any]) -> list[str]:
    """The folders searched for the files agents keep in projects, and those found."""
    lines = [f"projects:  {f['path']} ({'searched' if f.get('exists') else 'missing'})"
             for f in projects.get("folders", [])]
    scan = projects.get("scan") or {}
    if projects:
        lines.append(
            f"projects:  {projects.get('known_roots', 0)} project roots of known sessions;"
            f" {scan.get('dirs', 0)} folders listed in {scan.get('cpu_ms', 0)} ms, next in"
            f" {scan.get('interval_s', 0):.0f} s; watched: {projects.get('watch')}"
        )
    for f in projects.get("files", []):
        lines.append(f"project:   {f['agent']:<12} {f['path']}")
    return lines


def web_line(socket_path: Path) -> str | None:
    """The status line about a running web page (``agentsrc web``), or None."""
    from ..web.url import read_url, without_token

    info = read_url(socket_path)
    if info is None:
        return None
    return f"web:       {without_token(str(info.get('url')))} (agentsrc web --url: the link)"


def local_time(ts: str | None, relative: bool = False, now: float | None = None) -> str:
    """An ISO UTC time for a person: local, ``2026-04-09 14:16``, or ``3h ago``."""
    if not ts:
        return ""
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return ts
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if relative:
        import time

        age = (now if now is not None else time.time()) - moment.timestamp()
        for unit, seconds in (("d", 86400), ("h", 3600), ("m", 60)):
            if age >= seconds:
                return f"{int(age // seconds)}{unit} ago"
        return "just now"
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def sessions_params(
    *,
    agent: str | None,
    project: str | None,
    cwd: str | None,
    since: str | None,
    until: str | None,
    model: str | None,
    search: str | None,
    sort: str,
    limit: int,
    cursor: str | None,
) -> dict[str, Any]:
    """``sessions.list``'s params from ``agentsrc sessions``' options (empty ones left out)."""
    params: dict[str, Any] = {"limit": limit, "sort": sort}
    for name, value in (("agent", agent), ("project", project), ("cwd", cwd),
                        ("since", since), ("until", until), ("model", model),
                        ("search", search), ("cursor", cursor)):
        if value:
            params[name] = value
    return params


def cost_text(cost: Any) -> str:
    """A ``cost`` object (docs/protocol.md) for a person: ``$4.09``; its kind when it is
    not our estimate (``$1.77 reported``, ``$60.81 mixed``); ``+ 53,077,637 tokens
    unpriced`` when the figure leaves tokens out; ``unpriced (no model recorded)``."""
    if not isinstance(cost, dict):
        return ""
    kind, usd = cost.get("kind"), cost.get("usd")
    reason = cost.get("reason")
    if kind == "unpriced" or not isinstance(usd, int | float) or isinstance(usd, bool):
        return f"unpriced ({reason})" if reason else "unpriced"
    text = f"${usd:,.2f}" if usd >= 0.01 or usd == 0 else f"${usd:,.4f}"
    if kind != "estimated":
        text += f" {kind}"
    missing = cost.get("unpriced_tokens")
    if isinstance(missing, int) and missing:
        text += f" + {missing:,} tokens unpriced"
    return text


def sessions_lines(page: dict[str, Any], relative: bool) -> tuple[list[str], list[str]]:
    """``agentsrc sessions`` for a person: the table (stdout) and the next page's hint
    (stderr)."""
    table = table_lines(
        [
            [
                s["id"][:48],
                local_time(s.get("last_event_at"), relative),
                s.get("prompts"),
                s.get("tool_calls"),
                short(cost_text(s.get("cost")), 28),
                short(s.get("model"), 20),
                short(s.get("cwd"), 40),
                short(s.get("title"), 40),
            ]
            for s in page["sessions"]
        ],
        ["SESSION", "LAST EVENT", "PROMPTS", "TOOLS", "COST", "MODEL", "CWD", "TITLE"],
    )
    hint = [f"(more: --cursor {page['next_cursor']})"] if page.get("next_cursor") else []
    return table, hint
