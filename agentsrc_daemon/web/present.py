"""How values read on the page: times in the server's local time zone (the attribute
keeps UTC), durations, token counts, sizes, costs, paths relative to their project,
links to sessions and turns. Pure functions, registered as the templates' filters."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlencode

from markupsafe import Markup, escape

from .text import neutral, short

COST_KINDS = ("estimated", "reported", "unpriced", "mixed")


def parse_ts(ts: Any) -> datetime | None:
    if not isinstance(ts, str) or not ts:
        return None
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def local(ts: Any, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """A stored time in the server's local time zone, as text; "" without one."""
    moment = parse_ts(ts)
    return moment.astimezone().strftime(fmt) if moment else ""


def when(ts: Any, fmt: str = "%Y-%m-%d %H:%M") -> Markup:
    """``<time>`` with the UTC value in its attribute and the local time shown."""
    moment = parse_ts(ts)
    if moment is None:
        return Markup('<span class="none">\u2014</span>')
    iso = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Markup(f'<time datetime="{iso}">{escape(moment.astimezone().strftime(fmt))}</time>')


def ago(ts: Any, now: datetime | None = None) -> str:
    moment = parse_ts(ts)
    if moment is None:
        return ""
    secs = int(((now or datetime.now(UTC)) - moment).total_seconds())
    if secs < 0:
        return "just now"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if secs >= size:
            return f"{secs // size} {unit} ago"
    return f"{secs} s ago"


def duration_ms(ms: Any) -> str:
    if not isinstance(ms, int | float) or isinstance(ms, bool) or ms < 0:
        return ""
    if ms < 1000:
        return f"{int(ms)} ms"
    s = ms / 1000
    if s < 60:
        return f"{s:.1f} s"
    m, s = divmod(int(s), 60)
    if m < 60:
        return f"{m} min {s} s"
    h, m = divmod(m, 60)
    return f"{h} h {m} min"


def span(start: Any, end: Any) -> str:
    a, b = parse_ts(start), parse_ts(end)
    if a is None or b is None:
        return ""
    return duration_ms((b - a).total_seconds() * 1000)


def num(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    return f"{value:,.0f}"


def tokens_short(value: Any) -> str:
    """1,234,567 -> 1.2M; 12,345 -> 12.3k."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    v = float(value)
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= size:
            return f"{v / size:.1f}{unit}"
    return f"{v:.0f}"


def size(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "\u2014"
    v = float(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if v < 1024 or unit == "GiB":
            return f"{v:,.0f} {unit}" if unit == "B" else f"{v:,.1f} {unit}"
        v /= 1024
    return f"{v:.1f} TiB"


def cost(value: Any) -> Markup:
    """A ``cost`` object (``{"usd", "kind"}``, docs/protocol.md) as the page shows it:
    the dollars and their kind (the tokens left out and our estimate beside a reported
    figure in its title); ``unpriced``, with why in its title; a dash for a session that
    recorded no usage; nothing at all where a result carries none (never "$0" for an
    unknown)."""
    if not isinstance(value, dict):
        return Markup("")
    kind = value.get("kind")
    kind = kind if kind in COST_KINDS else "estimated"
    usd = value.get("usd")
    reason = value.get("reason")
    if kind == "unpriced" or not isinstance(usd, int | float) or isinstance(usd, bool):
        if reason == "no usage recorded":
            return Markup(f'<span class="cost cost-none" title="{escape(reason)}">—</span>')
        why = str(reason) if reason else "not priced"
        return Markup(f'<span class="cost cost-unpriced" title="{escape(why)}">unpriced</span>')
    amount = f"${usd:,.2f}" if usd >= 0.01 or usd == 0 else f"${usd:.4f}"
    notes = [kind]
    missing = value.get("unpriced_tokens")
    if isinstance(missing, int) and missing:
        notes.append(f"{missing:,} tokens unpriced")
    estimate = value.get("estimated_usd")
    if isinstance(estimate, int | float) and not isinstance(estimate, bool):
        notes.append(f"our estimate ${estimate:,.2f}")
    return Markup(f'<span class="cost cost-{kind}" title="{escape("; ".join(notes))}">'
                  f'{escape(amount)} <small>{kind}</small></span>')


def session_url(session_id: Any, at: Any = None) -> str:
    """The session's page (the id as the CLI shows it), or the turn that holds event
    ``at`` with its anchor."""
    base = "/sessions/" + quote(str(session_id), safe=":@-._~")
    if isinstance(at, int) and not isinstance(at, bool):
        return f"{base}?at={at}#e{at}"
    return base


def short_id(session_id: Any) -> str:
    """``agent:native`` -> the native id's first 8 characters, as the CLI's prefix."""
    s = str(session_id or "")
    native = s.split(":", 1)[1] if ":" in s else s
    return native[:8]


def rel(path: Any, project: Any = None) -> str:
    """A path relative to its project when inside it, else as it is; neutral."""
    p = neutral(path)
    root = neutral(project).rstrip("/\\") if project else ""
    if root and p.startswith(root + "/"):
        return p[len(root) + 1:]
    return p


HOME = os.path.expanduser("~").rstrip("/")


def tilde(path: Any) -> str:
    """A path under this user's home as ``~/...`` (shorter, and a screenshot does not
    show where the home is); neutral."""
    p = neutral(path)
    return "~" + p[len(HOME):] if HOME and HOME != "/" and p.startswith(HOME + "/") else p


def project_name(project: Any) -> str:
    p = neutral(project).rstrip("/\\")
    return p.replace("\\", "/").rsplit("/", 1)[-1] or p if p else ""


def query(base: str, **params: Any) -> str:
    """``base`` with the non-empty params as its query string."""
    pairs = [(k, "1" if v is True else str(v)) for k, v in params.items()
             if v not in (None, "", False)]
    return base + ("?" + urlencode(pairs) if pairs else "")


def local_midnight_utc(days_back: int = 0) -> str:
    """Today's (or an earlier day's) local midnight, as a UTC time for ``since``."""
    now = datetime.now().astimezone()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=days_back)
    return midnight.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def date_to_utc(day: str | None, *, end: bool = False) -> str | None:
    """A date picked in the form (local) as a UTC time: its start, or with ``end`` the
    start of the next day (``until`` is exclusive). None when empty or not a date."""
    if not day:
        return None
    try:
        d = datetime.strptime(day, "%Y-%m-%d")
    except ValueError:
        return None
    if end:
        d += timedelta(days=1)
    return d.astimezone().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def args_line(inp: Any, n: int = 160) -> str:
    """A tool call's stored input, summarised on one line: ``key: value`` pairs."""
    if not isinstance(inp, dict):
        return ""
    parts = []
    for k, v in inp.items():
        if isinstance(v, list) and all(isinstance(x, str) for x in v):
            v = " ".join(v)
        if isinstance(v, str | int | float) and not isinstance(v, bool):
            parts.append(f"{k}: {v}")
        elif isinstance(v, bool):
            parts.append(f"{k}: {'yes' if v else 'no'}")
    return short(", ".join(parts), n)


def marked(snippet: Any, marks: Any) -> Markup:
    """A search snippet with its matches in ``<mark>``: the text split at the marks'
    character ranges first, each piece then made neutral and escaped."""
    text = snippet if isinstance(snippet, str) else ""
    out: list[str] = []
    pos = 0
    for m in marks if isinstance(marks, list) else []:
        if not (isinstance(m, list) and len(m) == 2 and all(isinstance(i, int) for i in m)):
            continue
        a, b = max(m[0], pos), min(m[1], len(text))
        if a >= b:
            continue
        out.append(str(escape(neutral(text[pos:a]))))
        out.append(f"<mark>{escape(neutral(text[a:b]))}</mark>")
        pos = b
    out.append(str(escape(neutral(text[pos:]))))
    return Markup("".join(out))


FILTERS = {
    "when": when, "local": local, "ago": ago, "duration_ms": duration_ms, "span": span,
    "num": num, "tokens_short": tokens_short, "size": size, "cost": cost,
    "session_url": session_url, "short_id": short_id, "rel": rel,
    "project_name": project_name, "args_line": args_line, "marked": marked, "tilde": tilde,
}
