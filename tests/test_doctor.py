"""`agentsrc doctor` against a temporary setup: all good, then each thing broken in turn."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from typer.testing import CliRunner

from agentsrc_daemon.cli import app
from agentsrc_daemon.config import Config
from agentsrc_daemon.system import doctor
from agentsrc_daemon.system.doctor import Check, run_checks
from agentsrc_daemon.system.service import ServiceStatus

from harness import DaemonFactory, copy_tree

FIXTURES = Path(__file__).parent / "fixtures"

UID = os.geteuid()


def running_service() -> ServiceStatus:
    return ServiceStatus(
        manager="systemd",
        service_file=Path("/home/ada/.config/systemd/user/agentsrc.service"),
        installed=True,
        loaded=True,
        active=True,
        state="active (running)",
        pid=4321,
        restarts=0,
        last_exit=0,
        properties={"UnitFileState": "enabled"},
    )


GiB = 1 << 30


def roomy_disk(path: Path) -> doctor.DiskUsage:
    return doctor.DiskUsage(free=40 * GiB, total=100 * GiB)


def live_daemon(cfg: Config) -> Any:
    return {"state": "live", "events": 12, "files": {"done": 3},
            "projects": {"folders": [], "known_roots": 2, "files": [], "watch": "off"}}


@dataclass
class Setup:
    cfg: Config
    limit_file: Path
    service: ServiceStatus
    ask: Callable[[Config], Any]

    def checks(self, **overrides: Any) -> list[Check]:
        kwargs: dict[str, Any] = {
            "uid": UID,
            "platform": "linux",
            "max_watches_path": self.limit_file,
            "get_service_status": lambda cfg: self.service,
            "ask_daemon": self.ask,
            "usage": roomy_disk,
        }
        kwargs.update(overrides)
        return run_checks(self.cfg, **kwargs)

    def by_name(self, **overrides: Any) -> dict[str, Check]:
        return {c.name: c for c in self.checks(**overrides)}


# (id, prompts, messages, tool_calls, total_tokens): the counters the store maintains.
SESSIONS = [
    ("codex:a", 3, 10, 40, 9000),
    ("claude-code:b", 1, 2, 3, 100),
    ("muse:c", 20, 20, 20, 5),
    ("codex:d", 0, 0, 0, 0),
    ("claude-code:e", 5, 5, 5, 50),
    ("gemini:f", 2, 2, 2, 7),
    ("copilot:g", 1, 1, 1, 1),
]


def make_database(path: Path) -> None:
    conn = apsw.Connection(str(path))
    conn.execute(
        "CREATE TABLE events(id INTEGER PRIMARY KEY, kind TEXT); CREATE INDEX k ON events(kind);"
        "CREATE TABLE sessions(id TEXT PRIMARY KEY, prompts INTEGER, messages INTEGER,"
        " tool_calls INTEGER, total_tokens INTEGER)"
    )
    with conn:
        for n in range(20):
            conn.execute("INSERT INTO events(kind) VALUES (?)", (f"kind-{n:03d}",))
        conn.executemany("INSERT INTO sessions VALUES (?,?,?,?,?)", SESSIONS)
    conn.close()
    path.chmod(0o600)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    home = tmp_path / "home"
    codex = home / ".codex"
    claude = home / ".claude" / "projects"
    muse = home / "agents"
    gemini, copilot = home / ".gemini", home / ".copilot"
    opencode = home / ".local" / "share" / "opencode"
    qwen, amp, pi = home / ".qwen", home / ".local" / "share" / "amp", home / ".pi" / "agent"
    cursor, cline, cont = home / ".cursor", home / ".cline" / "data", home / ".continue"
    editor = home / ".config" / "Code" / "User"
    for d in (
        codex / "sessions" / "2025" / "11" / "29",
        claude / "-work-app",
        muse / "s1",
        gemini / "tmp",
        copilot / "session-state",
        opencode,
        qwen / "projects",
        amp / "threads",
        pi / "sessions",
        cursor / "projects" / "work-app" / "agent-transcripts",
        cline / "sessions",
        cont / "sessions",
        editor / "globalStorage" / "saoudrizwan.claude-dev" / "tasks" / "1767000000000",
    ):
        d.mkdir(parents=True)
    data = home / ".local" / "share" / "agentsrc"
    data.mkdir(parents=True, mode=0o700)
    data.chmod(0o700)
    make_database(data / "agentsrc.db")
    # A real bound socket, in a short directory: AF_UNIX paths are limited to ~108 bytes.
    run_dir = Path(tempfile.mkdtemp(prefix="asrc-doc-", dir="/tmp"))
    sock_dir = run_dir / "agentsrc"
    sock_dir.mkdir(mode=0o700)
    sock_dir.chmod(0o700)
    sock_path = sock_dir / "agentsrc.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock_path))
    sock_path.chmod(0o600)
    limit = tmp_path / "max_user_watches"
    limit.write_text("65536\n")
    cfg = Config(
        home=home,
        codex_root=codex,
        claude_root=claude,
        muse_root=muse,
        gemini_root=gemini,
        copilot_root=copilot,
        opencode_root=opencode,
        qwen_root=qwen,
        amp_root=amp,
        pi_root=pi,
        cursor_root=cursor,
        cline_root=cline,
        continue_root=cont,
        editor_dirs=(editor,),
        data_dir=data,
        socket_path=sock_path,
    )
    try:
        yield Setup(cfg, limit, running_service(), live_daemon)
    finally:
        listener.close()
        shutil.rmtree(run_dir, ignore_errors=True)


def test_all_good(setup: Setup) -> None:
    checks = setup.checks()
    assert [c.name for c in checks] == [
        "root codex",
        "root claude-code",
        "root muse",
        "root gemini",
        "root copilot",
        "root opencode",
        "root qwen",
        "root amp",
        "root pi",
        "root cursor",
        "root cline",
        "root continue",
        "root editors",
        "data dir",
        "database",
        "socket",
        "inotify",
        "service",
        "integrity",
        "database size",
        "disk",
        "largest sessions",
        "fidelity",
        "daemon",
        "project files",
        "web page",
    ]
    assert [c for c in checks if not c.ok or c.warning] == []
    assert doctor.exit_code(checks) == 0
    by_name = {c.name: c for c in checks}
    # .codex, sessions, 2025, 11, 29 + projects, -work-app + agents, s1 + .gemini, tmp +
    # .copilot, session-state + opencode + each of Qwen Code's, Amp's and Pi's roots and
    # the one subdirectory of each that exists + Cursor's projects, work-app,
    # agent-transcripts + Cline's sessions + Continue's sessions + Cline's tasks in Code
    # and its one task
    assert by_name["inotify"].detail == "27 directories to watch, max_user_watches is 65536"
    assert by_name["root editors"].detail == (
        "1 editor user dirs looked at, 1 present; task folders of cline@Code"
    )
    assert by_name["database"].detail == f"database {setup.cfg.db_path} is 0600"
    assert by_name["integrity"].detail == "PRAGMA quick_check: ok"
    db_size = setup.cfg.db_path.stat().st_size
    # Five pages: the schema, events, its index, sessions and its primary key.
    assert db_size == 5 * 4096
    assert by_name["database size"].detail == "database 20.0 KiB, WAL 0 B"
    assert by_name["disk"].detail == (
        f"40.0 GiB free of 100.0 GiB (40.0%) on the filesystem of {setup.cfg.data_dir}"
    )
    assert by_name["fidelity"].detail == "no records read yet"  # a store from before schema 19
    assert by_name["largest sessions"].detail == (
        "5 of 7 by records: "
        "muse:c 60 (20 prompts, 20 messages, 20 tool calls, 5 tokens); "
        "codex:a 53 (3 prompts, 10 messages, 40 tool calls, 9,000 tokens); "
        "claude-code:e 15 (5 prompts, 5 messages, 5 tool calls, 50 tokens); "
        "claude-code:b 6 (1 prompts, 2 messages, 3 tool calls, 100 tokens); "
        "gemini:f 6 (2 prompts, 2 messages, 2 tool calls, 7 tokens)"
    )
    assert by_name["service"].detail == "active (running), pid 4321"
    assert by_name["daemon"].detail == (
        f"answered on {setup.cfg.socket_path}: state=live, events=12"
    )
    report = doctor.format_report(checks)
    assert report.splitlines()[-1] == "all is well"
    assert "fix:" not in report


def assert_fails(checks: list[Check], name: str, detail: str, fix: str | None) -> Check:
    failing = [c for c in checks if not c.ok]
    assert [c.name for c in failing] == [name], failing
    assert detail in failing[0].detail
    assert failing[0].fix == fix
    assert doctor.exit_code(checks) == 1
    return failing[0]


def test_data_dir_mode(setup: Setup) -> None:
    setup.cfg.data_dir.chmod(0o755)
    assert_fails(
        setup.checks(),
        "data dir",
        f"data dir {setup.cfg.data_dir} has mode 0755, want 0700",
        f"chmod 700 {setup.cfg.data_dir}",
    )


def test_database_mode(setup: Setup) -> None:
    setup.cfg.db_path.chmod(0o644)
    assert_fails(
        setup.checks(),
        "database",
        "has mode 0644, want 0600",
        f"chmod 600 {setup.cfg.db_path}",
    )


def test_database_side_file_mode(setup: Setup) -> None:
    wal = setup.cfg.db_path.with_name("agentsrc.db-wal")
    wal.write_bytes(b"")
    wal.chmod(0o644)
    assert_fails(
        setup.checks(), "database", f"database file {wal} has mode 0644", f"chmod 600 {wal}"
    )


def test_database_missing(setup: Setup) -> None:
    setup.cfg.db_path.unlink()
    checks = setup.checks()
    assert_fails(
        checks,
        "database",
        "does not exist: the daemon has not run (it creates it)",
        "agentsrc install (or run `agentsrc run` in a terminal)",
    )
    assert "integrity" not in [c.name for c in checks]


def test_data_dir_missing(setup: Setup) -> None:
    shutil.rmtree(setup.cfg.data_dir)
    failing = [c.name for c in setup.checks() if not c.ok]
    assert failing == ["data dir", "database"]


def test_not_owned_by_this_user(setup: Setup) -> None:
    checks = setup.checks(uid=UID + 4242)
    failing = {c.name: c for c in checks if not c.ok}
    assert sorted(failing) == ["data dir", "database", "socket"]
    assert failing["data dir"].detail == (
        f"data dir {setup.cfg.data_dir} is owned by uid {UID}, not by this user (uid {UID + 4242})"
    )
    assert failing["data dir"].fix == f"sudo chown $(id -un) {setup.cfg.data_dir}"


def test_socket_mode(setup: Setup) -> None:
    setup.cfg.socket_path.chmod(0o666)
    assert_fails(
        setup.checks(), "socket", "has mode 0666, want 0600", f"chmod 600 {setup.cfg.socket_path}"
    )


def test_socket_dir_mode(setup: Setup) -> None:
    setup.cfg.socket_path.parent.chmod(0o755)
    assert_fails(
        setup.checks(),
        "socket",
        f"socket dir {setup.cfg.socket_path.parent} has mode 0755, want 0700",
        f"chmod 700 {setup.cfg.socket_path.parent}",
    )


def test_socket_missing(setup: Setup) -> None:
    setup.cfg.socket_path.unlink()
    assert_fails(
        setup.checks(),
        "socket",
        f"no socket at {setup.cfg.socket_path}: the daemon is not running",
        "agentsrc service status (then start it: agentsrc install)",
    )


def test_socket_path_is_a_plain_file(setup: Setup) -> None:
    setup.cfg.socket_path.unlink()
    setup.cfg.socket_path.write_text("")
    assert_fails(
        setup.checks(),
        "socket",
        f"{setup.cfg.socket_path} is not a socket",
        f"stop the daemon, remove {setup.cfg.socket_path}, start it again",
    )


def test_too_few_inotify_watches(setup: Setup) -> None:
    setup.limit_file.write_text("8\n")
    check = assert_fails(
        setup.checks(),
        "inotify",
        "27 directories to watch, max_user_watches is 8: not enough watches",
        "echo fs.inotify.max_user_watches=524288 | sudo tee "
        "/etc/sysctl.d/60-agentsrc-inotify.conf && sudo sysctl --system",
    )
    assert check.detail.endswith("not enough watches")


def test_inotify_over_half_used_is_a_warning(setup: Setup) -> None:
    setup.limit_file.write_text("32\n")
    checks = setup.checks()
    inotify = {c.name: c for c in checks}["inotify"]
    assert (inotify.ok, inotify.warning) == (True, True)
    assert inotify.detail == "27 directories to watch, max_user_watches is 32: over half used"
    assert doctor.exit_code(checks) == 0


def test_inotify_not_checked_off_linux(setup: Setup) -> None:
    setup.limit_file.write_text("1\n")
    inotify = setup.by_name(platform="darwin")["inotify"]
    assert (inotify.ok, inotify.warning, inotify.detail) == (
        True,
        False,
        "not Linux: no inotify watch limit applies",
    )


@pytest.mark.parametrize(
    ("directories", "suggested"), [(0, 524288), (131072, 524288), (131073, 1048576)]
)
def test_suggested_watches(directories: int, suggested: int) -> None:
    assert doctor.suggested_watches(directories) == suggested


def test_a_missing_root_is_a_warning(setup: Setup) -> None:
    shutil.rmtree(setup.cfg.muse_root)
    checks = setup.checks()
    muse = {c.name: c for c in checks}["root muse"]
    assert (muse.ok, muse.warning) == (True, True)
    assert muse.detail == (
        f"{setup.cfg.muse_root} does not exist: normal when muse is not used on this machine"
    )
    assert muse.fix == (
        'if muse keeps its transcripts elsewhere, set [roots] muse = "<dir>" in '
        "~/.config/agentsrc/config.toml"
    )
    assert doctor.exit_code(checks) == 0


def test_no_root_at_all_is_a_failure(setup: Setup) -> None:
    for root in setup.cfg.roots().values():
        shutil.rmtree(root, ignore_errors=True)
    assert_fails(
        setup.checks(),
        "roots",
        "none of the agent roots exists: there is nothing to record",
        "point [roots] in ~/.config/agentsrc/config.toml at where the agents write their "
        "transcripts",
    )


def test_a_root_that_is_a_file(setup: Setup) -> None:
    shutil.rmtree(setup.cfg.codex_root)
    setup.cfg.codex_root.write_text("")
    assert_fails(
        setup.checks(),
        "root codex",
        f"{setup.cfg.codex_root} is not a directory",
        "set [roots] codex to a dir",
    )


def test_an_unreadable_root(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    setup.cfg.claude_root.chmod(0)
    if UID == 0:
        # Tests run as root here, and root reads any directory whatever its mode: make
        # os.access answer as it would for an ordinary user.
        real_access = os.access
        denied = setup.cfg.claude_root

        def access(path: Any, mode: int, **kwargs: Any) -> bool:
            return False if Path(path) == denied else real_access(path, mode, **kwargs)

        monkeypatch.setattr(doctor.os, "access", access)
    try:
        assert_fails(
            setup.checks(),
            "root claude-code",
            f"{setup.cfg.claude_root} is not readable by this user",
            f"chmod u+rx {setup.cfg.claude_root}",
        )
    finally:
        setup.cfg.claude_root.chmod(0o755)


def test_corrupt_database(setup: Setup) -> None:
    db = setup.cfg.db_path
    conn = apsw.Connection(str(db))
    root = next(conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'k'"))[0]
    page_size = next(conn.execute("PRAGMA page_size"))[0]
    conn.close()
    with db.open("r+b") as fh:  # an invalid b-tree page type on the index's only page
        fh.seek((root - 1) * page_size)
        fh.write(b"\x42")
    check = assert_fails(
        setup.checks(),
        "integrity",
        f"PRAGMA quick_check found 2 problem(s), first: *** in database main *** Tree {root} "
        f"page {root}: btreeInitPage() returns error code 11",
        "stop the daemon (systemctl --user stop agentsrc), back the file up, then move it "
        "aside and let the daemon rebuild it from the transcripts (only what is still on disk "
        "comes back)",
    )
    assert "\n" not in check.detail


def test_not_a_database(setup: Setup) -> None:
    setup.cfg.db_path.write_bytes(b"this is not SQLite " * 100)
    assert_fails(
        setup.checks(),
        "integrity",
        f"cannot check {setup.cfg.db_path}: NotADBError: file is not a database",
        "stop the daemon (systemctl --user stop agentsrc), back the file up, then move it "
        "aside and let the daemon rebuild it from the transcripts",
    )


def test_service_not_installed_is_a_warning(setup: Setup) -> None:
    setup.service = replace(running_service(), installed=False, loaded=False, active=False)
    checks = setup.checks()
    svc = {c.name: c for c in checks}["service"]
    assert (svc.ok, svc.warning, svc.fix) == (True, True, "agentsrc install")
    assert svc.detail == (
        "not installed as a systemd service (/home/ada/.config/systemd/user/agentsrc.service "
        "missing): it will not start at login"
    )
    assert doctor.exit_code(checks) == 0


def test_service_failed(setup: Setup) -> None:
    setup.service = replace(running_service(), active=False, state="failed (exit-code)", pid=None)
    assert_fails(
        setup.checks(),
        "service",
        "failed (exit-code)",
        "systemctl --user restart agentsrc; logs: journalctl --user -u agentsrc -e",
    )


def test_service_manager_unreachable(setup: Setup) -> None:
    setup.service = replace(
        running_service(), loaded=False, active=False, state="unknown", error="no bus"
    )
    assert_fails(setup.checks(), "service", "no bus", "run doctor from your own login session")


def test_service_not_loaded(setup: Setup) -> None:
    setup.service = replace(running_service(), loaded=False, active=False, state="not-found")
    assert_fails(
        setup.checks(),
        "service",
        "exists but the manager has not loaded it (not-found)",
        "agentsrc install (it reloads the manager and starts the service)",
    )


def test_service_running_but_disabled_is_a_warning(setup: Setup) -> None:
    setup.service = replace(running_service(), properties={"UnitFileState": "disabled"})
    svc = setup.by_name()["service"]
    assert (svc.ok, svc.warning, svc.fix) == (True, True, "systemctl --user enable agentsrc")
    assert svc.detail == (
        "active (running), pid 4321, but disabled: it will not start at the next login"
    )


def test_launchd_service_restarted(setup: Setup) -> None:
    setup.service = replace(
        running_service(), manager="launchd", state="running", restarts=2, properties={}
    )
    svc = setup.by_name()["service"]
    assert (svc.ok, svc.warning) == (True, False)
    assert svc.detail == "running, pid 4321, restarted 2 times (logs: see ~/Library/Logs/agentsrc/)"


def test_daemon_not_answering(setup: Setup) -> None:
    def refuse(cfg: Config) -> Any:
        raise ConnectionRefusedError(111, "Connection refused")

    setup.ask = refuse
    assert_fails(
        setup.checks(),
        "daemon",
        f"no answer on {setup.cfg.socket_path}: ConnectionRefusedError: [Errno 111] "
        "Connection refused",
        "agentsrc service status; logs: journalctl --user -u agentsrc -e "
        "(macOS: ~/Library/Logs/agentsrc/)",
    )


def test_daemon_socket_stale(setup: Setup) -> None:
    """The real client on the fixture's socket, bound by no listening daemon (what a
    daemon killed with SIGKILL leaves behind)."""
    setup.ask = doctor.ask_daemon_status
    sock = setup.cfg.socket_path
    detail = (
        f"no answer on {sock}: DaemonNotRunning: the agentsrc daemon is not running "
        f"(stale socket at {sock})"
    )
    check = assert_fails(
        setup.checks(),
        "daemon",
        detail,
        "agentsrc service status; logs: journalctl --user -u agentsrc -e "
        "(macOS: ~/Library/Logs/agentsrc/)",
    )
    assert check.detail == detail


def test_report_lists_fixes_and_counts(setup: Setup) -> None:
    setup.cfg.data_dir.chmod(0o750)
    shutil.rmtree(setup.cfg.muse_root)
    report = doctor.format_report(setup.checks()).splitlines()
    assert f"[FAIL] data dir: data dir {setup.cfg.data_dir} has mode 0750, want 0700" in report
    assert f"       fix: chmod 700 {setup.cfg.data_dir}" in report
    assert report[2].startswith("[warn] root muse: ")
    assert report[0] == f"[ ok ] root codex: {setup.cfg.codex_root} is readable"
    assert report[-1] == "1 problem(s) to fix, 1 warning(s)"


def test_low_disk_is_a_warning_then_a_failure(setup: Setup) -> None:
    fix = "free space on that filesystem, or move the data dir ([daemon] data_dir) elsewhere"
    where = setup.cfg.data_dir
    low = setup.by_name(usage=lambda p: doctor.DiskUsage(free=512 << 20, total=100 * GiB))
    assert low["disk"].ok and low["disk"].warning
    assert low["disk"].detail == (
        f"512.0 MiB free of 100.0 GiB (0.5%) on the filesystem of {where}: low"
    )
    assert low["disk"].fix == fix
    # Over 1 GiB free but under 5% of a large filesystem: low too.
    big = setup.by_name(usage=lambda p: doctor.DiskUsage(free=30 * GiB, total=1000 * GiB))
    assert big["disk"].warning and big["disk"].detail.endswith("(3.0%) on the filesystem of "
                                                               f"{where}: low")
    full = setup.checks(usage=lambda p: doctor.DiskUsage(free=10 << 20, total=100 * GiB))
    assert_fails(
        full, "disk",
        f"10.0 MiB free of 100.0 GiB (0.0%) on the filesystem of {where}: commits fail when it"
        " runs out (the daemon retries and loses nothing, but records nothing new until there"
        " is space)",
        fix,
    )


def test_disk_of_a_data_dir_not_made_yet_is_its_parents(setup: Setup) -> None:
    asked: list[Path] = []

    def usage(path: Path) -> doctor.DiskUsage:
        asked.append(path)
        return roomy_disk(path)

    cfg = replace(setup.cfg, data_dir=setup.cfg.home / "not" / "yet")
    assert doctor.check_disk(cfg, usage).ok
    assert asked == [setup.cfg.home]
    # The real statvfs, on the real filesystem of tmp_path: the figures it reports.
    real = doctor.disk_usage(setup.cfg.data_dir)
    vfs = os.statvfs(setup.cfg.data_dir)
    assert real.total == vfs.f_blocks * vfs.f_frsize
    assert abs(real.free - vfs.f_bavail * vfs.f_frsize) < 64 << 20


def test_a_large_wal_is_a_warning(setup: Setup) -> None:
    wal = setup.cfg.db_path.with_name(setup.cfg.db_path.name + "-wal")
    with wal.open("wb") as fh:
        fh.truncate(300 << 20)  # sparse: only the size matters
    wal.chmod(0o600)
    check = setup.by_name()["database size"]
    assert check.ok and check.warning
    assert check.detail == ("database 20.0 KiB, WAL 300.0 MiB: the WAL is over 256.0 MiB,"
                            " checkpoints are not keeping up")


def test_largest_sessions_of_an_empty_or_older_store(setup: Setup) -> None:
    conn = apsw.Connection(str(setup.cfg.db_path))
    conn.execute("DELETE FROM sessions")
    conn.close()
    assert setup.by_name()["largest sessions"].detail == "no sessions yet"
    conn = apsw.Connection(str(setup.cfg.db_path))
    conn.execute("DROP TABLE sessions")
    conn.close()
    check = setup.by_name()["largest sessions"]
    assert check.ok and check.warning
    assert check.detail == "cannot read the sessions: SQLError: no such table: sessions"


def test_fidelity_warns_of_a_version_whose_records_are_not_understood(setup: Setup) -> None:
    conn = apsw.Connection(str(setup.cfg.db_path))
    conn.execute(
        "CREATE TABLE fidelity (adapter TEXT, version TEXT, record_type TEXT, read INTEGER,"
        " events INTEGER, ignored INTEGER, folded INTEGER, not_understood INTEGER,"
        " last_seen TEXT, PRIMARY KEY (adapter, version, record_type)) WITHOUT ROWID"
    )
    rows = [
        ("codex", "0.153.4", "response_item/message", 990, 900, 0, 90, 0),
        ("codex", "0.153.4", "event_msg/item_completed/TeleportItem", 10, 0, 0, 0, 10),
        ("codex", "0.160.0", "response_item/message", 100, 98, 0, 0, 0),
        ("codex", "0.160.0", "event_msg/item_completed/HologramItem", 2, 0, 0, 0, 2),
        ("claude-code", "2.2.4", "assistant", 1000, 1000, 0, 0, 0),
    ]
    conn.executemany("INSERT INTO fidelity VALUES (?,?,?,?,?,?,?,?,NULL)", rows)
    conn.close()
    check = setup.by_name()["fidelity"]
    # 0.153.4: 10 of 1,000 (1.0%, not past 1%); 0.160.0: 2 of 102 (2.0%).
    assert check.ok and check.warning
    assert check.detail == (
        "codex 0.160.0: 2.0% of 102 records not understood (event_msg/item_completed/HologramItem x2)"
    )
    conn = apsw.Connection(str(setup.cfg.db_path))
    conn.execute("DELETE FROM fidelity WHERE version = '0.160.0'")
    conn.close()
    check = setup.by_name()["fidelity"]
    assert check.ok and not check.warning
    assert check.detail == "1,990 of 2,000 records read understood (2 agent versions)"


@pytest.mark.slow
def test_largest_sessions_of_a_real_store(setup: Setup, daemon_factory: DaemonFactory) -> None:
    """On the store the daemon wrote: its sessions' own counters, as sessions.get has them."""
    d = daemon_factory()
    copy_tree(FIXTURES / "claude" / "projects", d.home / ".claude" / "projects")
    copy_tree(FIXTURES / "muse" / "agents", d.home / "agents")
    d.start()
    st = d.wait_live()
    got = [d.call("sessions.get", {"id": s["id"]})["session"]
           for s in d.call("sessions.list", {"limit": 100})["sessions"]]
    got.sort(key=lambda s: (-(s["prompts"] + s["messages"] + s["tool_calls"]), s["id"]))
    check = doctor.check_largest_sessions(replace(setup.cfg, data_dir=d.data_dir), limit=2)
    assert check is not None and check.ok and not check.warning
    assert check.detail == f"2 of {st['sessions']} by records: " + "; ".join(
        f"{s['id']} {s['prompts'] + s['messages'] + s['tool_calls']} ({s['prompts']} prompts,"
        f" {s['messages']} messages, {s['tool_calls']} tool calls,"
        f" {s['tokens']['total_tokens']:,} tokens)" for s in got[:2])
    assert st["sessions"] == 3
    assert [s["tool_calls"] for s in got] == [6, 2, 1]


def test_count_directories(tmp_path: Path) -> None:
    for d in ("a/b/c", "a/d", "e"):
        (tmp_path / "t" / d).mkdir(parents=True)
    (tmp_path / "t" / "a" / "f.jsonl").write_text("")
    (tmp_path / "t" / "link").symlink_to(tmp_path / "t" / "a")  # not followed
    assert doctor.count_directories([tmp_path / "t", tmp_path / "absent"]) == 6


def test_doctor_cli_json(setup: Setup, tmp_path: Path) -> None:
    """Through the CLI with the real seams: the stand-in systemctl (no user systemd
    instance on the test machine) reports the unit running; no daemon listens on the
    socket, so that check fails and the exit status is 1."""
    stubs = Path(__file__).resolve().parent / "stubs"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copyfile(stubs / "systemctl", bin_dir / "systemctl")
    (bin_dir / "systemctl").chmod(0o755)
    show = tmp_path / "show.txt"
    show.write_text(
        "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n"
        "MainPID=99\nNRestarts=0\n"
    )
    unit = setup.cfg.home / ".config" / "systemd" / "user" / "agentsrc.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\n")
    # The setup's configuration, as the CLI resolves it: the roots from HOME, the data
    # dir and the socket from the global options, nothing from this process's own
    # environment.
    unset = {name: None for name in os.environ if name.startswith(("AGENTSRC_", "XDG_"))}
    unset.update({"CODEX_HOME": None, "CLAUDE_CONFIG_DIR": None, "MUSE_AGENTS_DIR": None})
    result = CliRunner().invoke(
        app,
        [
            "--data-dir", str(setup.cfg.data_dir),
            "--socket", str(setup.cfg.socket_path),
            "doctor", "--json",
        ],
        env={
            **unset,
            "HOME": str(setup.cfg.home),
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "AGENTSRC_STUB_LOG": str(tmp_path / "calls.log"),
            "STUB_SYSTEMCTL_SHOW": str(show),
            "AGENTSRC_SERVICE_PLATFORM": "linux",
            "XDG_CONFIG_HOME": str(setup.cfg.home / ".config"),
        },
    )
    assert result.exit_code == 1, result.output
    checks = {c["name"]: c for c in orjson.loads(result.output)}
    assert checks["service"]["ok"] is True
    assert checks["service"]["detail"] == "active (running), pid 99"
    assert checks["daemon"]["ok"] is False
    assert [name for name, c in checks.items() if not c["ok"]] == ["daemon"]
    assert checks["database"]["detail"] == f"database {setup.cfg.db_path} is 0600"
    assert checks["socket"]["detail"] == f"socket {setup.cfg.socket_path} is 0600"
