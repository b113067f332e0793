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
the screen.

It runs on every refresh, so ``agentsrc statusline`` is answered here, before the CLI's
fast path (cli/__init__.py), with what the interpreter has or loads in a few
milliseconds: the standard library's ``json`` and ``_socket`` (orjson's import alone
loads dataclasses, enum and inspect: 15-20 ms; pathlib 12 ms; the config module 10 ms),
the socket found as ``config.load_config`` finds it (``socket_path``; with a
configuration file, which may name another, the fast path asks load_config itself),
and one JSON-RPC request over it (bench/statusline.py: the whole process's wall time).

The socket method (docs/protocol.md): ``usage.statusline`` with ``{"agent":
"claude-code", "session_id": <native id>, "day_start": <ISO time of the local
midnight>}``, answered with ``{"session": {"cost": COST, "tokens": N} | null, "today":
{"cost": COST}, "block": {"start": ISO, "end": ISO, "cost": COST, "burn_usd_per_hour":
float | null, "projected": COST | null} | null}``, each COST the shared ``{"usd",
"kind"}`` object. cli/fast.py runs it, without typer."""

from __future__ import annotations

import json
import math
import os
import sys
from datetime import UTC, datetime, timedelta

TYPE_CHECKING = False  # typing itself is not imported at run time (3 ms)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

METHOD = "usage.statusline"
AGENT = "claude-code"
# How long the line waits for the daemon: Claude Code runs the command again within a
# second, and a slow answer is worse than the fallback line.
TIMEOUT_S = 0.5
MAX_MODEL_CHARS = 32
SEP = " · "


class StatusInput:
    """What the status-line JSON says (a plain class: dataclasses costs 10 ms to import)."""

    __slots__ = ("session_id", "model", "cwd", "own_cost_usd")

    def __init__(
        self,
        session_id: str | None = None,
        model: str | None = None,  # display_name, else id
        cwd: str | None = None,
        own_cost_usd: float | None = None,  # Claude Code's own estimate (cost.total_cost_usd)
    ) -> None:
        self.session_id, self.model, self.cwd, self.own_cost_usd = session_id, model, cwd, own_cost_usd

    def _fields(self) -> tuple[Any, ...]:
        return (self.session_id, self.model, self.cwd, self.own_cost_usd)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StatusInput) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return "StatusInput({}, {}, {}, {})".format(*map(repr, self._fields()))


def parse_input(raw: bytes) -> StatusInput:
    """What the status-line JSON says; nothing when it is not an object (an empty stdin,
    a newer shape, bytes that are not JSON): the line is still printed."""
    try:
        doc = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested beyond reason
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


# ---- the command: the socket as load_config finds it, one request ------------------


def socket_path(env: Mapping[str, str]) -> str | None:
    """The daemon's socket as ``config.load_config`` resolves it with no flag and no
    configuration file: $AGENTSRC_SOCKET, else the runtime directory's (config.
    runtime_dir: $XDG_RUNTIME_DIR, else logind's /run/user/<uid> when private), else
    the data directory's. None when a configuration file exists (it may name another
    socket or data directory: load_config reads it). tests/test_statusline.py holds the
    two to the same answer."""
    home = env.get("HOME") or os.path.expanduser("~")
    home = _as_path(home if os.path.isabs(home) else os.getcwd() + "/" + home)
    if env.get("AGENTSRC_CONFIG"):
        return None
    base = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    if os.path.exists(os.path.join(base, "agentsrc", "config.toml")):
        return None
    if env.get("AGENTSRC_SOCKET"):
        return _expand(env["AGENTSRC_SOCKET"], home)
    runtime = env.get("XDG_RUNTIME_DIR") or _logind_runtime_dir()
    if runtime:
        return os.path.join(runtime, "agentsrc", "agentsrc.sock")
    if env.get("AGENTSRC_DATA_DIR"):
        data = _expand(env["AGENTSRC_DATA_DIR"], home)
    else:
        data = os.path.join(os.path.abspath(env.get("XDG_DATA_HOME") or os.path.join(
            home, ".local", "share")), "agentsrc")
    return os.path.join(data, "agentsrc.sock")


def _as_path(text: str) -> str:
    """``str(Path(text))`` on POSIX without pathlib (12 ms to import): empty and ``.``
    parts dropped, ``..`` kept, a leading ``//`` kept as POSIX says."""
    lead = "//" if text.startswith("//") and not text.startswith("///") else (
        "/" if text.startswith("/") else "")
    parts = [p for p in text.split("/") if p and p != "."]
    return lead + "/".join(parts) if lead or parts else "."


def _expand(value: str, home: str) -> str:
    """config._expand's rule: ``~`` is the home, $VARIABLES expanded, made absolute."""
    if value == "~" or value.startswith("~/"):
        value = home + value[1:]
    return os.path.abspath(os.path.expandvars(value))


def _logind_runtime_dir() -> str | None:
    import stat

    path = f"/run/user/{os.getuid()}"
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return path


class _NoAnswer(Exception):
    pass


def ask(path: str, params: dict[str, Any], timeout: float = TIMEOUT_S) -> dict[str, Any]:
    """One ``usage.statusline`` request over the socket (a line of JSON-RPC each way).
    Raises _NoAnswer with what the line says when the daemon cannot answer."""
    # The C module itself: socket.py adds selectors and enum classes (5 ms) for nothing
    # a single request needs.
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(path)
        except OSError:
            raise _NoAnswer("daemon not running") from None
        request = {"jsonrpc": "2.0", "id": 1, "method": METHOD, "params": params}
        sock.sendall(json.dumps(request).encode() + b"\n")
        buf = b""
        while b"\n" not in buf:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise _NoAnswer("the daemon closed the connection")
            buf += chunk
    except TimeoutError:
        raise _NoAnswer(f"no answer in {timeout:g} s") from None
    except OSError as exc:
        raise _NoAnswer(str(exc)) from None
    finally:
        sock.close()
    msg = json.loads(buf.split(b"\n", 1)[0])
    if isinstance(msg, dict) and isinstance(msg.get("result"), dict):
        result: dict[str, Any] = msg["result"]
        return result
    error = msg.get("error") if isinstance(msg, dict) else None
    raise _NoAnswer(str(error.get("message")) if isinstance(error, dict) else "a bad answer")


def line_for(inp: StatusInput, path: str, now: datetime) -> str:
    """The line to print: from the daemon's answer, or the fallback saying why not."""
    try:
        return format_line(inp, ask(path, request_params(inp, now)), now)
    except _NoAnswer as exc:
        return format_fallback(inp, str(exc))


def read_stdin() -> StatusInput:
    raw = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read()
    return parse_input(raw)


def run(argv: list[str]) -> int | None:
    """``agentsrc statusline`` (no option) answered here; None for anything else, or
    when a configuration file may name the socket (the fast path's, cli/fast.py)."""
    if argv != ["statusline"]:
        return None
    path = socket_path(os.environ)
    if path is None:
        return None
    inp = read_stdin()
    sys.stdout.write(line_for(inp, path, datetime.now().astimezone()) + "\n")
    return 0
