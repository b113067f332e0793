"""The paths provider: which files under the agents' roots are sources, and of what mode.

A source is one of:
* ``jsonl``: an append-only transcript, tailed line by line from a persisted offset
  (Codex, Claude Code, Muse, Copilot ``events.jsonl``, Gemini ``.jsonl`` chats);
* ``document``: a whole-file JSON document re-read when it changes, with the adapter's
  per-file state kept across its versions (Codex legacy ``.json`` rollouts, Claude
  subagent ``.meta.json``, Muse ``sessions.json``, Gemini ``.json`` chats, Copilot
  ``history-session-state``, OpenCode's JSON tree);
* ``sqlite``: an agent's database (OpenCode's, Crush's) read through
  ``ingest/agent_db.py`` from a persisted keyset cursor;
* ``text``: a text file that grows, whose records span lines (Aider's Markdown chat
  history), read through ``ingest/text_tail.py``: the adapter says how far its records
  are final. It has **companions**, files of the same agent read in the same round from
  positions of their own (Aider's input and LLM histories: ``companions_of``);
* ``memory``: an agent memory file, tracked by size and content hash only.

Two agents keep their files in the projects they work in, not under a root: Aider
(``<project>/.aider.chat.history.md``) and Crush (``<project>/.crush/crush.db``).
``project_file`` names them; ``ingest/project_scan.py`` finds them.

Some files are not sources but matter to one: a **sidecar** is read by the ingest layer
with its transcript (Gemini's ``.project_root``, Copilot's ``workspace.yaml``: see
``sidecar_of``), and a database's ``-wal``/``-shm`` files change when it does. A change
to either wakes the source it belongs to (``dependents``).

Nothing else under a root is ever opened: not the agents' credentials (OpenCode's
``auth.json`` and ``mcp-auth.json``, Gemini's ``oauth_creds.json``, Copilot's
``config.json``), logs, caches or git stores. The walk only descends into directories
that can hold sources (``_descends``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

JSONL = "jsonl"
DOCUMENT = "document"
SQLITE = "sqlite"
TEXT = "text"
MEMORY = "memory"

# The files agents keep in a project folder (path relative to it -> adapter, mode), and
# the companions of a text source (name -> file beside it).
AIDER_CHAT = ".aider.chat.history.md"
CRUSH_DB = ".crush/crush.db"
PROJECT_FILES = {AIDER_CHAT: ("aider", TEXT), CRUSH_DB: ("crush", SQLITE)}
COMPANIONS = {"aider": {"input": ".aider.input.history", "llm": ".aider.llm.history"}}

_UUIDISH = r"[0-9A-Za-z][0-9A-Za-z_-]*"
_CLAUDE_JSONL = re.compile(
    rf"^[^/]+/(?:{_UUIDISH}\.jsonl|agent-{_UUIDISH}\.jsonl|{_UUIDISH}/subagents/(?:[^/]+/)*agent-{_UUIDISH}\.jsonl)$"
)
_CLAUDE_META = re.compile(rf"^[^/]+/{_UUIDISH}/subagents/(?:[^/]+/)*agent-{_UUIDISH}\.meta\.json$")
_CLAUDE_MEMORY = re.compile(r"^[^/]+/memory/.+$")
_CODEX_JSONL = re.compile(
    r"^(?:(?:sessions|archived_sessions)/(?:.+/)?rollout-[^/]+|session_parts/[^/]+/part-[0-9]+)\.jsonl$"
)
_CODEX_INDEX = "session_index.jsonl"  # the threads' names (docs/formats.md, "Titles")
_CODEX_DOC = re.compile(r"^(?:sessions|archived_sessions)/(?:.+/)?rollout-[^/]+\.json$")
_CODEX_MEMORY = re.compile(r"^(?:AGENTS\.md|AGENTS\.override\.md|memories/.+)$")
_MUSE_JSONL = re.compile(r"^[^/]+/sessions/[^/]+\.jsonl$")
_MUSE_DOC = re.compile(r"^[^/]+/sessions/sessions\.json$")
# Gemini CLI, relative to ~/.gemini (docs/formats.md, "Gemini CLI").
_GEMINI_JSONL = re.compile(r"^tmp/[^/]+/chats/(?:session-[^/]+|[^/]+/[^/]+)\.jsonl$")
_GEMINI_DOC = re.compile(r"^tmp/[^/]+/chats/session-[^/]+\.json$")
_GEMINI_MEMORY = re.compile(
    r"^(?:GEMINI\.md|tmp/[^/]+/(?:logs\.json|checkpoint-[^/]+\.json|memory/.+))$"
)
_GEMINI_SIDECAR = re.compile(r"^tmp/[^/]+/\.project_root$")
# GitHub Copilot CLI, relative to ~/.copilot.
_COPILOT_JSONL = re.compile(r"^session-state/[^/]+(?:/events)?\.jsonl$")
_COPILOT_DOC = re.compile(r"^history-session-state/session_[^/]+\.json$")
_COPILOT_MEMORY = re.compile(r"^(?:copilot-instructions\.md|instructions/[^/]+\.instructions\.md)$")
_COPILOT_SIDECAR = re.compile(r"^session-state/[^/]+/workspace\.yaml$")
# OpenCode, relative to its data dir.
_OC_ID = r"[A-Za-z0-9_-]+"
_OPENCODE_DB = re.compile(r"^opencode(?:-[A-Za-z0-9._-]+)?\.db$")
_OPENCODE_DOC = re.compile(
    rf"^(?:storage/session/[^/]+/ses_{_OC_ID}\.json"
    rf"|storage/message/ses_{_OC_ID}/msg_{_OC_ID}\.json"
    rf"|storage/part/msg_{_OC_ID}/prt_{_OC_ID}\.json"
    rf"|project/[^/]+/storage/session/info/ses_{_OC_ID}\.json"
    rf"|project/[^/]+/storage/session/message/ses_{_OC_ID}/msg_{_OC_ID}\.json"
    rf"|project/[^/]+/storage/session/part/ses_{_OC_ID}/msg_{_OC_ID}/prt_{_OC_ID}\.json)$"
)

# Directories never worth descending into, for the agents that have no rule of their own.
_SKIP_DIRS = {"tool-results", "node_modules", ".git", "log", "cache", "tmp"}
# The directories (relative to the root) that can hold an agent's sources; nothing else
# under those roots is walked. Gemini keeps everything under tmp/, which is why the
# name-based skip above is not theirs.
_DESCEND: dict[str, re.Pattern[str]] = {
    "gemini": re.compile(r"^tmp(?:/[^/]+(?:/chats(?:/[^/]+)?|/memory(?:/.+)?)?)?$"),
    "copilot": re.compile(r"^(?:session-state(?:/[^/]+)?|history-session-state|instructions)$"),
    "opencode": re.compile(
        r"^(?:storage(?:/(?:session|message|part)(?:/[^/]+)?)?"
        r"|project(?:/[^/]+(?:/storage(?:/session(?:/(?:info|message(?:/[^/]+)?"
        r"|part(?:/[^/]+(?:/[^/]+)?)?))?)?)?)?)$"
    ),
}


@dataclass(frozen=True, slots=True)
class SourceSpec:
    path: str
    adapter: str  # one of events.AGENTS
    mode: str  # jsonl | document | sqlite | memory
    root: str


def _relative(path: str, roots: Mapping[str, Path]) -> Iterator[tuple[str, str, str]]:
    """(adapter, root, path relative to it) for every root ``path`` is under."""
    for adapter, root in roots.items():
        root_s = str(root)
        if not path.startswith(root_s + os.sep):
            continue
        rel = path[len(root_s) + 1 :]
        if os.sep != "/":  # pragma: no cover - POSIX only today
            rel = rel.replace(os.sep, "/")
        yield adapter, root_s, rel


def classify(
    path: str, roots: Mapping[str, Path], extra: Mapping[str, str] | None = None
) -> SourceSpec | None:
    """What ``path`` is, given the adapter roots (and ``extra``: source files named
    outside the roots' layouts, path -> adapter, such as $OPENCODE_DB); None when it
    is not a source. A project file (``project_file``) is one wherever it is."""
    for adapter, root_s, rel in _relative(path, roots):
        mode = _mode_for(adapter, rel)
        if mode is not None:
            return SourceSpec(path=path, adapter=adapter, mode=mode, root=root_s)
    if extra and path in extra:
        return SourceSpec(path, extra[path], SQLITE, os.path.dirname(path))
    return project_file(path)


def project_file(path: str) -> SourceSpec | None:
    """An agent's file in a project folder (PROJECT_FILES), by its name; its root is the
    project folder."""
    name = os.path.basename(path)
    if name == AIDER_CHAT:
        return SourceSpec(path, "aider", TEXT, os.path.dirname(path))
    if name == "crush.db" and os.path.basename(os.path.dirname(path)) == ".crush":
        return SourceSpec(path, "crush", SQLITE, os.path.dirname(os.path.dirname(path)))
    return None


def companions_of(spec: SourceSpec) -> dict[str, str]:
    """The companions a text source is read with: name -> path (whether it exists)."""
    if spec.mode != TEXT:
        return {}
    folder = os.path.dirname(spec.path)
    return {name: os.path.join(folder, file)
            for name, file in COMPANIONS.get(spec.adapter, {}).items()}


def _mode_for(adapter: str, rel: str) -> str | None:
    if adapter == "codex":
        if _CODEX_JSONL.match(rel) or rel == _CODEX_INDEX:
            return JSONL
        if _CODEX_DOC.match(rel):
            return DOCUMENT
        if _CODEX_MEMORY.match(rel):
            return MEMORY
    elif adapter == "claude-code":
        if _CLAUDE_JSONL.match(rel):
            return JSONL
        if _CLAUDE_META.match(rel):
            return DOCUMENT
        if _CLAUDE_MEMORY.match(rel):
            return MEMORY
    elif adapter == "muse":
        if _MUSE_DOC.match(rel):
            return DOCUMENT
        if _MUSE_JSONL.match(rel):
            return JSONL
    elif adapter == "gemini":
        if _GEMINI_JSONL.match(rel):
            return JSONL
        if _GEMINI_DOC.match(rel):
            return DOCUMENT
        if _GEMINI_MEMORY.match(rel):
            return MEMORY
    elif adapter == "copilot":
        if _COPILOT_JSONL.match(rel):
            return JSONL
        if _COPILOT_DOC.match(rel):
            return DOCUMENT
        if _COPILOT_MEMORY.match(rel):
            return MEMORY
    elif adapter == "opencode":
        if _OPENCODE_DB.match(rel):
            return SQLITE
        if _OPENCODE_DOC.match(rel):
            return DOCUMENT
    return None


# ---- sidecars and side files -----------------------------------------------------------


SIDECAR_ADAPTERS = ("gemini", "copilot")  # the adapters whose sources have a sidecar


def sidecar_of(spec: SourceSpec) -> str | None:
    """The sidecar the ingest layer reads with this source: a Gemini chat's project
    ``.project_root``, a Copilot ``events.jsonl``'s ``workspace.yaml``. The path is given
    whether the file exists or not."""
    if spec.adapter not in SIDECAR_ADAPTERS or spec.mode not in (JSONL, DOCUMENT):
        return None
    rel = spec.path[len(spec.root) + 1 :]
    if spec.adapter == "gemini" and rel.startswith("tmp/"):
        project = rel.split("/", 2)[1]
        return os.path.join(spec.root, "tmp", project, ".project_root")
    if spec.adapter == "copilot" and spec.mode == JSONL and rel.endswith("/events.jsonl"):
        return os.path.join(os.path.dirname(spec.path), "workspace.yaml")
    return None


def dependents(
    path: str, roots: Mapping[str, Path], extra: Mapping[str, str] | None = None
) -> list[SourceSpec]:
    """The sources a change to ``path`` (not itself a source) concerns: a database's
    ``-wal``/``-shm`` wake the database, a sidecar wakes the transcripts it describes.
    Only sources that exist are returned (a sidecar written before its transcript wakes
    nothing: the transcript's own creation will)."""
    base = os.path.basename(path)
    for adapter, companions in COMPANIONS.items():
        if base in companions.values():
            for file, (owner, _mode) in PROJECT_FILES.items():
                source = os.path.join(os.path.dirname(path), file)
                if owner == adapter and os.path.isfile(source):
                    spec = project_file(source)
                    return [spec] if spec is not None else []
            return []
    for suffix in ("-wal", "-shm"):
        if base.endswith(suffix):
            db = path[: -len(suffix)]
            spec = classify(db, roots, extra)
            if spec is not None and spec.mode == SQLITE and os.path.exists(db):
                return [spec]
            return []
    out: list[SourceSpec] = []
    for adapter, _root, rel in _relative(path, roots):
        if adapter == "copilot" and _COPILOT_SIDECAR.match(rel):
            events = os.path.join(os.path.dirname(path), "events.jsonl")
            spec = classify(events, roots, extra)
            if spec is not None and os.path.isfile(events):
                out.append(spec)
        elif adapter == "gemini" and _GEMINI_SIDECAR.match(rel):
            chats = os.path.join(os.path.dirname(path), "chats")
            if os.path.isdir(chats):
                out += [
                    spec
                    for spec, _ in walk_sources(Path(chats), roots, extra)
                    if sidecar_of(spec) == path
                ]
    return out


# ---- walking -------------------------------------------------------------------------------


def _owner(directory: str, roots: Mapping[str, Path]) -> tuple[str, str] | None:
    """(adapter, path relative to its root) of a directory under a root; the most
    specific root wins. ("", "") for a root itself."""
    best: tuple[str, str, int] | None = None
    for adapter, root in roots.items():
        root_s = str(root)
        if directory == root_s:
            return adapter, ""
        if directory.startswith(root_s + os.sep) and (best is None or len(root_s) > best[2]):
            best = (adapter, directory[len(root_s) + 1 :].replace(os.sep, "/"), len(root_s))
    return (best[0], best[1]) if best else None


def _descends(directory: str, name: str, roots: Mapping[str, Path]) -> bool:
    """Whether the walk goes into ``directory`` (named ``name``)."""
    owner = _owner(directory, roots)
    if owner is None:
        return name not in _SKIP_DIRS
    adapter, rel = owner
    rule = _DESCEND.get(adapter)
    if rule is None:
        return name not in _SKIP_DIRS
    return rel == "" or bool(rule.match(rel))


def _classifier(
    directory: str, roots: Mapping[str, Path], extra: Mapping[str, str] | None
) -> Callable[[str, str], SourceSpec | None]:
    """``classify`` for the entries of one directory: which roots a path is under
    depends on its directory only (a name holds no separator), so the roots are matched
    once per directory, not once per file (a reconcile of 20,000 files spent a third
    of its time there)."""
    under = [
        (adapter, root_s, rel[: -len("x")])
        for adapter, root_s, rel in _relative(os.path.join(directory, "x"), roots)
    ]

    def classify_entry(path: str, name: str) -> SourceSpec | None:
        for adapter, root_s, prefix in under:
            mode = _mode_for(adapter, prefix + name)
            if mode is not None:
                return SourceSpec(path=path, adapter=adapter, mode=mode, root=root_s)
        if extra and path in extra:
            return SourceSpec(path, extra[path], SQLITE, os.path.dirname(path))
        return None

    return classify_entry


def walk_sources(
    root: Path, roots: Mapping[str, Path], extra: Mapping[str, str] | None = None
) -> Iterator[tuple[SourceSpec, os.stat_result]]:
    """Every source under ``root`` with its stat, without following symlinks. The files
    of a directory come before its subdirectories' (an OpenCode database before the JSON
    tree beside it)."""
    start = str(root)
    if not _descends(start, os.path.basename(start), roots):
        return
    stack = [start]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        subdirs: list[str] = []
        classify_entry = _classifier(d, roots, extra)
        with it:
            for entry in it:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if _descends(entry.path, entry.name, roots):
                            subdirs.append(entry.path)
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    spec = classify_entry(entry.path, entry.name)
                    if spec is None:
                        continue
                    yield spec, entry.stat(follow_symlinks=False)
                except OSError:
                    continue
        stack.extend(sorted(subdirs, reverse=True))


def walk_extra(extra: Mapping[str, str]) -> Iterator[tuple[SourceSpec, os.stat_result]]:
    """The extra source files ($OPENCODE_DB) that exist, with their stat."""
    for path in extra:
        try:
            st = os.stat(path)
        except OSError:
            continue
        spec = classify(path, {}, extra)
        if spec is not None and os.path.isfile(path):
            yield spec, st


def count_directories(root: Path) -> int:
    """How many directories an inotify watch of ``root`` needs (one per directory)."""
    n = 0
    stack = [str(root)]
    while stack:
        d = stack.pop()
        n += 1
        try:
            with os.scandir(d) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return n


def project_of_memory(spec: SourceSpec) -> str | None:
    """The project a memory file belongs to: Claude's encoded project dir name, Gemini's
    project directory (a slug or the root's hash)."""
    rel = spec.path[len(spec.root) + 1 :]
    if spec.adapter == "claude-code":
        return rel.split("/", 1)[0]
    if spec.adapter == "gemini" and rel.startswith("tmp/"):
        return rel.split("/", 2)[1]
    return None
