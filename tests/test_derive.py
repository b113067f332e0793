"""Derivation of read, edit and command events from hand-made tool events of every form
of the three agents; and the path/project helpers they rely on."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentsrc_daemon.derive import projects
from agentsrc_daemon.derive.derive import Deriver, derive, shell_invocation
from agentsrc_daemon.derive.projects import (
    ProjectRoots,
    find_project_root,
    is_external,
    relative_to_project,
    resolve_path,
)
from agentsrc_daemon.events import (
    COMMAND,
    EDIT,
    MESSAGE,
    READ,
    TOOL_CALL,
    TOOL_RESULT,
    Event,
    SessionFacts,
)

HOME = "/home/me"
WIN = "C:\\project\\app"
PATCH = (
    "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n"
    "*** Update File: old.py\n*** Move to: pkg/new.py\n@@\n-a\n+b\n"
    "*** Delete File: gone.txt\n*** Add File: /tmp/scratch.txt\n+z\n*** End Patch"
)


def _root_for(cwd: str) -> str:
    """Fake project roots: /w is a repository (also when the cwd is below it)."""
    return "/w" if cwd == "/w" or cwd.startswith("/w/") else cwd


def _event(
    adapter: str,
    tool: str | None,
    tool_input: Any,
    cwd: str | None = "/w",
    kind: str = TOOL_CALL,
    data: dict[str, Any] | None = None,
) -> Event:
    return Event(
        key="src-key",
        session_id=f"{adapter}:sess-1",
        kind=kind,
        ts="2025-01-02T03:04:05.000Z",
        adapter=adapter,
        source_path="/logs/s.jsonl",
        offset=1234,
        turn_id="turn-7",
        tool=tool,
        call_id="call-9",
        subagent_id="sub-3",
        data=data or {},
        input=tool_input,
        cwd=cwd,
    )


# Expected derived events as (kind, path, op, rel_path, external).
Row = tuple[str, str, str, str | None, bool | None]

CALL_CASES: list[tuple[str, Event, list[Row]]] = [
    # --- Codex ----------------------------------------------------------------------
    ("codex-shell-bash-lc",
     _event("codex", "shell", {"command": ["bash", "-lc", "sed -n '1,80p' src/a.py && cat README.md"]}),
     [(READ, "/w/src/a.py", "read", "src/a.py", False),
      (READ, "/w/README.md", "read", "README.md", False)]),
    ("codex-shell-workdir",
     _event("codex", "shell", {"command": ["bash", "-lc", "cat a.txt"], "workdir": "/w/pkg"}),
     [(READ, "/w/pkg/a.txt", "read", "pkg/a.txt", False)]),
    ("codex-shell-relative-workdir",
     _event("codex", "shell", {"command": ["cat", "a.txt"], "workdir": "pkg"}),
     [(READ, "/w/pkg/a.txt", "read", "pkg/a.txt", False)]),
    ("codex-shell-outside-project",
     _event("codex", "shell", {"command": ["bash", "-lc", "cat /etc/hosts ~/.zshrc > notes"]}),
     [(READ, "/etc/hosts", "read", None, True),
      (READ, "/home/me/.zshrc", "read", None, True),
      (EDIT, "/w/notes", "write", "notes", False)]),
    ("codex-shell-heredoc-patch",
     _event("codex", "shell",
            {"command": ["bash", "-lc", "apply_patch << 'PATCH'\n" + PATCH + "\nPATCH\n"]}),
     [(EDIT, "/w/src/a.py", "update", "src/a.py", False),
      (EDIT, "/w/old.py", "move", "old.py", False),
      (EDIT, "/w/pkg/new.py", "move", "pkg/new.py", False),
      (EDIT, "/w/gone.txt", "delete", "gone.txt", False),
      (EDIT, "/tmp/scratch.txt", "add", None, True)]),
    ("codex-shell-argv-apply-patch-windows",
     _event("codex", "shell",
            {"command": ["apply_patch", "*** Begin Patch\n*** Add File: scripts/dev.js\n+x\n"
                         "*** End Patch"]}, cwd=WIN),
     [(EDIT, "C:\\project\\app\\scripts\\dev.js", "add", "scripts/dev.js", False)]),
    ("codex-shell-pwsh-windows",
     _event("codex", "shell",
            {"command": ["pwsh", "-NoProfile", "-Command", "Get-Content README.md"]}, cwd=WIN),
     []),
    ("codex-shell-command",
     _event("codex", "shell_command", {"command": "cat a.txt | head -5", "workdir": "/w"}),
     [(READ, "/w/a.txt", "read", "a.txt", False)]),
    ("codex-shell-command-windows-is-powershell",
     _event("codex", "shell_command", {"command": "cat README.md", "workdir": WIN}, cwd=WIN),
     []),
    ("codex-exec-command",
     _event("codex", "exec_command", {"cmd": "rg -n foo src", "workdir": "/w"}),
     [(READ, "/w/src", "read", "src", False)]),
    ("codex-exec-command-no-workdir",
     _event("codex", "exec_command", {"cmd": "mkdir -p out && touch out/x", "yield_time_ms": 10}),
     [(EDIT, "/w/out", "add", "out", False), (EDIT, "/w/out/x", "add", "out/x", False)]),
    ("codex-exec-command-explicit-powershell",
     _event("codex", "exec_command", {"cmd": "cat a", "shell": "powershell.exe"}), []),
    ("codex-apply-patch-custom-tool",
     _event("codex", "apply_patch", {"input": PATCH}),
     [(EDIT, "/w/src/a.py", "update", "src/a.py", False),
      (EDIT, "/w/old.py", "move", "old.py", False),
      (EDIT, "/w/pkg/new.py", "move", "pkg/new.py", False),
      (EDIT, "/w/gone.txt", "delete", "gone.txt", False),
      (EDIT, "/tmp/scratch.txt", "add", None, True)]),
    ("codex-apply-patch-json-arguments-in-raw",
     _event("codex", "apply_patch",
            {"raw": '{"input": "*** Begin Patch\\n*** Delete File: d.txt\\n*** End Patch"}'}),
     [(EDIT, "/w/d.txt", "delete", "d.txt", False)]),
    ("codex-apply-patch-undecodable", _event("codex", "apply_patch", {"raw": "{not json"}), []),
    ("codex-local-shell",
     _event("codex", "local_shell",
            {"type": "exec", "command": ["cat", "x"], "working_directory": "/w/sub"}),
     [(READ, "/w/sub/x", "read", "sub/x", False)]),
    ("codex-view-image", _event("codex", "view_image", {"path": "/w/shot.png"}),
     [(READ, "/w/shot.png", "read", "shot.png", False)]),
    ("codex-update-plan", _event("codex", "update_plan", {"plan": []}), []),
    ("codex-write-stdin", _event("codex", "write_stdin", {"chars": "cat x\n"}), []),
    ("codex-bad-argv", _event("codex", "shell", {"command": ["cat", 3]}), []),
    ("codex-wsl-case-insensitive",
     _event("codex", "shell", {"command": ["cat", "/mnt/c/users/me/proj/A.txt"]},
            cwd="/mnt/c/Users/Me/Proj"),
     [(READ, "/mnt/c/users/me/proj/A.txt", "read", "A.txt", False)]),
    # --- Claude Code --------------------------------------------------------------------
    ("claude-read", _event("claude-code", "Read", {"file_path": "/w/a.py", "limit": 20}),
     [(READ, "/w/a.py", "read", "a.py", False)]),
    ("claude-read-external", _event("claude-code", "Read", {"file_path": "/tmp/x.log"}),
     [(READ, "/tmp/x.log", "read", None, True)]),
    ("claude-notebook-read",
     _event("claude-code", "NotebookRead", {"notebook_path": "/w/n.ipynb"}),
     [(READ, "/w/n.ipynb", "read", "n.ipynb", False)]),
    ("claude-edit",
     _event("claude-code", "Edit", {"file_path": "/w/a.py", "old_string": "a", "new_string": "b"}),
     [(EDIT, "/w/a.py", "update", "a.py", False)]),
    ("claude-multiedit", _event("claude-code", "MultiEdit", {"file_path": "/w/m.py", "edits": []}),
     [(EDIT, "/w/m.py", "update", "m.py", False)]),
    ("claude-write", _event("claude-code", "Write", {"file_path": "/w/new.md", "content": "x"}),
     [(EDIT, "/w/new.md", "write", "new.md", False)]),
    ("claude-notebook-edit",
     _event("claude-code", "NotebookEdit", {"notebook_path": "/w/n.ipynb", "new_source": "x"}),
     [(EDIT, "/w/n.ipynb", "update", "n.ipynb", False)]),
    ("claude-grep-content-path",
     _event("claude-code", "Grep", {"pattern": "x", "output_mode": "content", "path": "/w/src"}),
     [(READ, "/w/src", "grep", "src", False)]),
    ("claude-grep-content-cwd",
     _event("claude-code", "Grep", {"pattern": "x", "output_mode": "content"}),
     [(READ, "/w", "grep", ".", False)]),
    ("claude-grep-files", _event("claude-code", "Grep", {"pattern": "x", "path": "/w/src",
                                                        "output_mode": "files_with_matches"}), []),
    ("claude-grep-default-mode", _event("claude-code", "Grep", {"pattern": "x"}), []),
    ("claude-bash",
     _event("claude-code", "Bash", {"command": "cd sub && cat a > b", "description": "d"}),
     [(READ, "/w/sub/a", "read", "sub/a", False), (EDIT, "/w/sub/b", "write", "sub/b", False)]),
    ("claude-glob", _event("claude-code", "Glob", {"pattern": "**/*.py"}), []),
    ("claude-todowrite", _event("claude-code", "TodoWrite", {"todos": []}), []),
    ("claude-windows-read",
     _event("claude-code", "Read", {"file_path": "C:\\Code\\Proj\\src\\a.ts"}, cwd="c:\\code\\proj"),
     [(READ, "C:\\Code\\Proj\\src\\a.ts", "read", "src/a.ts", False)]),
    ("claude-windows-bash-rm",
     _event("claude-code", "Bash", {"command": 'rm "c:\\code\\proj\\x.tsx"'}, cwd="c:\\code\\proj"),
     [(EDIT, "c:\\code\\proj\\x.tsx", "delete", "x.tsx", False)]),
    ("claude-no-cwd-relative", _event("claude-code", "Read", {"file_path": "a.py"}, cwd=None),
     [(READ, "a.py", "read", None, None)]),
    ("claude-empty-path", _event("claude-code", "Read", {"file_path": ""}), []),
    # --- Muse -------------------------------------------------------------------------
    ("muse-bash", _event("muse", "Bash", {"command": "cat notes.md"}),
     [(READ, "/w/notes.md", "read", "notes.md", False)]),
    ("muse-exec-raw", _event("muse", "exec", {"command": "tee out.txt"}),
     [(EDIT, "/w/out.txt", "write", "out.txt", False)]),
    ("muse-read", _event("muse", "Read", {"file_path": "/w/a"}), [(READ, "/w/a", "read", "a", False)]),
    ("muse-read-raw-relative", _event("muse", "read", {"path": "docs/b.md"}),
     [(READ, "/w/docs/b.md", "read", "docs/b.md", False)]),
    ("muse-edit", _event("muse", "Edit", {"file_path": "/w/e", "old_string": "a"}),
     [(EDIT, "/w/e", "update", "e", False)]),
    ("muse-edit-raw", _event("muse", "edit", {"path": "/w/e"}),
     [(EDIT, "/w/e", "update", "e", False)]),
    ("muse-write", _event("muse", "Write", {"file_path": "/w/n"}),
     [(EDIT, "/w/n", "write", "n", False)]),
    ("muse-write-raw", _event("muse", "write", {"path": "/w/n"}),
     [(EDIT, "/w/n", "write", "n", False)]),
    ("muse-namespaced-tool", _event("muse", "memory_search", {"query": "x"}), []),
    # --- anything else ----------------------------------------------------------------
    ("unknown-adapter", _event("other", "Read", {"file_path": "/w/a"}), []),
    ("input-not-a-dict", _event("claude-code", "Read", None), []),
    ("no-tool", _event("claude-code", None, {"file_path": "/w/a"}), []),
    ("not-a-tool-event", _event("claude-code", "Read", {"file_path": "/w/a"}, kind=MESSAGE), []),
]


@pytest.mark.parametrize(("event", "rows"), [pytest.param(e, r, id=i) for i, e, r in CALL_CASES])
def test_derive_from_call(event: Event, rows: list[Row]) -> None:
    derived = derive(event, _root_for, HOME)
    got = [
        (e.kind, e.data["path"], e.data["op"], e.data["rel_path"], e.data["external"])
        for e in derived
    ]
    assert got == rows
    root = _root_for(event.cwd) if event.cwd else None
    assert all(e.data["project_root"] == root for e in derived)
    assert all(set(e.data) == {"path", "rel_path", "project_root", "external", "op"}
               for e in derived)


def test_derived_keys_and_provenance() -> None:
    source = _event("claude-code", "Bash", {"command": "cat a b > c"})
    derived = derive(source, _root_for, HOME)
    assert [e.key for e in derived] == ["src-key/read/0", "src-key/read/1", "src-key/edit/0"]
    for e in derived:
        assert (e.session_id, e.ts, e.adapter, e.source_path, e.offset) == (
            "claude-code:sess-1", "2025-01-02T03:04:05.000Z", "claude-code", "/logs/s.jsonl", 1234
        )
        assert (e.turn_id, e.tool, e.call_id, e.subagent_id, e.cwd) == (
            "turn-7", "Bash", "call-9", "sub-3", "/w"
        )
        assert e.input is None and e.contents == [] and e.spill_path is None
    # deterministic: the same source derives the same events
    assert derive(source, _root_for, HOME) == derived


# --- command events -----------------------------------------------------------------

RESULT_CASES: list[tuple[str, Event, dict[str, Any] | None]] = [
    ("codex-shell",
     _event("codex", "shell", {"command": ["bash", "-lc", "cargo test"], "workdir": "/w/k"},
            kind=TOOL_RESULT, data={"exit_code": 101, "duration_ms": 2300, "is_error": True}),
     {"command": "cargo test", "cwd": "/w/k", "exit_code": 101, "duration_ms": 2300,
      "interrupted": False, "is_error": True}),
    ("codex-pwsh-is-still-a-command",
     _event("codex", "shell", {"command": ["pwsh", "-NoProfile", "-Command", "Get-Content a"]},
            cwd=WIN, kind=TOOL_RESULT, data={"exit_code": 0, "duration_ms": 15}),
     {"command": "pwsh -NoProfile -Command 'Get-Content a'", "cwd": WIN, "exit_code": 0,
      "duration_ms": 15, "interrupted": False, "is_error": None}),
    ("codex-shell-command",
     _event("codex", "shell_command", {"command": "ls -la", "workdir": "/w"}, kind=TOOL_RESULT,
            data={"exit_code": 0, "duration_ms": 41.6}),
     {"command": "ls -la", "cwd": "/w", "exit_code": 0, "duration_ms": 42,
      "interrupted": False, "is_error": None}),
    ("codex-exec-interrupted",
     _event("codex", "exec_command", {"cmd": "sleep 100"}, kind=TOOL_RESULT,
            data={"exit_code": None, "duration_ms": None, "interrupted": True}),
     {"command": "sleep 100", "cwd": "/w", "exit_code": None, "duration_ms": None,
      "interrupted": True, "is_error": None}),
    ("codex-local-shell",
     _event("codex", "local_shell", {"command": ["ls"], "working_directory": "/w/s"},
            kind=TOOL_RESULT, data={"exit_code": True}),
     {"command": "ls", "cwd": "/w/s", "exit_code": None, "duration_ms": None,
      "interrupted": False, "is_error": None}),
    ("claude-bash",
     _event("claude-code", "Bash", {"command": "npm test"}, kind=TOOL_RESULT,
            data={"exit_code": None, "duration_ms": None, "interrupted": True, "is_error": False}),
     {"command": "npm test", "cwd": "/w", "exit_code": None, "duration_ms": None,
      "interrupted": True, "is_error": False}),
    ("muse-bash",
     _event("muse", "Bash", {"command": "make"}, kind=TOOL_RESULT, data={"is_error": True}),
     {"command": "make", "cwd": "/w", "exit_code": None, "duration_ms": None,
      "interrupted": False, "is_error": True}),
    ("long-command-is-cut",
     _event("claude-code", "Bash", {"command": "x" * 5000}, kind=TOOL_RESULT),
     {"command": "x" * 4096 + "…[904 more chars]", "cwd": "/w", "exit_code": None,
      "duration_ms": None, "interrupted": False, "is_error": None}),
    ("result-without-call-input", _event("codex", "shell", None, kind=TOOL_RESULT), None),
    ("result-of-file-tool",
     _event("claude-code", "Read", {"file_path": "/w/a"}, kind=TOOL_RESULT), None),
    ("result-of-apply-patch",
     _event("codex", "apply_patch", {"input": PATCH}, kind=TOOL_RESULT), None),
    ("result-of-write-stdin",
     _event("codex", "write_stdin", {"chars": "q"}, kind=TOOL_RESULT), None),
]


@pytest.mark.parametrize(
    ("event", "data"), [pytest.param(e, d, id=i) for i, e, d in RESULT_CASES]
)
def test_derive_command(event: Event, data: dict[str, Any] | None) -> None:
    derived = derive(event, _root_for, HOME)
    if data is None:
        assert derived == []
        return
    assert len(derived) == 1
    (command,) = derived
    assert command.kind == COMMAND
    assert command.key == "src-key/command"
    assert command.data == data
    assert (command.tool, command.call_id, command.turn_id) == (event.tool, "call-9", "turn-7")


def test_shell_invocation_unwraps_and_flags_foreign_shells() -> None:
    inv = shell_invocation("codex", "shell", {"command": ["zsh", "-lc", "pwd"]}, "/w")
    assert inv is not None and (inv.script, inv.cwd, inv.posix) == ("pwd", "/w", True)
    inv = shell_invocation("codex", "shell", {"command": ["cmd.exe", "/c", "dir"]}, WIN)
    assert inv is not None and (inv.script, inv.posix) == ("cmd.exe /c dir", False)
    assert shell_invocation("codex", "shell", {"command": "  "}, "/w") is None
    assert shell_invocation("claude-code", "shell", {"command": "ls"}, "/w") is None


# --- the stage object -----------------------------------------------------------------


def test_deriver_uses_the_session_home() -> None:
    deriver = Deriver(_root_for, home="/home/local")
    deriver.learn(SessionFacts(session_id="claude-code:sess-1", agent="claude-code",
                               native_id="sess-1", home="/Users/them"))
    mine = _event("claude-code", "Bash", {"command": "cat ~/a"})
    other = _event("codex", "shell", {"command": ["cat", "~/a"]})  # session codex:sess-1
    assert [e.data["path"] for e in deriver(mine)] == ["/Users/them/a"]
    assert [e.data["path"] for e in deriver(other)] == ["/w/~/a"]  # no shell: a literal ~
    other_bash = _event("codex", "shell", {"command": ["bash", "-lc", "cat ~/a"]})
    assert [e.data["path"] for e in deriver(other_bash)] == ["/home/local/a"]
    assert deriver(_event("claude-code", "Read", {"file_path": "/w/a"}, kind=MESSAGE)) == []


def test_deriver_forgets_oldest_homes() -> None:
    deriver = Deriver(_root_for, home=None, max_sessions=2)
    for n in range(3):
        deriver.learn(SessionFacts(session_id=f"muse:s{n}", agent="muse", native_id=f"s{n}",
                                   home=f"/h{n}"))
    assert deriver._homes == {"muse:s1": "/h1", "muse:s2": "/h2"}


# --- paths and projects -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "cwd", "expected"),
    [
        ("a/b", "/w", "/w/a/b"),
        ("../x", "/w/s", "/w/x"),
        ("/abs/./y/../z", "/w", "/abs/z"),
        ("rel", None, "rel"),
        ("C:\\Kept\\As\\written", "/w", "C:\\Kept\\As\\written"),
        ("src/a.ts", WIN, "C:\\project\\app\\src\\a.ts"),
        ("..\\b.ts", WIN, "C:\\project\\b.ts"),
    ],
)
def test_resolve_path(path: str, cwd: str | None, expected: str) -> None:
    assert resolve_path(path, cwd) == expected


@pytest.mark.parametrize(
    ("path", "root", "rel", "external"),
    [
        ("/w/a/b.py", "/w", "a/b.py", False),
        ("/w", "/w", ".", False),
        ("/wx/a", "/w", None, True),
        ("/W/a", "/w", None, True),  # POSIX paths are case-sensitive
        ("/etc/hosts", "/", "etc/hosts", False),
        ("C:\\Proj\\Src\\A.ts", "c:\\proj", "Src/A.ts", False),
        ("c:/proj/x", "C:\\Proj", "x", False),
        ("D:\\proj\\x", "C:\\proj", None, True),
        ("/mnt/c/Users/Me/p/f", "/mnt/c/users/me/P", "f", False),
        ("C:\\proj\\x", "/w", None, True),
        ("rel/path", "/w", None, None),
        ("/w/a", None, None, None),
    ],
)
def test_relative_and_external(path: str, root: str | None, rel: str | None,
                               external: bool | None) -> None:
    assert relative_to_project(path, root) == rel
    assert is_external(path, root) is external


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("C:\\Proj\\A.ts", "c:/proj/a.ts"),
        ("/mnt/c/Users/X", "/mnt/c/users/x"),
        ("/Users/X", "/Users/X"),
    ],
)
def test_path_match_key(path: str, key: str) -> None:
    """The form paths are compared in: Windows and WSL-mount paths lower-cased with
    forward slashes, others unchanged. A path is the same as its key, and a POSIX path
    differs from its lower-cased form."""
    assert relative_to_project(path, key) == "."
    assert relative_to_project(key, path) == "."
    assert (relative_to_project(path, path.lower()) == ".") is (key != path)


def test_find_project_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "a" / "b").mkdir(parents=True)
    worktree = tmp_path / "wt"
    (worktree / "sub").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: elsewhere\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert find_project_root(str(repo / "a" / "b")) == str(repo)
    assert find_project_root(str(repo) + "/") == str(repo)
    assert find_project_root(str(worktree / "sub")) == str(worktree)
    assert find_project_root(str(plain)) == str(plain)
    assert find_project_root(str(tmp_path / "missing" / "dir")) == str(tmp_path / "missing/dir")
    assert find_project_root(WIN) == WIN
    assert find_project_root("relative/dir") == "relative/dir"


def test_project_roots_cache_is_bounded(tmp_path: Path) -> None:
    dirs = [tmp_path / name for name in ("one", "two", "three")]
    for d in dirs:
        d.mkdir()
    roots = ProjectRoots(max_entries=2)
    assert roots.root_for(str(dirs[0])) == str(dirs[0])
    (tmp_path / ".git").mkdir()
    # cached: the new repository is not seen for "one" ...
    assert roots(str(dirs[0])) == str(dirs[0])
    # ... until two more cwds push it out of the cache
    assert roots(str(dirs[1])) == str(tmp_path)
    assert roots(str(dirs[2])) == str(tmp_path)
    assert roots(str(dirs[0])) == str(tmp_path)


_PATHISH = st.text(alphabet=st.sampled_from(list("ab:/\\.C z\n")), max_size=12) | st.text(max_size=12)


@given(path=_PATHISH)
def test_windows_path_quick_reject_agrees_with_the_regexes(path: str) -> None:
    """is_windows_path answers False without its regexes unless path[1] is ':' or the
    path starts with a backslash; _components splits with str.split: as before."""
    assert projects.is_windows_path(path) is bool(
        projects._DRIVE_PATH.match(path) or projects._UNC_PATH.match(path))
    separators = "\\/" if projects.is_windows_path(path) else "/"
    parts = re.split(f"[{re.escape(separators)}]", path)
    assert projects._components(path) == [p for p in parts if p not in ("", ".")]
