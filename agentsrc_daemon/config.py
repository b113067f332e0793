"""Where things are: the agents' roots, the data dir, the socket, and the knobs.

Precedence, highest first: command-line flags, environment, the TOML config file,
defaults derived from $HOME / $XDG_*. The config file is optional; its default place is
$XDG_CONFIG_HOME/agentsrc/config.toml (AGENTSRC_CONFIG or --config override it).

Example config file::

    [roots]
    codex = "~/.codex"
    claude = "~/.claude/projects"
    muse = "~/agents"
    gemini = "~/.gemini"
    copilot = "~/.copilot"
    opencode = "~/.local/share/opencode"
    qwen = "~/.qwen"
    amp = "~/.local/share/amp"
    pi = "~/.pi/agent"
    cursor = "~/.cursor"
    cline = "~/.cline/data"
    continue = "~/.continue"
    # The editors' user dirs whose extensions' task folders are read (Cline, Roo Code,
    # Kilo Code): a list, or one path; $AGENTSRC_EDITORS_ROOT and --editors-root take
    # paths separated by ':'.
    editors = ["~/.config/Code/User", "~/.config/VSCodium/User"]
    projects = ["~/code", "~/work"]  # folders of projects (Aider, Crush keep files there)

    [daemon]
    data_dir = "~/.local/share/agentsrc"
    socket = "/run/user/1000/agentsrc/agentsrc.sock"
    reconcile_interval = 30
    max_line_bytes = 67108864

    [scan]
    enabled = true
    store_text = true
    plugins = []          # empty: detect-secrets' defaults
    user_patterns = { internal_token = "itk_[A-Za-z0-9]{32}" }
    exclude_paths = ["**/fixtures/**"]
    exclude_sessions = []
    sensitive_paths = []  # empty: the built-in list

    [sink.clickhouse]     # optional: stream the record to a team's ClickHouse (docs/team.md)
    url = "https://clickhouse.example.com:8443"
    database = "agentsrc"
    user = "agentsrc"
    password_file = "~/.config/agentsrc/clickhouse.password"  # or $AGENTSRC_CLICKHOUSE_PASSWORD
    level = "metadata"    # or "text": adds the stored (redacted) prompts and answers
    host_label = "ana-laptop"  # default: this machine's host name
    user_label = "ana"         # default: the login name

Long on purpose (over 600 lines): every setting in one place, the one module that reads
the environment (issue 25): the roots' registry, the tuning knobs, the file's sections
and their checks.
"""

from __future__ import annotations

import operator
import os
import re
import socket
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    from .pricing.overrides import Overrides

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
SOCKET_NAME = "agentsrc.sock"

@dataclass(frozen=True, slots=True)
class RootSpec:
    """One agent's root: where its transcripts live by default, and how a user names
    another place. ``key`` names it everywhere: ``[roots] <key>`` in the config file,
    ``$AGENTSRC_<KEY>_ROOT``, ``--<key>-root`` and ``Config.<key>_root``. Precedence:
    the flag, the variable, the file, the default."""

    agent: str  # the adapter's name
    key: str
    # The default from the environment and the home (the agent's own variables first).
    default: Callable[[Mapping[str, str], Path], Path]
    # The subdirectories that hold its sources, for agents whose home also holds large
    # trees we never read (Gemini's history/ shadow repositories, Copilot's pkg/,
    # OpenCode's snapshot/ git stores and bin/): the root's own entries are watched,
    # and these recursively. None: the whole root, recursively.
    subdirs: tuple[str, ...] | None = None
    # With subdirs, whether the root's own entries are watched too (False: nothing
    # directly in the root is a source, only the subdirectories are watched).
    watch_entries: bool = True

    @property
    def field(self) -> str:
        return f"{self.key}_root"

    @property
    def env_var(self) -> str:
        return f"AGENTSRC_{self.key.upper()}_ROOT"

    @property
    def flag(self) -> str:
        return f"--{self.key}-root"


def _xdg_data(env: Mapping[str, str], home: Path) -> Path:
    return Path(env.get("XDG_DATA_HOME") or home / ".local" / "share").absolute()


def _codex_default(env: Mapping[str, str], home: Path) -> Path:
    return _expand(env["CODEX_HOME"], home) if env.get("CODEX_HOME") else home / ".codex"


def _claude_default(env: Mapping[str, str], home: Path) -> Path:
    if env.get("CLAUDE_CONFIG_DIR"):
        return _expand(env["CLAUDE_CONFIG_DIR"], home) / "projects"
    return home / ".claude" / "projects"


def _muse_default(env: Mapping[str, str], home: Path) -> Path:
    return _expand(env["MUSE_AGENTS_DIR"], home) if env.get("MUSE_AGENTS_DIR") else home / "agents"


def _gemini_default(env: Mapping[str, str], home: Path) -> Path:
    # Gemini CLI: $GEMINI_CLI_HOME replaces the home it puts .gemini/ in.
    base = _expand(env["GEMINI_CLI_HOME"], home) if env.get("GEMINI_CLI_HOME") else home
    return base / ".gemini"


def _copilot_default(env: Mapping[str, str], home: Path) -> Path:
    # Copilot CLI: $COPILOT_HOME is the directory itself; versions up to 0.0.421 used
    # $XDG_CONFIG_HOME/.copilot, taken when it exists.
    if env.get("COPILOT_HOME"):
        return _expand(env["COPILOT_HOME"], home)
    if env.get("XDG_CONFIG_HOME"):
        xdg_copilot = _expand(env["XDG_CONFIG_HOME"], home) / ".copilot"
        if xdg_copilot.is_dir():
            return xdg_copilot
    return home / ".copilot"


def _opencode_default(env: Mapping[str, str], home: Path) -> Path:
    return _xdg_data(env, home) / "opencode"  # OpenCode's data dir


def _qwen_default(env: Mapping[str, str], home: Path) -> Path:
    # Qwen Code: $QWEN_RUNTIME_DIR moves its runtime output (projects/, tmp/) out of ~/.qwen.
    return _expand(env["QWEN_RUNTIME_DIR"], home) if env.get("QWEN_RUNTIME_DIR") else home / ".qwen"


def _amp_default(env: Mapping[str, str], home: Path) -> Path:
    return _xdg_data(env, home) / "amp"  # Amp's data dir (threads/ under it)


def _pi_default(env: Mapping[str, str], home: Path) -> Path:
    # Pi: $PI_CODING_AGENT_DIR is the agent dir itself (sessions/ under it).
    if env.get("PI_CODING_AGENT_DIR"):
        return _expand(env["PI_CODING_AGENT_DIR"], home)
    return home / ".pi" / "agent"


def _cursor_default(env: Mapping[str, str], home: Path) -> Path:
    return home / ".cursor"  # Cursor has no variable that moves it


def _cline_default(env: Mapping[str, str], home: Path) -> Path:
    # The Cline CLI's (and, since its SDK, the extension's) data dir, as Cline resolves
    # it: $CLINE_DATA_DIR, else $CLINE_DIR/data, else ~/.cline/data.
    if env.get("CLINE_DATA_DIR", "").strip():
        return _expand(env["CLINE_DATA_DIR"].strip(), home)
    if env.get("CLINE_DIR", "").strip():
        return _expand(env["CLINE_DIR"].strip(), home) / "data"
    return home / ".cline" / "data"


def _continue_default(env: Mapping[str, str], home: Path) -> Path:
    if env.get("CONTINUE_GLOBAL_DIR"):
        return _expand(env["CONTINUE_GLOBAL_DIR"], home)
    return home / ".continue"


# Every agent's root, in the order status and doctor list them. A new agent adds its
# entry here and its field to Config (and its --<key>-root option to cli/daemon.py).
ROOTS: tuple[RootSpec, ...] = (
    RootSpec("codex", "codex", _codex_default),
    RootSpec("claude-code", "claude", _claude_default),  # the projects/ directory
    RootSpec("muse", "muse", _muse_default),
    RootSpec("gemini", "gemini", _gemini_default, ("tmp",)),
    RootSpec("copilot", "copilot", _copilot_default,
             ("session-state", "history-session-state", "instructions")),
    RootSpec("opencode", "opencode", _opencode_default, ("storage", "project")),
    # Qwen Code's home also holds its credentials, settings and history/ shadow repos;
    # Amp's data dir its secrets.json; Pi's agent dir its auth.json: never walked.
    RootSpec("qwen", "qwen", _qwen_default, ("projects", "tmp")),
    RootSpec("amp", "amp", _amp_default, ("threads",)),
    RootSpec("pi", "pi", _pi_default, ("sessions",)),
    # Cursor's agent transcripts (projects/<cwd>/agent-transcripts/) and the CLI's chat
    # databases (chats/<md5 of cwd>/<agent id>/store.db).
    RootSpec("cursor", "cursor", _cursor_default, ("projects", "chats"), watch_entries=False),
    # Cline's data dir: sessions/ (the CLI, and the extension since its SDK) and tasks/
    # (the CLI before it). The extension's task folders are editor roots (below).
    RootSpec("cline", "cline", _cline_default, ("sessions", "tasks"), watch_entries=False),
    RootSpec("continue", "continue", _continue_default, ("sessions",), watch_entries=False),
)

# Editor extensions that keep their tasks in the editor's storage, each under
# <editor user dir>/globalStorage/<extension id>/tasks/<task id>/: (agent, extension id).
# Every editor user dir (the ``editors`` setting) gives each of them a root named
# ``<agent>@<editor>`` whose tasks/ folder alone is watched: an editor's globalStorage
# holds every extension's files (Cline's own checkpoints are git repositories).
EDITOR_EXTENSIONS: tuple[tuple[str, str], ...] = (
    ("cline", "saoudrizwan.claude-dev"),
    ("roo-code", "rooveterinaryinc.roo-cline"),
    ("kilo-code", "kilocode.kilo-code"),
)
# VS Code and the editors built on it, by the name of their folder.
EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
EDITORS_KEY = "editors"  # [roots] editors, $AGENTSRC_EDITORS_ROOT, --editors-root
EDITORS_ENV = "AGENTSRC_EDITORS_ROOT"
EDITORS_FIELD = "editors_root"  # its load_config keyword (--editors-root)
EDITOR_TASKS = "tasks"
ROOT_NAME_SEP = "@"  # an agent's further roots are named <agent>@<where>


# Every root's field of a Config, as one tuple (Config.roots' key; one C call).
_root_fields: Callable[[Any], tuple[Any, ...]] = operator.attrgetter(*(spec.field for spec in ROOTS))


def root_agent(name: str) -> str:
    """The agent (adapter) a root of ``Config.roots()`` is for: its name before "@"."""
    return name.split(ROOT_NAME_SEP, 1)[0]


def _editors_default(env: Mapping[str, str], home: Path) -> tuple[Path, ...]:
    """The user dirs of the editors in EDITORS, where the editors put them: on macOS
    ~/Library/Application Support/<editor>/User; elsewhere $XDG_CONFIG_HOME/<editor>/User
    (Electron's appData) and ~/.config/<editor>/User (where they are when the variable
    was set later, or only in the shell that runs agentsrc)."""
    if sys.platform == "darwin":
        bases = [home / "Library" / "Application Support"]
    else:
        bases = [home / ".config"]
        xdg = env.get("XDG_CONFIG_HOME", "").strip()
        if xdg and _expand(xdg, home) != bases[0]:
            bases.insert(0, _expand(xdg, home))
    return tuple(base / editor / "User" for base in bases for editor in EDITORS)


def _editor_label(user_dir: Path) -> str:
    """What an editor user dir is called in a root's name: its editor's folder name
    (``Code`` for ~/.config/Code/User), else its own name."""
    return user_dir.parent.name if user_dir.name == "User" and user_dir.parent.name else user_dir.name


def editor_roots(user_dirs: tuple[Path, ...]) -> dict[str, Path]:
    """Root name -> an extension's storage dir, for every editor user dir and extension
    of EDITOR_EXTENSIONS. Names are unique: a label met twice (two editors' dirs named
    alike) gets a number."""
    roots: dict[str, Path] = {}
    labels: dict[str, int] = {}
    for user_dir in user_dirs:
        label = _editor_label(user_dir)
        labels[label] = labels.get(label, 0) + 1
        if labels[label] > 1:
            label = f"{label}-{labels[label]}"
        for agent, extension in EDITOR_EXTENSIONS:
            roots[f"{agent}{ROOT_NAME_SEP}{label}"] = user_dir / "globalStorage" / extension
    return roots


def _paths(value: Any, home: Path) -> tuple[Path, ...]:
    """A list of paths from the config file (a list, or one string) or a variable
    (paths separated by ':')."""
    items = value if isinstance(value, list | tuple) else str(value).split(":")
    out: list[Path] = []
    for item in items:
        text = str(item).strip()
        if text and _expand(text, home) not in out:
            out.append(_expand(text, home))
    return tuple(out)


@dataclass(slots=True)
class ScanConfig:
    enabled: bool = True
    store_text: bool = True  # False: no prompt or assistant text is stored at all
    plugins: list[str] = field(default_factory=list)  # detect-secrets plugin class names
    user_patterns: dict[str, str] = field(default_factory=dict)  # name -> regex
    exclude_paths: list[str] = field(default_factory=list)  # globs
    exclude_sessions: list[str] = field(default_factory=list)  # globs over session ids
    sensitive_paths: list[str] = field(default_factory=list)  # globs; empty: built-in list


@dataclass(frozen=True, slots=True)
class WatchPoint:
    """One directory the watcher watches for an agent: recursively, or only its own
    entries (a root whose sources sit in a few subdirectories is watched that way, so
    the agent's caches and git stores under it cost no inotify watches)."""

    agent: str
    path: Path
    recursive: bool = True
SINK_LEVELS = ("metadata", "text")
PASSWORD_ENV = "AGENTSRC_CLICKHOUSE_PASSWORD"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclass(slots=True)
class SinkConfig:
    """``[sink.clickhouse]``: where the record streams to, and what of it. The password
    is never in the configuration itself: a file, or an environment variable."""

    url: str
    database: str = "agentsrc"
    user: str = "default"
    password_file: Path | None = None
    password_env: str = PASSWORD_ENV
    level: str = "metadata"  # metadata | text
    host_label: str = ""
    user_label: str = ""
    ca_file: Path | None = None  # TLS: a private CA (else the system's)
    batch_rows: int = 10_000
    batch_bytes: int = 8 << 20
    flush_interval: float = 1.0  # seconds: at most one insert per table this often when live
    max_backoff: float = 60.0  # seconds: the longest wait between tries while the server is down
    timeout: float = 30.0
    auto_init: bool = True  # apply the schema (`agentsrc sink init`) when the server lacks it

    def password(self, env: Mapping[str, str] | None = None) -> str:
        """Read when connecting, not kept in the configuration."""
        if self.password_file is not None:
            try:
                return self.password_file.read_text().rstrip("\r\n")
            except OSError as exc:
                raise ConfigError(f"cannot read the sink's password file: {exc}") from None
        env = environment() if env is None else env
        return env.get(self.password_env, "")

    def target(self) -> str:
        """What identifies where rows go and what they carry: changing any of it sends
        everything again (to the new place, or with the new labels or level)."""
        return "|".join((self.url.rstrip("/"), self.database, self.host_label, self.user_label,
                         self.level))


@dataclass(frozen=True, slots=True)
class Tuning:
    """Knobs for measuring and for unusual machines, read once from the environment by
    ``load_config`` (docs/operations.md, "Tuning"), so no other module reads it. None:
    the default of the module that uses the knob (named beside each)."""

    # AGENTSRC_WORKERS: backfill worker processes, 0 for none (ingest/workers.py).
    workers: int | None = None
    # AGENTSRC_WORKER_MIN_BACKLOG: bytes of backlog that start the workers (same).
    worker_min_backlog: int | None = None
    # AGENTSRC_SLOW_STEP_MS: loop steps longer than this are logged (ingest/steps.py).
    slow_step_ms: float | None = None
    # AGENTSRC_SEARCH_DEFER_MIN_BACKLOG: a first catch-up this large builds the search
    # index after it (daemon.py).
    search_defer_min_backlog: int | None = None
    # AGENTSRC_SEARCH_CHUNK: events per chunk of that build (store/writer.py).
    search_chunk_ids: int | None = None
    # AGENTSRC_SEARCH_INDEX=0: no search index at all, to measure what it costs.
    search_index: bool = True
    # AGENTSRC_SEARCH_MERGE_PAGES: pages per step of the index's merging (store).
    search_merge_pages: int | None = None
    # AGENTSRC_MIGRATE_CHUNK: events per chunk of a chunked migration (store).
    migrate_chunk_ids: int | None = None
    # AGENTSRC_REPRICE_CHUNK: usage events per step of a re-price (ingest/committer.py).
    reprice_chunk: int | None = None
    # AGENTSRC_CHECKPOINT_THREAD=0: WAL checkpoints on the ingest thread only.
    checkpoint_thread: bool = True
    # AGENTSRC_GC_FREEZE=0: the heap is not frozen once live (system/memory.py).
    gc_freeze: bool = True
    # AGENTSRC_PROFILE_START=FILE: cProfile from start until live, written to FILE.
    profile_start: Path | None = None
    # AGENTSRC_PROJECT_SCAN_INTERVAL: seconds between project scans before their pacing
    # (ingest/project_scan.py).
    project_scan_interval: float | None = None
    # AGENTSRC_STATE_QUIET_S: seconds a file appended live stays quiet before its
    # adapter state, stored as JSON meanwhile, is packed (store/cursors.py).
    state_quiet_s: float | None = None


def _count(env: Mapping[str, str], name: str) -> int | None:
    """A non-negative integer knob; anything else is unset (its default)."""
    value = env.get(name, "").strip()
    return int(value) if value.isdigit() else None


def _switch(env: Mapping[str, str], name: str) -> bool:
    """A knob that is on unless set to 0."""
    return env.get(name, "1").strip() != "0"


def tuning_from(env: Mapping[str, str]) -> Tuning:
    slow = env.get("AGENTSRC_SLOW_STEP_MS", "").strip()
    try:
        slow_ms = float(slow) if slow else None
    except ValueError:
        slow_ms = None
    profile = env.get("AGENTSRC_PROFILE_START", "").strip()
    try:
        project_scan = float(env.get("AGENTSRC_PROJECT_SCAN_INTERVAL", "").strip() or "nan")
    except ValueError:
        project_scan = float("nan")
    try:
        state_quiet = float(env.get("AGENTSRC_STATE_QUIET_S", "").strip() or "nan")
    except ValueError:
        state_quiet = float("nan")
    return Tuning(
        workers=_count(env, "AGENTSRC_WORKERS"),
        worker_min_backlog=_count(env, "AGENTSRC_WORKER_MIN_BACKLOG"),
        slow_step_ms=slow_ms,
        search_defer_min_backlog=_count(env, "AGENTSRC_SEARCH_DEFER_MIN_BACKLOG"),
        search_chunk_ids=_count(env, "AGENTSRC_SEARCH_CHUNK") or None,
        search_index=_switch(env, "AGENTSRC_SEARCH_INDEX"),
        search_merge_pages=_count(env, "AGENTSRC_SEARCH_MERGE_PAGES") or None,
        migrate_chunk_ids=_count(env, "AGENTSRC_MIGRATE_CHUNK") or None,
        reprice_chunk=_count(env, "AGENTSRC_REPRICE_CHUNK") or None,
        checkpoint_thread=_switch(env, "AGENTSRC_CHECKPOINT_THREAD"),
        gc_freeze=_switch(env, "AGENTSRC_GC_FREEZE"),
        profile_start=Path(profile) if profile else None,
        project_scan_interval=project_scan if project_scan > 0 else None,
        state_quiet_s=state_quiet if state_quiet >= 0 else None,
    )


def environment() -> Mapping[str, str]:
    """The process's environment. This module is the one place that reads it; the rest
    of the package is handed what it needs (a setting, or this mapping where a host
    convention is looked up: systemd's NOTIFY_SOCKET, XDG directories), so where a
    setting comes from is always found here."""
    return os.environ


def cli_fast_path(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``status`` and ``sessions`` take the CLI's fast path (cli/fast.py);
    AGENTSRC_CLI_FAST=0 sends them through typer, to compare the two."""
    return (environment() if env is None else env).get("AGENTSRC_CLI_FAST") != "0"


def _editor_dirs(
    flag: str | Path | None, env: Mapping[str, str], key: Any, home: Path
) -> tuple[Path, ...]:
    """The editors' user dirs: the flag, else $AGENTSRC_EDITORS_ROOT, else [roots]
    editors, else every editor's default place."""
    if flag is not None:
        return _paths(flag, home)
    if env.get(EDITORS_ENV, "").strip():
        return _paths(env[EDITORS_ENV], home)
    if key:
        return _paths(key, home)
    return _editors_default(env, home)


@dataclass(slots=True)
class Config:
    home: Path
    codex_root: Path
    claude_root: Path  # the projects/ directory
    muse_root: Path
    gemini_root: Path
    copilot_root: Path
    opencode_root: Path  # OpenCode's data dir
    qwen_root: Path  # Qwen Code's home
    amp_root: Path  # Amp's data dir
    pi_root: Path  # Pi's agent dir
    data_dir: Path
    socket_path: Path
    cursor_root: Path = Path("~/.cursor")
    cline_root: Path = Path("~/.cline/data")
    continue_root: Path = Path("~/.continue")
    # The editors' user dirs (EDITORS_KEY): each extension of EDITOR_EXTENSIONS has a
    # root in each.
    editor_dirs: tuple[Path, ...] = ()
    # $OPENCODE_DB when it names a file (absolute, or relative to the OpenCode root);
    # None: the root's own opencode*.db files.
    opencode_db: Path | None = None
    # Folders of projects, searched for the files agents keep in a project (Aider,
    # Crush: ingest/project_scan.py): --projects-root > $AGENTSRC_PROJECTS > [roots]
    # projects; none by default (the project roots of known sessions are searched too).
    project_folders: list[Path] = field(default_factory=list)
    config_file: Path | None = None
    reconcile_interval: float = 30.0
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    batch_max_events: int = 2000
    batch_max_delay: float = 0.2  # seconds: commits are at most this far behind
    scan: ScanConfig = field(default_factory=ScanConfig)
    sink: SinkConfig | None = None
    tuning: Tuning = field(default_factory=Tuning)
    # [prices]: a model's own rates and aliases (pricing/overrides.py); None: none.
    # Parsed only when the file has the table: the CLI's fast path imports nothing more.
    prices: Overrides | None = None
    # roots() as last made, with the fields it was made of (not a setting).
    _roots: tuple[Any, dict[str, Path]] | None = field(default=None, repr=False, compare=False)

    @property
    def db_path(self) -> Path:
        return self.data_dir / "agentsrc.db"

    @property
    def lock_path(self) -> Path:
        return self.data_dir / "agentsrc.lock"

    def roots(self) -> dict[str, Path]:
        """Root name -> root directory: each agent's root under its name, in ROOTS'
        order, then the editor extensions' roots (``<agent>@<editor>``: ``root_agent``
        gives the agent of a name). Kept while the fields it is made of stay: every
        changed path is classified against it (0.75 ms to make, with the editors')."""
        key = (_root_fields(self), self.editor_dirs)  # asked for every appended path
        if self._roots is None or self._roots[0] != key:
            roots = {spec.agent: getattr(self, spec.field) for spec in ROOTS}
            roots.update(editor_roots(self.editor_dirs))
            self._roots = (key, roots)
        return dict(self._roots[1])

    # What a reload cannot change: the daemon says a restart is needed for them.
    RESTART_FIELDS = ("data_dir", "socket_path", *(spec.field for spec in ROOTS), "opencode_db",
                      "editor_dirs", "sink")

    def reload_from(self, new: Config) -> list[str]:
        """SIGHUP: take what a reload applies from ``new`` (the reconcile interval, the
        longest line, the whole [scan] and [prices] tables); returns the settings it changes that
        need a restart instead."""
        self.reconcile_interval = new.reconcile_interval
        self.max_line_bytes = new.max_line_bytes
        self.scan = new.scan
        self.prices = new.prices
        self.project_folders = new.project_folders  # the next project scan uses them
        return self.restart_needed_for(new)

    def restart_needed_for(self, new: Config) -> list[str]:
        """The settings ``new`` changes that a reload (SIGHUP) does not apply."""
        return [n for n in self.RESTART_FIELDS if getattr(new, n) != getattr(self, n)]

    def extra_sources(self) -> dict[str, str]:
        """Source files named outside the roots' layouts: path -> adapter
        ($OPENCODE_DB)."""
        return {str(self.opencode_db): "opencode"} if self.opencode_db is not None else {}

    def watch_points(self) -> list[WatchPoint]:
        """What the watcher watches: each root, recursively, except where an agent keeps
        its sources in a few subdirectories of a busy home (docs/formats.md): there the
        root's own entries plus those subdirectories. A point that does not exist yet is
        watched once it appears."""
        points: list[WatchPoint] = []
        for spec in ROOTS:
            agent, root, subdirs = spec.agent, getattr(self, spec.field), spec.subdirs
            if subdirs is None:
                points.append(WatchPoint(agent, root))
                continue
            if spec.watch_entries:
                points.append(WatchPoint(agent, root, recursive=False))
            points += [WatchPoint(agent, root / sub) for sub in subdirs]
        # An extension's tasks/ folder alone (one watch, plus one per task folder).
        points += [
            WatchPoint(name, root / EDITOR_TASKS) for name, root in editor_roots(self.editor_dirs).items()
        ]
        if self.opencode_db is not None:
            parent = self.opencode_db.parent
            if not any(p.path == parent for p in points):
                points.append(WatchPoint("opencode", parent, recursive=False))
        return points


def _expand(value: str | os.PathLike[str], home: Path) -> Path:
    s = os.fspath(value)
    if s == "~" or s.startswith("~/"):
        s = str(home) + s[1:]
    return Path(os.path.expandvars(s)).absolute()


def default_config_file(env: Mapping[str, str], home: Path) -> Path:
    if env.get("AGENTSRC_CONFIG"):
        return _expand(env["AGENTSRC_CONFIG"], home)
    base = env.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(base) / "agentsrc" / "config.toml"


def _read_toml(path: Path, explicit: bool) -> dict[str, Any]:
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file not found: {path}") from None
        return {}
    # Imported only when there is a file: every CLI query loads this module (the fast
    # path's budget, docs/performance.md).
    import tomllib

    try:
        with fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def _scan_config(table: Mapping[str, Any], env: Mapping[str, str]) -> ScanConfig:
    sc = ScanConfig()
    if "enabled" in table:
        sc.enabled = bool(table["enabled"])
    if "store_text" in table:
        sc.store_text = bool(table["store_text"])
    sc.plugins = [str(p) for p in table.get("plugins", [])]
    sc.user_patterns = {str(k): str(v) for k, v in dict(table.get("user_patterns", {})).items()}
    sc.exclude_paths = [str(p) for p in table.get("exclude_paths", [])]
    sc.exclude_sessions = [str(p) for p in table.get("exclude_sessions", [])]
    sc.sensitive_paths = [str(p) for p in table.get("sensitive_paths", [])]
    if "AGENTSRC_SCAN" in env:
        sc.enabled = env["AGENTSRC_SCAN"].strip().lower() not in ("0", "off", "false", "no")
    if "AGENTSRC_STORE_TEXT" in env:
        sc.store_text = env["AGENTSRC_STORE_TEXT"].strip().lower() not in ("0", "off", "false")
    if env.get("AGENTSRC_SCAN_PLUGINS"):
        sc.plugins = [p.strip() for p in env["AGENTSRC_SCAN_PLUGINS"].split(",") if p.strip()]
    if env.get("AGENTSRC_SCAN_EXCLUDE_PATHS"):
        sc.exclude_paths = [p for p in env["AGENTSRC_SCAN_EXCLUDE_PATHS"].split(":") if p]
    return sc


PROJECTS_ENV = "AGENTSRC_PROJECTS"
PROJECTS_FLAG = "--projects-root"


def _project_folders(
    flag: Any, env: Mapping[str, str], file_value: Any, home: Path
) -> list[Path]:
    """The named folders of projects: the flag's (repeatable; each may hold several
    paths separated by ``:``), else $AGENTSRC_PROJECTS (``:``-separated), else
    ``[roots] projects`` (a list, or one string); the first that is given wins."""
    if flag:
        given: list[str] = [str(v) for v in ([flag] if isinstance(flag, str | Path) else flag)]
    elif env.get(PROJECTS_ENV):
        given = [env[PROJECTS_ENV]]
    elif file_value:
        if isinstance(file_value, str):
            given = [file_value]
        elif isinstance(file_value, list) and all(isinstance(v, str) for v in file_value):
            given = list(file_value)
        else:
            raise ConfigError("[roots] projects must be a list of folders")
    else:
        return []
    out: list[Path] = []
    for value in given:
        for part in value.split(os.pathsep):
            if part.strip():
                path = _expand(part.strip(), home)
                if path not in out:
                    out.append(path)
    return out


def _opencode_db(env: Mapping[str, str], root: Path, home: Path) -> Path | None:
    """OpenCode's $OPENCODE_DB: an absolute path as given, a relative one in the data
    dir; ``:memory:`` keeps no file. None when unset (the root's opencode*.db files)."""
    value = (env.get("OPENCODE_DB") or "").strip()
    if not value or value == ":memory:":
        return None
    if value == "~" or value.startswith("~/"):
        return _expand(value, home)
    path = Path(value)
    return path if path.is_absolute() else (root / path).absolute()
def _login_name() -> str:
    import getpass  # only with a sink configured

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def _sink_config(doc: Mapping[str, Any], env: Mapping[str, str], home: Path) -> SinkConfig | None:
    table = dict(dict(doc.get("sink", {})).get("clickhouse", {}))
    if not table or table.get("enabled", True) is False:
        return None
    if env.get("AGENTSRC_SINK", "").strip().lower() in ("0", "off", "false", "no"):
        return None
    if "password" in table:
        raise ConfigError(
            "[sink.clickhouse] password: the password is not kept in the config file; set "
            f"password_file = \"<file>\" or the environment variable {PASSWORD_ENV}"
        )
    url = str(table.get("url", "")).strip()
    if not url.startswith(("http://", "https://")):
        raise ConfigError("[sink.clickhouse] url must be an http:// or https:// URL")
    if "@" in url.split("/", 3)[2]:
        raise ConfigError("[sink.clickhouse] url must not hold credentials: use user and password_file")
    sc = SinkConfig(url=url)
    sc.database = str(table.get("database", sc.database))
    if not _IDENTIFIER.match(sc.database):
        raise ConfigError(f"[sink.clickhouse] database {sc.database!r} is not a plain identifier")
    sc.user = str(table.get("user", sc.user))
    if table.get("password_file"):
        sc.password_file = _expand(str(table["password_file"]), home)
    sc.password_env = str(table.get("password_env", sc.password_env))
    sc.level = str(table.get("level", sc.level))
    if sc.level not in SINK_LEVELS:
        raise ConfigError(f"[sink.clickhouse] level must be one of {', '.join(SINK_LEVELS)}")
    sc.host_label = str(table.get("host_label") or socket.gethostname())
    sc.user_label = str(table.get("user_label") or _login_name())
    if table.get("ca_file"):
        sc.ca_file = _expand(str(table["ca_file"]), home)
    sc.auto_init = bool(table.get("auto_init", sc.auto_init))
    try:
        sc.batch_rows = int(table.get("batch_rows", sc.batch_rows))
        sc.batch_bytes = int(table.get("batch_bytes", sc.batch_bytes))
        sc.flush_interval = float(table.get("flush_interval", sc.flush_interval))
        sc.max_backoff = float(table.get("max_backoff", sc.max_backoff))
        sc.timeout = float(table.get("timeout", sc.timeout))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad number in [sink.clickhouse]: {exc}") from None
    if sc.batch_rows < 1 or sc.batch_bytes < 1024:
        raise ConfigError("[sink.clickhouse] batch_rows must be >= 1 and batch_bytes >= 1024")
    if sc.flush_interval < 0 or sc.max_backoff <= 0 or sc.timeout <= 0:
        raise ConfigError("[sink.clickhouse] flush_interval, max_backoff and timeout must be positive")
    return sc


def runtime_dir(
    env: Mapping[str, str], uid: int | None = None, base: Path = Path("/run/user")
) -> Path | None:
    """The user's runtime directory: $XDG_RUNTIME_DIR, else the one logind makes
    (pam_systemd: /run/user/<uid>, 0700, the user's) when it exists. Programs started by
    other programs (MCP clients, launchers, cron) get a sparse environment without
    XDG_RUNTIME_DIR: they must still find the socket of a daemon that had it."""
    if env.get("XDG_RUNTIME_DIR"):
        return Path(env["XDG_RUNTIME_DIR"])
    uid = os.getuid() if uid is None else uid
    candidate = base / str(uid)
    try:
        st = candidate.stat()
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o077:
        return None
    return candidate


def load_config(
    *,
    env: Mapping[str, str] | None = None,
    config_file: str | Path | None = None,
    data_dir: str | Path | None = None,
    socket_path: str | Path | None = None,
    projects: Any = None,
    **root_flags: str | Path | None,
) -> Config:
    """Resolve the configuration (long on purpose: each setting's flag, environment,
    file and default side by side). Keyword arguments are command-line flags (None: unset);
    ``<key>_root`` for an agent's root (ROOTS), ``editors_root`` for the editors' user
    dirs (a path, or paths separated by ':'); ``projects`` for --projects-root (a list
    of the values given)."""
    unknown = set(root_flags) - {spec.field for spec in ROOTS} - {EDITORS_FIELD}
    if unknown:
        raise TypeError(f"load_config() got unexpected keyword arguments {sorted(unknown)}")
    env = environment() if env is None else env
    home = Path(env.get("HOME") or Path.home()).absolute()
    explicit_file = config_file is not None or bool(env.get("AGENTSRC_CONFIG"))
    cfg_path = _expand(config_file, home) if config_file else default_config_file(env, home)
    doc = _read_toml(cfg_path, explicit_file)
    roots = dict(doc.get("roots", {}))
    daemon = dict(doc.get("daemon", {}))

    def pick(flag: str | Path | None, env_name: str | None, file_value: Any, default: Path) -> Path:
        if flag is not None:
            return _expand(flag, home)
        if env_name and env.get(env_name):
            return _expand(env[env_name], home)
        if file_value:
            return _expand(str(file_value), home)
        return default

    root_paths = {
        spec.field: pick(root_flags.get(spec.field), spec.env_var, roots.get(spec.key),
                         spec.default(env, home))
        for spec in ROOTS
    }
    editor_dirs = _editor_dirs(root_flags.get(EDITORS_FIELD), env, roots.get(EDITORS_KEY), home)
    data_default = _xdg_data(env, home) / "agentsrc"
    data = pick(data_dir, "AGENTSRC_DATA_DIR", daemon.get("data_dir"), data_default)
    runtime = runtime_dir(env)
    socket_default = runtime / "agentsrc" / SOCKET_NAME if runtime else data / SOCKET_NAME
    sock = pick(socket_path, "AGENTSRC_SOCKET", daemon.get("socket"), socket_default)

    cfg = Config(
        home=home,
        **root_paths,  # type: ignore[arg-type]
        editor_dirs=editor_dirs,
        opencode_db=_opencode_db(env, root_paths["opencode_root"], home),
        project_folders=_project_folders(projects, env, roots.get("projects"), home),
        data_dir=data,
        socket_path=sock,
        config_file=cfg_path if cfg_path.exists() else None,
        scan=_scan_config(dict(doc.get("scan", {})), env),
        sink=_sink_config(doc, env, home),
        tuning=tuning_from(env),
    )
    if "prices" in doc:
        from .pricing.overrides import parse as parse_prices

        cfg.prices = parse_prices(doc["prices"])
    try:
        if "reconcile_interval" in daemon:
            cfg.reconcile_interval = float(daemon["reconcile_interval"])
        if env.get("AGENTSRC_RECONCILE_INTERVAL"):
            cfg.reconcile_interval = float(env["AGENTSRC_RECONCILE_INTERVAL"])
        if "max_line_bytes" in daemon:
            cfg.max_line_bytes = int(daemon["max_line_bytes"])
        if env.get("AGENTSRC_MAX_LINE_BYTES"):
            cfg.max_line_bytes = int(env["AGENTSRC_MAX_LINE_BYTES"])
    except ValueError as exc:
        raise ConfigError(f"bad number in configuration: {exc}") from None
    if cfg.reconcile_interval <= 0:
        raise ConfigError("reconcile_interval must be positive")
    if cfg.max_line_bytes < 1024:
        raise ConfigError("max_line_bytes must be at least 1024")
    if len(os.fsencode(sock)) > 100:
        raise ConfigError(
            f"socket path is {len(os.fsencode(sock))} bytes; Unix sockets allow about 104: "
            "set AGENTSRC_SOCKET or --socket to a shorter path"
        )
    return cfg
