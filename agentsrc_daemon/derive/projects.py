"""Paths and project roots.

A session's project root is the git top-level of its cwd when that directory exists on
this machine (found by walking up to a ``.git`` entry: git itself is never run), else the
cwd itself. Every derived path is stored absolute and, when under the root, also
relative to it.

Transcripts can come from other machines: Windows paths (``C:\\...``, ``\\\\server\\...``)
and WSL mounts (``/mnt/c/...``) are kept as written and compared case-insensitively.

Everything here is pure except ``ProjectRoots.root_for``, which looks at the filesystem.
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re

_DRIVE_PATH = re.compile(r"^[A-Za-z]:[\\/]")
_UNC_PATH = re.compile(r"^\\\\[^\\]")
_WSL_MOUNT = re.compile(r"^/mnt/[A-Za-z](?:/|$)")


def is_windows_path(path: str) -> bool:
    """A Windows absolute path: drive letter (C:\\x, c:/x) or UNC (\\\\server\\share)."""
    # Called several times per derived path: most paths are POSIX, and neither regex can
    # match unless the second character is ':' or the path starts with a backslash.
    if path[1:2] != ":" and path[:1] != "\\":
        return False
    return bool(_DRIVE_PATH.match(path) or _UNC_PATH.match(path))


def is_case_insensitive(path: str) -> bool:
    """Paths on a Windows filesystem, seen natively or through a WSL mount."""
    return is_windows_path(path) or bool(_WSL_MOUNT.match(path))


def is_absolute(path: str) -> bool:
    return path.startswith("/") or is_windows_path(path)


def resolve_path(path: str, cwd: str | None) -> str:
    """``path`` made absolute against ``cwd`` and normalised (``a/./b/../c`` -> ``a/c``).

    Windows absolute paths are kept exactly as written; a relative path under a Windows
    cwd is joined with Windows rules. With no cwd a relative path stays relative."""
    if is_windows_path(path):
        return path
    if path.startswith("/"):
        return posixpath.normpath(path)
    if cwd is None or cwd == "":
        return posixpath.normpath(path)
    if is_windows_path(cwd):
        return ntpath.normpath(ntpath.join(cwd, path))
    return posixpath.normpath(posixpath.join(cwd, path))


def _components(path: str) -> list[str]:
    # str.split, not re.split: the same parts without a pattern lookup per call.
    parts = (path.replace("\\", "/") if is_windows_path(path) else path).split("/")
    return [p for p in parts if p not in ("", ".")]


def relative_to_project(path: str, root: str | None) -> str | None:
    """``path`` relative to ``root`` with "/" separators ("." for the root itself), or
    None when it is not under the root (or either is not absolute)."""
    if not root or not is_absolute(path) or not is_absolute(root):
        return None
    if is_windows_path(path) != is_windows_path(root):
        return None
    insensitive = is_case_insensitive(path) or is_case_insensitive(root)
    path_parts = _components(path)
    root_parts = _components(root)
    if len(path_parts) < len(root_parts):
        return None
    head = path_parts[: len(root_parts)]
    if insensitive:
        same = [p.casefold() for p in head] == [r.casefold() for r in root_parts]
    else:
        same = head == root_parts
    if not same:
        return None
    rest = path_parts[len(root_parts) :]
    return "/".join(rest) if rest else "."


def is_external(path: str, root: str | None) -> bool | None:
    """True when an absolute path lies outside the project root; None when unknowable
    (no root, or a path still relative because the cwd was unknown)."""
    if not root or not is_absolute(path) or not is_absolute(root):
        return None
    return relative_to_project(path, root) is None


class ProjectRoots:
    """Project root per cwd, cached (the walk costs a few stat calls per level).

    The cache is bounded and never expires: a directory that becomes a repository
    while the daemon runs keeps its old root until restart, which only affects
    ``rel_path``/``external`` of later events."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._cache: dict[str, str] = {}
        self._max_entries = max_entries

    def root_for(self, cwd: str) -> str:
        cached = self._cache.get(cwd)
        if cached is not None:
            return cached
        root = find_project_root(cwd)
        if len(self._cache) >= self._max_entries:
            # dicts keep insertion order: drop the oldest entry
            self._cache.pop(next(iter(self._cache)))
        self._cache[cwd] = root
        return root

    __call__ = root_for


def find_project_root(cwd: str) -> str:
    """The nearest ancestor of ``cwd`` (itself included) holding a ``.git`` entry (a
    directory, or a file for worktrees and submodules); ``cwd`` itself when none does or
    when ``cwd`` does not exist here. Windows paths are never looked up: on this machine
    they would be relative names."""
    if is_windows_path(cwd) or not cwd.startswith("/"):
        return cwd
    start = posixpath.normpath(cwd)
    if not os.path.isdir(start):
        return start
    current = start
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = posixpath.dirname(current)
        if parent == current:
            return start
        current = parent
