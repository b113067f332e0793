"""The directory a folder name made from a path stands for, looked up on this machine.

Cursor names a project's folder after its cwd with every run of characters other than
letters and digits turned into one "-" and the leading one dropped
(``/Users/ana/my-app/.config`` -> ``Users-ana-my-app-config``). The name cannot be read
back: a "-" may have been a "/", a "-", a "." or a space. What can be done is to look:
walk down from "/" through the directories whose names encode to the next part of the
name, trying each, and take the path when exactly one directory matches it all. When
none does (the transcript came from another machine, the directory is gone) or several
do, the answer is None: a cwd is never guessed.

The walk lists only directories on the way (each one's entries once), is bounded in
the directories it lists, and is remembered per name for the daemon's life.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

_RUN = re.compile(r"[^A-Za-z0-9]+")
MAX_LISTED = 256  # directories listed per name at most: a name that needs more is None
MAX_MATCHES = 2  # stop at the second full match: ambiguous


def encode(name: str) -> str:
    """A path (or one name) as Cursor encodes it: runs of anything but letters and
    digits become one "-", none at either end."""
    return _RUN.sub("-", name).strip("-")


@lru_cache(maxsize=1024)
def resolve_encoded(encoded: str, root: str = "/") -> str | None:
    """The one directory under ``root`` whose absolute path encodes to ``encoded``, or
    None (none, several, or more than MAX_LISTED directories to look through)."""
    target = encode(encoded)
    if not target:
        return None
    found: list[str] = []
    listed = 0
    stack: list[tuple[str, str]] = [(root, target)]
    while stack and len(found) < MAX_MATCHES:
        directory, rest = stack.pop()
        listed += 1
        if listed > MAX_LISTED:
            return None
        try:
            with os.scandir(directory) as it:
                entries = [e for e in it if _is_dir(e)]
        except OSError:
            continue
        for entry in entries:
            piece = encode(entry.name)
            if not piece:
                continue
            if rest == piece:
                found.append(entry.path)
            elif rest.startswith(piece + "-"):
                stack.append((entry.path, rest[len(piece) + 1 :]))
    return found[0] if len(found) == 1 else None


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # a symlinked home (/home -> /usr/home) is followed
    except OSError:
        return False
