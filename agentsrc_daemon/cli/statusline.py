"""``agentsrc statusline``, the pure parts: Claude Code's status-line JSON read from
stdin, the socket request built from it, and the one line printed from the answer (or
the fallback line when the daemon cannot answer).

Claude Code runs the status-line command every few hundred milliseconds with a JSON
object on stdin (``session_id``, ``transcript_path``, ``cwd``, ``model{id,
display_name}``, ``workspace``, ``cost{total_cost_usd, ...}``, ...) and shows the first
line it prints. The line: the model, this session's cost, today's cost, the current
5-hour block's cost and the time left in it, e.g.::

    Opus 4.6 · session $4.09 · today $12.80 · block $3.21 (2h13m left, $1.10/h)

Everything read from stdin or the socket is hostile text on a terminal: control
characters are dropped and names are cut, so nothing can move the cursor or recolour
the screen. The standard library and orjson only: this runs on every refresh, where
typer's import alone would cost 0.25 s.

The socket method, for the daemon's side (phase 2: docs/usage.md, "statusline"):
``usage.statusline`` with ``{"agent": "claude-code", "session_id": <native id>,
"day_start": <ISO time of the local midnight>}``, answered with ``{"session": {"cost":
COST, "tokens": N} | null, "today": {"cost": COST, "tokens": N}, "block": {"start":
ISO, "end": ISO, "cost": COST, "burn_usd_per_hour": float | null, "projected": COST |
null} | null}``, each COST the shared ``{"usd", "kind"}`` object."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

METHOD = "usage.statusline"
AGENT = "claude-code"
MAX_MODEL_CHARS = 32
SEP = " · "


@dataclass(frozen=True, slots=True)
class StatusInput:
    session_id: str | None = None
    model: str | None = None  # display_name, else id
    cwd: str | None = None
    own_cost_usd: float | None = None  # Claude Code's own estimate (cost.total_cost_usd)


def parse_input(raw: bytes) -> StatusInput:
    """What the status-line JSON says; nothing when it is not an object (an empty stdin,
    a newer shape): the line is still printed."""
    try:
        doc = orjson.loads(raw) if raw.strip() else None
    except orjson.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        return StatusInput()
    model = doc.get("model")
    if isinstance(model, dict):
        name = _text(model.get("display_name")) or _text(model.get("id"))
    else:
        name = _text(model)
    workspace = doc.get("workspace")
    cwd = _text(doc.get("cwd")) or (
        _text(workspace.get("current_dir")) if isinstance(workspace, dict) else None
    )
    spent = doc.get("cost")
    own: Any = spent.get("total_cost_usd") if isinstance(spent, dict) else None
    own_usd = float(own) if _finite(own) and own >= 0 else None
    return StatusInput(_text(doc.get("session_id")), name, cwd, own_usd)


def request_params(inp: StatusInput, now: datetime) -> dict[str, Any]:
    """The socket request's params: the session and the start of the local day
    (``now`` aware, in the local zone), so that "today" is the user's day."""
    local_midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    params: dict[str, Any] = {"agent": AGENT, "day_start": local_midnight.isoformat()}
    if inp.session_id:
        params["session_id"] = inp.session_id
    return params


def format_line(inp: StatusInput, answer: dict[str, Any], now: datetime) -> str:
    """The one line from the daemon's answer."""
    parts = [_model(inp)]
    session = answer.get("session")
    if isinstance(session, dict):
        parts.append("session " + format_cost(session.get("cost")))
    elif inp.own_cost_usd is not None:  # not ingested yet: Claude Code's own figure
        parts.append(f"session ${inp.own_cost_usd:,.2f} (Claude Code)")
    today = answer.get("today")
    if isinstance(today, dict):
        parts.append("today " + format_cost(today.get("cost")))
    block = answer.get("block")
    if isinstance(block, dict):
        parts.append(_block(block, now))
    return SEP.join(p for p in parts if p)


def format_fallback(inp: StatusInput, reason: str) -> str:
    """The line when the daemon cannot answer (not running, too slow, an error): the
    model, Claude Code's own session cost when it gave one, and why ours is missing."""
    parts = [_model(inp)]
    if inp.own_cost_usd is not None:
        parts.append(f"session ${inp.own_cost_usd:,.2f} (Claude Code)")
    parts.append("agentsrc: " + _clean(reason, 60))
    return SEP.join(p for p in parts if p)


def format_cost(cost: Any) -> str:
    """``$4.09``; ``$4.09+`` when some tokens are unpriced (the figure is a floor);
    ``$?`` when nothing could be priced."""
    if not isinstance(cost, dict):
        return "$?"
    usd = cost.get("usd")
    if not _finite(usd):
        return "$?"
    plus = "+" if cost.get("unpriced_tokens") else ""
    return f"${usd:,.2f}{plus}"


def format_left(left: timedelta) -> str:
    minutes = max(0, math.ceil(left.total_seconds() / 60))
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m"


def _block(block: dict[str, Any], now: datetime) -> str:
    text = "block " + format_cost(block.get("cost"))
    detail = []
    end = _time(block.get("end"))
    if end is not None:
        detail.append(format_left(end - now.astimezone(UTC)) + " left")
    rate = block.get("burn_usd_per_hour")
    if _finite(rate):
        detail.append(f"${rate:,.2f}/h")
    return f"{text} ({', '.join(detail)})" if detail else text


def _model(inp: StatusInput) -> str:
    return _clean(inp.model, MAX_MODEL_CHARS) if inp.model else "Claude"


def _clean(text: str | None, limit: int) -> str:
    """Printable characters only (no escape sequences, no bidirectional overrides), cut."""
    kept = "".join(
        c for c in (text or "") if c.isprintable() and not 0x202A <= ord(c) <= 0x202E
        and not 0x2066 <= ord(c) <= 0x2069
    )
    kept = " ".join(kept.split())
    return kept if len(kept) <= limit else kept[: limit - 1] + "…"


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
