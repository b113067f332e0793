"""The file list of a Codex ``apply_patch`` patch.

Codex writes its edits as one text format, whatever tool carried it (a JSON
``function_call``, a ``custom_tool_call`` with the raw text, ``["apply_patch", PATCH]``
argv, or a heredoc in a shell script)::

    *** Begin Patch
    *** Add File: path          (followed by "+" lines)
    *** Update File: path       (followed by "@@" hunks)
    *** Move to: new/path       (optional, right after an Update File header)
    *** Delete File: path
    *** End Patch

Only the headers matter here: this module says which files a patch touches and how,
never what it writes. Pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ADD = "add"
UPDATE = "update"
DELETE = "delete"
MOVE = "move"

_HEADERS = (
    ("*** Add File: ", ADD),
    ("*** Update File: ", UPDATE),
    ("*** Delete File: ", DELETE),
)
_MOVE_TO = "*** Move to: "
BEGIN_MARKER = "*** Begin Patch"


@dataclass(frozen=True, slots=True)
class PatchFile:
    op: str  # add | update | delete | move
    path: str  # as written in the header (relative paths are relative to the call's cwd)
    move_to: str | None = None  # set when op == "move"


def patch_text_of(value: Any) -> str | None:
    """The patch text inside whatever a caller holds: the text itself, a JSON string
    wrapping it ({"input": ...}, {"patch": ...}, or an argv list), a dict or a list.
    None when no patch text can be found."""
    return _find_patch_text(value, depth=0)


def _find_patch_text(value: Any, depth: int) -> str | None:
    if depth > 4:
        return None
    if isinstance(value, str):
        stripped = value.lstrip()
        # A JSON envelope passed through undecoded (the function_call arguments string).
        # Patch text itself never starts with one of these characters.
        if stripped[:1] in ("{", "[", '"'):
            try:
                decoded = json.loads(stripped)
            except ValueError:
                decoded = None
            if decoded is not None:
                found = _find_patch_text(decoded, depth + 1)
                if found is not None:
                    return found
        return value if BEGIN_MARKER in value or _has_header(value) else None
    if isinstance(value, dict):
        for key in ("input", "patch", "raw", "command", "cmd"):
            if key in value:
                found = _find_patch_text(value[key], depth + 1)
                if found is not None:
                    return found
        return None
    if isinstance(value, list):
        for item in value:
            found = _find_patch_text(item, depth + 1)
            if found is not None:
                return found
    return None


def _has_header(text: str) -> bool:
    return any(marker in text for marker, _ in _HEADERS)


def parse_patch(text: str) -> list[PatchFile]:
    """The files a patch adds, updates, deletes or moves, in patch order.

    Headers are recognised only at the start of a line, so patch content (whose lines
    start with "+", "-", " " or "@@") can never be mistaken for one. An Update File
    followed by Move to becomes a single ``move`` entry carrying both paths. Tolerant of
    CRLF line ends, a missing Begin/End marker and a trailing unterminated line."""
    if not isinstance(text, str):
        return []
    files: list[PatchFile] = []
    for raw_line in text.splitlines():
        line = raw_line.rstrip("\r")
        if line.startswith(_MOVE_TO):
            target = line[len(_MOVE_TO) :].strip()
            # A move is only meaningful right after the Update File it renames.
            if target and files and files[-1].op == UPDATE:
                files[-1] = PatchFile(MOVE, files[-1].path, target)
            continue
        for marker, op in _HEADERS:
            if line.startswith(marker):
                path = line[len(marker) :].strip()
                if path:
                    files.append(PatchFile(op, path))
                break
    return files
