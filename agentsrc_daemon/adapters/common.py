"""Small pure helpers shared by the adapters."""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from typing import Any

import orjson

# Tool-input fields that hold file content or patch text: never stored, only their size.
CONTENT_FIELDS = frozenset(
    {
        "content",
        "old_string",
        "new_string",
        "old_text",
        "new_text",
        "edits",
        "new_source",
        "patch",
        "input",  # Codex apply_patch custom tool: the raw patch text
        "chars",  # Codex write_stdin
        "file_text",  # Copilot CLI create / str_replace_editor
        "old_str",  # Copilot CLI edit / str_replace_editor
        "new_str",
    }
)
MAX_STORED_STRING = 4096


def summarize_input(value: Any) -> Any:
    """The part of a tool input that is stored: content fields become their size,
    long strings are cut. The full input still travels (transiently) to derivation
    and secret scanning."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k in CONTENT_FIELDS and v is not None and not isinstance(v, bool | int | float):
                size = len(v) if isinstance(v, str | list | dict) else 0
                out[k] = {"omitted_chars" if isinstance(v, str) else "omitted_items": size}
            else:
                out[k] = summarize_input(v)
        return out
    if isinstance(value, list):
        return [summarize_input(v) for v in value[:200]]
    if isinstance(value, str) and len(value) > MAX_STORED_STRING:
        return value[:MAX_STORED_STRING] + f"…[{len(value) - MAX_STORED_STRING} more chars]"
    return value


def normalize_ts(value: Any) -> str | None:
    """ISO 8601 UTC with a Z suffix. Accepts ISO strings and epoch seconds or milliseconds.
    Never raises: what cannot be understood is kept as written (strings) or dropped."""
    try:
        return _normalize_ts(value)
    except (OverflowError, OSError, ValueError):
        return value if isinstance(value, str) and value.strip() else None


def _normalize_ts(value: Any) -> str | None:
    # Strings first, and in them a ready YYYY-MM-DDTHH:MM:SS.mmmZ first: nearly every
    # timestamp of every format is one (its other tests cost more than the answer).
    if isinstance(value, str):
        s = value.strip()
        if len(s) == 24 and s[19] == "." and s[23] == "Z":
            return s
        if not s:
            return None
        if s.isascii() and s.isdigit():
            return _normalize_ts(int(s))
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            return s
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        dt = dt.astimezone(UTC)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
        if seconds > 1e11:  # milliseconds
            seconds /= 1000.0
        dt = datetime.fromtimestamp(seconds, tz=UTC)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    return None


def text_of(content: Any) -> str:
    """Concatenated text of a message content: a string, or a list of blocks with
    ``text`` (Claude text blocks, Codex input_text/output_text, Muse parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                t = block.get("text")
                if isinstance(t, str):
                    parts.append(t)
        return "\n".join(parts)
    return ""


TITLE_SCAN_CHARS = 64 * 1024


def first_line(text: str, limit: int = 120) -> str:
    """The first non-blank line, cut to ``limit``. Looks only at the start of the
    text: a 50 MB pasted prompt must not be split (copied) just to title a session."""
    for line in text[:TITLE_SCAN_CHARS].splitlines():
        stripped = line.strip()
        if stripped:
            return stripped[:limit]
    return ""


def nonempty_str(value: Any) -> str | None:
    """``value`` when it is a non-empty string, else None (transcript fields are untyped)."""
    return value if isinstance(value, str) and value else None


# What a stored integer may hold: SQLite's INTEGER and orjson's int are both 64-bit.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
UINT64_MAX = 2**64 - 1  # the largest integer orjson writes


def as_int(value: Any) -> int | None:
    """``value`` as an int, or None: the one reading of an untyped JSON number as an
    integer (counts, exit codes, durations), for the adapters and derive alike.

    * An int is kept as written, if orjson can write it (-2**63 to 2**64 - 1): a line
      over 4 MiB is parsed by the stdlib, which reads an integer of any size.
      A bool is not a number here (JSON true is not 1).
    * A float is rounded to the nearest int (halves to even, Python's ``round``): a
      writer that emits whole numbers as floats (``2.0``) loses nothing, and a
      fractional duration (41.6 ms) becomes the nearest whole one (42), not a
      truncated one.
    * A float that is not finite, or that rounds to more than 64 bits, is None: it
      cannot be stored (orjson reads an integer past 2**64 as a float).
    * Anything else (strings included) is None: numbers written as text are a format
      of their own, parsed where the adapter knows that format.
    """
    if type(value) is int:  # the common case first (a bool's type is bool, not int)
        return value if INT64_MIN <= value <= UINT64_MAX else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if INT64_MIN <= value <= UINT64_MAX else None
    if isinstance(value, float) and math.isfinite(value):
        rounded = round(value)
        return rounded if INT64_MIN <= rounded <= INT64_MAX else None
    return None


def as_count(value: Any) -> int:
    """A count (tokens, retries) read by the ``as_int`` rule; missing, unreadable or
    negative is 0, so counters can be summed without checks."""
    n = as_int(value)
    return n if n is not None and n > 0 else 0


def seconds_to_ms(value: Any) -> int | None:
    """A duration in seconds (an int or a float) as whole milliseconds, by ``as_int``'s
    rule (0.0416 s is 42 ms); None when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return as_int(value * 1000)


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a dict, else an empty one."""
    return value if isinstance(value, dict) else {}


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A function call's ``arguments``: a JSON object string (or, leniently, an object).
    Anything else is kept whole as ``{"raw": ...}``."""
    if isinstance(raw, dict):
        return raw
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"raw": raw}
        return parsed if isinstance(parsed, dict) else {"raw": raw}
    return {"raw": raw}


def stable_digest(value: Any, size: int = 8) -> str:
    """A short hex digest of a decoded JSON value, the same for equal values whatever
    their key order. Values orjson cannot encode (integers past 64 bits, which the
    stdlib parser of very long lines can produce) go through the stdlib encoder."""
    try:
        raw = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # orjson.JSONEncodeError
        raw = json.dumps(value, sort_keys=True, default=repr).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(raw, digest_size=size).hexdigest()


def state_table(state: dict[str, Any], name: str) -> dict[str, Any]:
    """The dict ``state[name]`` of an adapter's per-file state, created when missing (or
    not a dict: a state persisted by an older version)."""
    table = state.get(name)
    if not isinstance(table, dict):
        table = {}
        state[name] = table
    return table


def remember_bounded(table: dict[str, Any], key: str, value: Any, cap: int) -> None:
    """Insert into a bounded table, dropping the oldest entries past ``cap``: per-file
    state is persisted with the cursor on every commit, so it must stay small."""
    table.pop(key, None)
    table[key] = value
    while len(table) > cap:
        del table[next(iter(table))]
