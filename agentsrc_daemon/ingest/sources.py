"""The paths provider: which files under the agents' roots are sources, and of what mode.

A source is one of:
* ``jsonl``: an append-only transcript, tailed line by line from a persisted offset
  (Codex, Claude Code, Muse, Copilot ``events.jsonl``, Gemini ``.jsonl`` chats, Qwen Code
  chats, Pi sessions, Cursor ``.jsonl`` agent transcripts);
* ``document``: a whole-file JSON document re-read when it changes, with the adapter's
  per-file state kept across its versions (Codex legacy ``.json`` rollouts, Claude
  subagent ``.meta.json``, Muse ``sessions.json``, Gemini ``.json`` chats, Copilot
  ``history-session-state``, OpenCode's JSON tree, Qwen Code's first chats, Amp threads,
  the task files of Cline, Roo Code and Kilo Code, Cline's sessions, Continue's
  sessions); a text document (Cursor's ``.txt`` transcripts, ``text_document``) is
  handed to the adapter as text;
* ``sqlite``: an agent's database (OpenCode's, Crush's) read through
  ``ingest/agent_db.py`` from a persisted keyset cursor, a Cursor CLI chat's ``store.db``
  (its ``meta`` table) through ``ingest/cursor_db.py``;
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
``auth.json`` and ``mcp-auth.json``, Gemini's and Qwen Code's ``oauth_creds.json``,
Copilot's ``config.json``, Amp's ``secrets.json``, Pi's ``auth.json``), logs, caches or git
stores. The walk only descends into directories
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
# Qwen Code, relative to ~/.qwen: JSONL chats per project, the Gemini-style documents of
# its first versions, the global memory file.
_QWEN_JSONL = re.compile(r"^projects/[^/]+/chats/[^/]+\.jsonl$")
_QWEN_DOC = re.compile(r"^tmp/[^/]+/chats/session-[^/]+\.json$")
_QWEN_MEMORY = re.compile(r"^QWEN\.md$")
# Amp, relative to its data dir: one document per thread.
_AMP_DOC = re.compile(r"^threads/T-[^/]+\.json$")
# Pi, relative to its agent dir: sessions/--<cwd>--/<timestamp>_<uuid>.jsonl.
_PI_JSONL = re.compile(r"^sessions/[^/]+/[^/]+\.jsonl$")

# Cursor, relative to ~/.cursor: agent transcripts per project (flat, in a folder per
# conversation, sub-agents beside it), the CLI's chat databases.
_CURSOR_UUID = r"[0-9A-Za-z][0-9A-Za-z_-]*"
_CURSOR_JSONL = re.compile(
    rf"^projects/[^/]+/agent-transcripts/(?:{_CURSOR_UUID}\.jsonl"
    rf"|(?P<c>{_CURSOR_UUID})/(?P=c)\.jsonl|{_CURSOR_UUID}/subagents/{_CURSOR_UUID}\.jsonl)$"
)
_CURSOR_TEXT = re.compile(rf"^projects/[^/]+/agent-transcripts/{_CURSOR_UUID}\.txt$")
_CURSOR_DB = re.compile(r"^chats/[0-9a-f]{32}/[^/]+/store\.db$")
# Cline, Roo Code and Kilo Code, relative to a storage root (an extension's globalStorage
# dir, or Cline's data dir): task folders; Cline's sessions (a manifest and messages,
# a sub-agent's messages beside its parent's).
_CLINE_AGENTS = frozenset({"cline", "roo-code", "kilo-code"})
_CLINE_TASK_DOC = re.compile(r"^tasks/[^/]+/(?:ui_messages|api_conversation_history|task_metadata)\.json$")
_CLINE_SESSION_DOC = re.compile(r"^sessions/(?P<s>[^/]+)/(?:(?P=s)\.json|[^/]+\.messages\.json)$")
# Continue, relative to ~/.continue: a document per session and the sessions.json index.
_CONTINUE_DOC = re.compile(r"^sessions/[^/]+\.json$")

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
    "qwen": re.compile(r"^(?:projects|tmp)(?:/[^/]+(?:/chats)?)?$"),
    "amp": re.compile(r"^threads$"),
    "pi": re.compile(r"^sessions(?:/[^/]+)?$"),
    "cursor": re.compile(
        r"^(?:projects(?:/[^/]+(?:/agent-transcripts(?:/[^/]+(?:/subagents)?)?)?)?"
        r"|chats(?:/[^/]+(?:/[^/]+)?)?)$"
    ),
    "cline": re.compile(r"^(?:tasks|sessions)(?:/[^/]+)?$"),
    "roo-code": re.compile(r"^tasks(?:/[^/]+)?$"),
    "kilo-code": re.compile(r"^tasks(?:/[^/]+)?$"),
    "continue": re.compile(r"^sessions$"),
}


@dataclass(frozen=True, slots=True)
class SourceSpec:
    path: str
    adapter: str  # one of events.AGENTS
    mode: str  # jsonl | document | sqlite | memory
    root: str


def root_adapter(name: str) -> str:
    """The adapter a root of ``Config.roots()`` is for: the root's name, or the part
    before "@" of an agent's further roots (``cline@Code``; config.root_agent)."""
    return name.split("@", 1)[0]


def _relative(path: str, roots: Mapping[str, Path]) -> Iterator[tuple[str, str, str]]:
    """(adapter, root, path relative to it) for every root ``path`` is under."""
    for name, root in roots.items():
        root_s = str(root)
        if not path.startswith(root_s + os.sep):
            continue
        rel = path[len(root_s) + 1 :]
        if os.sep != "/":  # pragma: no cover - POSIX only today
            rel = rel.replace(os.sep, "/")
        yield root_adapter(name), root_s, rel


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
    """The mode of a file an agent keeps, from its path relative to the root. Long on
    purpose: one branch per agent, each its layout's few patterns."""
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
    elif adapter == "qwen":
        if _QWEN_JSONL.match(rel):
            return JSONL
        if _QWEN_DOC.match(rel):
            return DOCUMENT
        if _QWEN_MEMORY.match(rel):
            return MEMORY
    elif adapter == "amp" and _AMP_DOC.match(rel):
        return DOCUMENT
    elif adapter == "pi" and _PI_JSONL.match(rel):
        return JSONL
    elif adapter == "cursor":
        if _CURSOR_JSONL.match(rel):
            return JSONL
        if _CURSOR_TEXT.match(rel):
            return DOCUMENT
        if _CURSOR_DB.match(rel):
            return SQLITE
    elif adapter in _CLINE_AGENTS:
        if _CLINE_TASK_DOC.match(rel) or (adapter == "cline" and _CLINE_SESSION_DOC.match(rel)):
            return DOCUMENT
    elif adapter == "continue" and _CONTINUE_DOC.match(rel):
        return DOCUMENT
    return None


def text_document(spec: SourceSpec) -> bool:
    """A document that is text, not JSON (Cursor's ``.txt`` transcripts): ingest hands
    its decoded text to the adapter's ``parse_text``."""
    return spec.mode == DOCUMENT and spec.adapter == "cursor" and spec.path.endswith(".txt")


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
    for name, root in roots.items():
        root_s = str(root)
        if directory == root_s:
            return root_adapter(name), ""
        if directory.startswith(root_s + os.sep) and (best is None or len(root_s) > best[2]):
            best = (root_adapter(name), directory[len(root_s) + 1 :].replace(os.sep, "/"),
                    len(root_s))
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
