"""`agentsrc doctor`: check what the daemon depends on and say how to fix what is wrong.

Each check is a `Check(name, ok, detail, fix)`. A check can be ok with a warning: things
worth knowing that are not faults. Decisions:

- A missing agent root is a warning, not a failure: a machine that has Codex but never ran
  Claude Code has no ~/.claude/projects, and that is normal. If none of the roots exists
  there is nothing to record, which is a failure (most likely a wrong path in the config).
- The service not being installed is a warning (someone may run `agentsrc run` in a
  terminal on purpose); installed but not running is a failure.
- A missing database or socket is a failure: the daemon creates both, so it has not run.
- The integrity check (PRAGMA quick_check) opens the database read-only and runs only when
  the file exists; the permissions check already reports a missing one.

Exit status 0 only when every check is ok (warnings included as ok).

Long on purpose (over 600 lines): one check per thing that can be wrong on a machine,
each a few lines, in the order doctor prints them.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from agentsrc_daemon.config import EDITOR_TASKS, EDITORS_KEY, ROOT_NAME_SEP, ROOTS, Config
from agentsrc_daemon.errors import ServiceError
from agentsrc_daemon.rpc.client import Client
from agentsrc_daemon.store import health
from agentsrc_daemon.store.queries import fidelity
from agentsrc_daemon.system.check import Check
from agentsrc_daemon.system.project_checks import check_project_files, check_project_folders
from agentsrc_daemon.system.service import (
    ServiceStatus,
    ServiceTarget,
    service_status,
)

MAX_USER_WATCHES = Path("/proc/sys/fs/inotify/max_user_watches")
# What the fix suggests at least: the value most distributions now ship, 8x the old 65536.
SUGGESTED_MIN_WATCHES = 524288
QUICK_CHECK_BUSY_MS = 5000
# Free space on the data dir's filesystem: below the first a commit can fail any moment
# (the daemon waits and retries, nothing is lost, but nothing new is recorded); below the
# second (or 5% of the filesystem), a warning.
DISK_FAIL_BYTES = 64 << 20
DISK_WARN_BYTES = 1 << 30
DISK_WARN_FRACTION = 0.05
# A WAL this large means checkpoints are not keeping up (a reader holding a snapshot).
WAL_WARN_BYTES = 256 << 20
LARGEST_SESSIONS = 5
DAEMON_TIMEOUT = 5.0  # seconds: a daemon that takes longer to answer "status" is unwell

# Adapter name -> the key under [roots] in the config file.
ROOT_CONFIG_KEYS = {spec.agent: spec.key for spec in ROOTS}  # the [roots] key of each


def _q(path: Path) -> str:
    return shlex.quote(str(path))


# --- roots ---------------------------------------------------------------------------


def check_roots(cfg: Config) -> list[Check]:
    checks: list[Check] = []
    present = 0
    config_file = cfg.config_file or "~/.config/agentsrc/config.toml"
    for agent, root in cfg.roots().items():
        if ROOT_NAME_SEP in agent:
            continue  # the editors' extensions: one line for them all (check_editor_roots)
        name = f"root {agent}"
        key = ROOT_CONFIG_KEYS.get(agent, agent)
        if not root.exists():
            checks.append(
                Check(
                    name,
                    True,
                    f"{root} does not exist: normal when {agent} is not used on this machine",
                    f"if {agent} keeps its transcripts elsewhere, set [roots] {key} = "
                    f'"<dir>" in {config_file}',
                    warning=True,
                )
            )
            continue
        present += 1
        if not root.is_dir():
            checks.append(
                Check(name, False, f"{root} is not a directory", f"set [roots] {key} to a dir")
            )
        elif not os.access(root, os.R_OK | os.X_OK):
            checks.append(
                Check(name, False, f"{root} is not readable by this user", f"chmod u+rx {_q(root)}")
            )
        else:
            checks.append(Check(name, True, f"{root} is readable"))
    editors, found = check_editor_roots(cfg, config_file)
    checks.append(editors)
    if present == 0 and not found:
        checks.append(
            Check(
                "roots",
                False,
                "none of the agent roots exists: there is nothing to record",
                f"point [roots] in {config_file} at where the agents write their transcripts",
            )
        )
    return checks


def check_editor_roots(cfg: Config, config_file: object) -> tuple[Check, int]:
    """One line for the editors' extensions (Cline, Roo Code, Kilo Code): which editor
    user dirs exist and which extensions keep task folders there; and how many do."""
    users = [d for d in cfg.editor_dirs if d.is_dir()]
    found = [name for name, root in cfg.roots().items()
             if ROOT_NAME_SEP in name and (root / EDITOR_TASKS).is_dir()]
    looked = f"{len(cfg.editor_dirs)} editor user dirs looked at, {len(users)} present"
    if found:
        return Check("root editors", True, f"{looked}; task folders of {', '.join(found)}"), len(
            found
        )
    return Check(
        "root editors",
        True,
        f"{looked}; no task folder of Cline, Roo Code or Kilo Code: normal when they are not"
        " used on this machine",
        f"if an editor keeps its user dir elsewhere, set [roots] {EDITORS_KEY} = "
        f'["<editor user dir>"] in {config_file}',
        warning=True,
    ), 0


# --- permissions ---------------------------------------------------------------------


def _private_mode(
    name: str, path: Path, st: os.stat_result, uid: int, want: int, what: str
) -> Check:
    if st.st_uid != uid:
        return Check(
            name,
            False,
            f"{what} {path} is owned by uid {st.st_uid}, not by this user (uid {uid})",
            f"sudo chown $(id -un) {_q(path)}",
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode != want:
        return Check(
            name,
            False,
            f"{what} {path} has mode {mode:04o}, want {want:04o}",
            f"chmod {want:o} {_q(path)}",
        )
    return Check(name, True, f"{what} {path} is {want:04o}")


def _not_yet(name: str, what: str, path: Path) -> Check:
    return Check(
        name,
        False,
        f"{what} {path} does not exist: the daemon has not run (it creates it)",
        "agentsrc install (or run `agentsrc run` in a terminal)",
    )


def check_data_dir(cfg: Config, uid: int) -> Check:
    path = cfg.data_dir
    try:
        st = path.stat()
    except FileNotFoundError:
        return _not_yet("data dir", "data dir", path)
    if not stat.S_ISDIR(st.st_mode):
        return Check("data dir", False, f"{path} is not a directory", f"move {_q(path)} away")
    return _private_mode("data dir", path, st, uid, 0o700, "data dir")


def check_database_file(cfg: Config, uid: int) -> Check:
    db = cfg.db_path
    try:
        st = db.stat()
    except FileNotFoundError:
        return _not_yet("database", "database", db)
    result = _private_mode("database", db, st, uid, 0o600, "database")
    if not result.ok:
        return result
    # SQLite's side files hold the newest events until a checkpoint: same privacy.
    for suffix in ("-wal", "-shm"):
        side = db.with_name(db.name + suffix)
        try:
            side_st = side.stat()
        except FileNotFoundError:
            continue
        side_check = _private_mode("database", side, side_st, uid, 0o600, "database file")
        if not side_check.ok:
            return side_check
    return result


def check_socket(cfg: Config, uid: int) -> Check:
    sock = cfg.socket_path
    parent = sock.parent
    try:
        parent_st = parent.stat()
    except FileNotFoundError:
        return _not_yet("socket", "socket dir", parent)
    dir_check = _private_mode("socket", parent, parent_st, uid, 0o700, "socket dir")
    if not dir_check.ok:
        return dir_check
    try:
        st = sock.lstat()
    except FileNotFoundError:
        return Check(
            "socket",
            False,
            f"no socket at {sock}: the daemon is not running",
            "agentsrc service status (then start it: agentsrc install)",
        )
    if not stat.S_ISSOCK(st.st_mode):
        return Check(
            "socket",
            False,
            f"{sock} is not a socket",
            f"stop the daemon, remove {_q(sock)}, start it again",
        )
    return _private_mode("socket", sock, st, uid, 0o600, "socket")


# --- inotify -------------------------------------------------------------------------


def count_directories(roots: Iterable[Path]) -> int:
    """Directories an inotify watcher needs a watch for: each existing root and all below."""
    total = 0
    for root in roots:
        if not root.is_dir():
            continue
        for _dirpath, _dirnames, _files in os.walk(root, followlinks=False):
            total += 1
    return total


def suggested_watches(directories: int) -> int:
    want = max(SUGGESTED_MIN_WATCHES, directories * 4)
    return 1 << (want - 1).bit_length()  # round up to a power of two


def check_inotify(cfg: Config, limit_path: Path, platform: str) -> Check:
    if not platform.startswith("linux"):
        return Check("inotify", True, "not Linux: no inotify watch limit applies")
    try:
        limit = int(limit_path.read_text().strip())
    except (OSError, ValueError) as exc:
        return Check("inotify", True, f"cannot read {limit_path}: {exc}", warning=True)
    points = cfg.watch_points()
    dirs = count_directories(p.path for p in points if p.recursive) + sum(
        1 for p in points if not p.recursive and p.path.is_dir()
    )
    suggest = suggested_watches(dirs)
    fix = (
        f"echo fs.inotify.max_user_watches={suggest} | sudo tee "
        "/etc/sysctl.d/60-agentsrc-inotify.conf && sudo sysctl --system"
    )
    detail = f"{dirs} directories to watch, max_user_watches is {limit}"
    if dirs >= limit:
        return Check("inotify", False, detail + ": not enough watches", fix)
    if dirs > limit // 2:
        # The limit is per user and shared with editors, IDEs and file sync tools.
        return Check("inotify", True, detail + ": over half used", fix, warning=True)
    return Check("inotify", True, detail)


# --- service -------------------------------------------------------------------------


def _manager_fix(status: ServiceStatus, fix_linux: str, fix_mac: str) -> str:
    return fix_linux if status.manager == "systemd" else fix_mac


def check_service(status: ServiceStatus) -> Check:
    logs = _manager_fix(status, "journalctl --user -u agentsrc -e", "see ~/Library/Logs/agentsrc/")
    if not status.installed:
        return Check(
            "service",
            True,
            f"not installed as a {status.manager} service ({status.service_file} missing): "
            "it will not start at login",
            "agentsrc install",
            warning=True,
        )
    if status.error:
        return Check("service", False, status.error, "run doctor from your own login session")
    if not status.loaded:
        return Check(
            "service",
            False,
            f"{status.service_file} exists but the manager has not loaded it ({status.state})",
            "agentsrc install (it reloads the manager and starts the service)",
        )
    if not status.active:
        restart = _manager_fix(status, "systemctl --user restart agentsrc", "agentsrc install")
        return Check("service", False, f"{status.state}", f"{restart}; logs: {logs}")
    detail = status.state
    if status.pid:
        detail += f", pid {status.pid}"
    if status.restarts:
        detail += f", restarted {status.restarts} times (logs: {logs})"
    unit_file_state = status.properties.get("UnitFileState")
    if status.manager == "systemd" and unit_file_state not in (None, "", "enabled"):
        return Check(
            "service",
            True,
            f"{detail}, but {unit_file_state}: it will not start at the next login",
            "systemctl --user enable agentsrc",
            warning=True,
        )
    return Check("service", True, detail)


def default_service_status(cfg: Config) -> ServiceStatus:
    target = ServiceTarget.current(cfg, need_executable=False)
    return service_status(target)


# --- database integrity --------------------------------------------------------------


def _one_line(text: str, limit: int = 200) -> str:
    return " ".join(text.split())[:limit]


def check_integrity(cfg: Config) -> Check | None:
    db = cfg.db_path
    if not db.is_file():
        return None  # reported by check_database_file
    stop_first = "stop the daemon (systemctl --user stop agentsrc), back the file up, then "
    try:
        rows = health.quick_check(db, QUICK_CHECK_BUSY_MS)
    except apsw.Error as exc:
        return Check(
            "integrity",
            False,
            f"cannot check {db}: {type(exc).__name__}: {exc}",
            stop_first + "move it aside and let the daemon rebuild it from the transcripts",
        )
    if rows == ["ok"]:
        return Check("integrity", True, "PRAGMA quick_check: ok")
    return Check(
        "integrity",
        False,
        f"PRAGMA quick_check found {len(rows)} problem(s), first: {_one_line(rows[0])}",
        stop_first + "move it aside and let the daemon rebuild it from the transcripts "
        "(only what is still on disk comes back)",
    )


# --- storage -------------------------------------------------------------------------


def fmt_size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def check_database_size(cfg: Config) -> Check | None:
    """The database's size and its WAL's (what the newest commits hold until a
    checkpoint moves them into the database)."""
    db = cfg.db_path
    if not db.is_file():
        return None  # reported by check_database_file
    size, wal = _size(db), _size(db.with_name(db.name + "-wal"))
    detail = f"database {fmt_size(size)}, WAL {fmt_size(wal)}"
    if wal > WAL_WARN_BYTES:
        return Check(
            "database size", True,
            detail + f": the WAL is over {fmt_size(WAL_WARN_BYTES)}, checkpoints are not keeping up",
            "a client holding a long read (an open `agentsrc tail` is fine; a stuck script is"
            " not): stop it, or restart the daemon",
            warning=True,
        )
    return Check("database size", True, detail)


@dataclass(frozen=True, slots=True)
class DiskUsage:
    free: int  # bytes this user may still write
    total: int


def disk_usage(path: Path) -> DiskUsage:
    st = os.statvfs(path)
    return DiskUsage(free=st.f_bavail * st.f_frsize, total=st.f_blocks * st.f_frsize)


def check_disk(cfg: Config, usage: Callable[[Path], DiskUsage] = disk_usage) -> Check:
    """Free space on the data dir's filesystem (its parent's while it does not exist)."""
    where = cfg.data_dir
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        u = usage(where)
    except OSError as exc:
        return Check("disk", True, f"cannot read the free space of {where}: {exc}", warning=True)
    pct = 100.0 * u.free / u.total if u.total else 0.0
    detail = f"{fmt_size(u.free)} free of {fmt_size(u.total)} ({pct:.1f}%) on the filesystem of {where}"
    fix = "free space on that filesystem, or move the data dir ([daemon] data_dir) elsewhere"
    if u.free < DISK_FAIL_BYTES:
        return Check(
            "disk", False,
            detail + ": commits fail when it runs out (the daemon retries and loses nothing,"
            " but records nothing new until there is space)",
            fix,
        )
    if u.free < DISK_WARN_BYTES or u.free < u.total * DISK_WARN_FRACTION:
        return Check("disk", True, detail + ": low", fix, warning=True)
    return Check("disk", True, detail)


def check_largest_sessions(cfg: Config, limit: int = LARGEST_SESSIONS) -> Check | None:
    """The sessions with the most records, by their maintained counters (prompts,
    messages, tool calls): one read of the sessions table, never a scan of events
    (store/health.py)."""
    db = cfg.db_path
    if not db.is_file():
        return None
    try:
        rows, total = health.largest_sessions(db, limit, QUICK_CHECK_BUSY_MS)
    except apsw.Error as exc:
        return Check("largest sessions", True, f"cannot read the sessions: {type(exc).__name__}:"
                     f" {_one_line(str(exc))}", warning=True)
    if not rows:
        return Check("largest sessions", True, "no sessions yet")
    top = "; ".join(
        f"{sid} {n:,} ({p:,} prompts, {m:,} messages, {t:,} tool calls, {tok:,} tokens)"
        for sid, n, p, m, t, tok in rows
    )
    return Check("largest sessions", True, f"{len(rows)} of {total:,} by records: {top}")


def check_fidelity(cfg: Config) -> Check | None:
    """How faithfully the agents' records were read (store/queries/fidelity.py): a
    warning naming each agent version whose records are not understood past
    WARN_SHARE, with its record types (its format changed under the adapter)."""
    db = cfg.db_path
    if not db.is_file():
        return None
    try:
        rows = health.fidelity(db, QUICK_CHECK_BUSY_MS)
    except apsw.Error as exc:
        return Check("fidelity", True, f"cannot read the fidelity table: {type(exc).__name__}:"
                     f" {_one_line(str(exc))}", warning=True)
    versions = fidelity.summary(rows)
    read = sum(v["read"] for v in versions)
    if not read:
        return Check("fidelity", True, "no records read yet")
    bad = fidelity.warnings(versions)
    if not bad:
        understood = read - sum(v["not_understood"] for v in versions)
        return Check("fidelity", True, f"{understood:,} of {read:,} records read understood"
                     f" ({len(versions)} agent versions)")
    parts = []
    for v in bad:
        types = ", ".join(f"{t} x{n:,}" for t, n in v["not_understood_types"][:5])
        parts.append(f"{v['adapter']} {v['version']}: {v['not_understood_share']:.1%} of"
                     f" {v['read']:,} records not understood ({types})")
    return Check("fidelity", True, "; ".join(parts),
                 "a newer agentsrc may read this version; `agentsrc status --json` lists"
                 " the record types (fidelity, drift)", warning=True)


# --- the daemon itself ---------------------------------------------------------------


def ask_daemon_status(cfg: Config) -> Any:
    """The daemon's answer to "status" over its socket."""
    with Client(cfg.socket_path, timeout=DAEMON_TIMEOUT) as client:
        return client.call("status", {})


def summarize_answer(answer: Any, limit: int = 5) -> str:
    if isinstance(answer, Mapping):
        scalars = [f"{k}={v}" for k, v in answer.items() if isinstance(v, str | int | float | bool)]
        return ", ".join(scalars[:limit]) or "answered"
    return "answered"


def check_daemon(cfg: Config, ask: Callable[[Config], Any]) -> Check:
    try:
        answer = ask(cfg)
    except Exception as exc:  # any failure to get an answer is the finding itself
        return Check(
            "daemon",
            False,
            f"no answer on {cfg.socket_path}: {type(exc).__name__}: {exc}",
            "agentsrc service status; logs: journalctl --user -u agentsrc -e "
            "(macOS: ~/Library/Logs/agentsrc/)",
        )
    return Check("daemon", True, f"answered on {cfg.socket_path}: {summarize_answer(answer)}")


# --- the ClickHouse sink ----------------------------------------------------------------


def ping_sink(cfg: Config) -> str:
    """Straight to the server (when the daemon does not answer): its version."""
    from agentsrc_daemon.sink.http import ClickHouse

    assert cfg.sink is not None
    sc = cfg.sink
    client = ClickHouse(sc.url, user=sc.user, password=sc.password(), timeout=DAEMON_TIMEOUT,
                        ca_file=sc.ca_file)
    try:
        return client.query("SELECT version()").decode().strip()
    finally:
        client.close()


def check_sink(
    cfg: Config,
    ask: Callable[[Config], Any],
    ping: Callable[[Config], str] = ping_sink,
    uid: int | None = None,
) -> list[Check]:
    """The sink, when configured: its password file private; the daemon's word on the
    sink (connected, lag, last error), or else the server answering at all."""
    sc = cfg.sink
    if sc is None:
        return []
    checks: list[Check] = []
    fix_init = "agentsrc sink init (then see docs/team.md)"
    if sc.password_file is not None:
        try:
            st = sc.password_file.stat()
        except OSError as exc:
            checks.append(Check("sink password", False, f"cannot read {sc.password_file}: {exc}",
                                "write the password to that file, mode 0600"))
        else:
            uid = os.geteuid() if uid is None else uid
            checks.append(_private_mode("sink password", sc.password_file, st, uid, 0o600,
                                        "password file"))
    from agentsrc_daemon.sink.http import redact_url

    where = f"{redact_url(sc.url)} database {sc.database}"
    try:
        answer = ask(cfg)
        sink = answer.get("sink") if isinstance(answer, Mapping) else None
    except Exception:
        sink = None
    if isinstance(sink, Mapping) and sink.get("enabled"):
        lag = (f"lag {sink.get('lag_events')} events, {sink.get('lag_seconds')} s,"
               f" level {sink.get('level')}")
        if sink.get("connected"):
            checks.append(Check("sink", True, f"connected to {where}; {lag}"))
        else:
            checks.append(Check(
                "sink", False,
                f"not connected to {where}: {sink.get('last_error') or 'no answer yet'}; {lag}"
                " (the local store keeps everything until the server is back)",
                "check the url, user and password_file in [sink.clickhouse]; " + fix_init,
            ))
        return checks
    try:
        version = ping(cfg)
    except Exception as exc:  # the finding itself
        checks.append(Check("sink", False, f"no answer from {where}: {type(exc).__name__}: {exc}",
                            "check the url, user and password_file in [sink.clickhouse]"))
    else:
        checks.append(Check("sink", True, f"{where} answers (ClickHouse {version}); the daemon's"
                            " sink status is not known (the daemon does not answer)",
                            warning=True))
    return checks


# --- all together --------------------------------------------------------------------


def run_checks(
    cfg: Config,
    *,
    uid: int | None = None,
    platform: str | None = None,
    max_watches_path: Path = MAX_USER_WATCHES,
    get_service_status: Callable[[Config], ServiceStatus] = default_service_status,
    ask_daemon: Callable[[Config], Any] = ask_daemon_status,
    usage: Callable[[Path], DiskUsage] = disk_usage,
) -> list[Check]:
    """Every check, in the order a person would fix them. The keyword arguments are seams
    for tests: the user, the platform, the inotify limit file, the service manager, the
    daemon's socket and the filesystem's free space."""
    uid = os.geteuid() if uid is None else uid
    platform = sys.platform if platform is None else platform
    checks = check_roots(cfg)
    checks += check_project_folders(cfg)
    checks.append(check_data_dir(cfg, uid))
    checks.append(check_database_file(cfg, uid))
    checks.append(check_socket(cfg, uid))
    checks.append(check_inotify(cfg, max_watches_path, platform))
    try:
        checks.append(check_service(get_service_status(cfg)))
    except ServiceError as exc:
        checks.append(Check("service", True, str(exc), warning=True))
    integrity = check_integrity(cfg)
    if integrity is not None:
        checks.append(integrity)
    size = check_database_size(cfg)
    if size is not None:
        checks.append(size)
    checks.append(check_disk(cfg, usage))
    largest = check_largest_sessions(cfg)
    if largest is not None:
        checks.append(largest)
    faithful = check_fidelity(cfg)
    if faithful is not None:
        checks.append(faithful)
    checks.append(check_daemon(cfg, ask_daemon))
    checks.append(check_project_files(cfg, ask_daemon))
    checks.extend(check_sink(cfg, ask_daemon))
    from .web_service import check_web  # it builds on this module's Check

    try:
        target: ServiceTarget | None = ServiceTarget.current(cfg, need_executable=False)
    except ServiceError:
        target = None
    checks.append(check_web(cfg, target))
    return checks


def exit_code(checks: Iterable[Check]) -> int:
    return 0 if all(c.ok for c in checks) else 1


def format_report(checks: list[Check]) -> str:
    lines: list[str] = []
    for c in checks:
        mark = "FAIL" if not c.ok else ("warn" if c.warning else " ok ")
        lines.append(f"[{mark}] {c.name}: {c.detail}")
        if c.fix and (not c.ok or c.warning):
            lines.append(f"       fix: {c.fix}")
    failed = sum(1 for c in checks if not c.ok)
    warned = sum(1 for c in checks if c.ok and c.warning)
    if failed:
        lines.append(f"{failed} problem(s) to fix, {warned} warning(s)")
    else:
        lines.append(f"all is well ({warned} warning(s))" if warned else "all is well")
    return "\n".join(lines)
