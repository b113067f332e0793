"""Derivation rules for the Gemini CLI and Copilot CLI tools, on hand-made events (the
adapter tests check the same rules end to end on their fixtures)."""

from __future__ import annotations

from typing import Any

import pytest

from agentsrc_daemon.derive.derive import derive, shell_invocation
from agentsrc_daemon.events import COMMAND, EDIT, READ, TOOL_CALL, TOOL_RESULT, Event


def _event(
    adapter: str,
    tool: str,
    tool_input: Any,
    cwd: str | None = "/w",
    kind: str = TOOL_CALL,
    data: dict[str, Any] | None = None,
) -> Event:
    return Event(
        key="k",
        session_id=f"{adapter}:s",
        kind=kind,
        ts=None,
        adapter=adapter,
        source_path="/logs/x",
        offset=0,
        tool=tool,
        call_id="c",
        data=data or {},
        input=tool_input,
        cwd=cwd,
    )


def _paths(
    adapter: str, tool: str, tool_input: Any, cwd: str | None = "/w"
) -> list[tuple[str, str, str]]:
    return [
        (e.kind, e.data["path"], e.data["op"])
        for e in derive(_event(adapter, tool, tool_input, cwd), lambda c: c)
    ]


@pytest.mark.parametrize(
    ("tool", "tool_input", "want"),
    [
        ("read_file", {"file_path": "a.py"}, [(READ, "/w/a.py", "read")]),
        ("read_file", {"absolute_path": "/abs/a.py"}, [(READ, "/abs/a.py", "read")]),
        ("read_file", {"path": "/old/a.py"}, [(READ, "/old/a.py", "read")]),
        ("write_file", {"file_path": "out.txt", "content": "x"}, [(EDIT, "/w/out.txt", "write")]),
        (
            "replace",
            {"file_path": "/w/a.py", "old_string": "a", "new_string": "b"},
            [(EDIT, "/w/a.py", "update")],
        ),
        ("grep_search", {"pattern": "x", "dir_path": "src"}, [(READ, "/w/src", "grep")]),
        ("grep_search", {"pattern": "x", "names_only": True}, []),
        ("search_file_content", {"pattern": "x"}, [(READ, "/w", "grep")]),
        (
            "read_many_files",
            {"include": ["a.py", "b/*.py", "c/{x,y}.md"], "exclude": ["d.py"]},
            [(READ, "/w/a.py", "read")],
        ),
        ("read_many_files", {"paths": ["/p/a.py", "/p/a.py"]}, [(READ, "/p/a.py", "read")]),
        ("list_directory", {"dir_path": "src"}, []),
        ("glob", {"pattern": "**/*.py"}, []),
        ("web_fetch", {"prompt": "https://example.org"}, []),
        (
            "run_shell_command",
            {"command": "cat a.txt > b.txt", "dir_path": "sub"},
            [(READ, "/w/sub/a.txt", "read"), (EDIT, "/w/sub/b.txt", "write")],
        ),
        (
            "run_shell_command",
            {"command": "cat a.txt", "directory": "/old"},
            [(READ, "/old/a.txt", "read")],
        ),
    ],
)
def test_gemini_tools(
    tool: str, tool_input: dict[str, Any], want: list[tuple[str, str, str]]
) -> None:
    assert _paths("gemini", tool, tool_input) == want


@pytest.mark.parametrize(
    ("tool", "tool_input", "want"),
    [
        ("view", {"path": "/w/a.py", "view_range": [1, 5]}, [(READ, "/w/a.py", "read")]),
        ("create", {"path": "new.md", "file_text": "x"}, [(EDIT, "/w/new.md", "write")]),
        ("edit", {"path": "a.py", "old_str": "a", "new_str": "b"}, [(EDIT, "/w/a.py", "update")]),
        ("str_replace_editor", {"command": "view", "path": "a.py"}, [(READ, "/w/a.py", "read")]),
        (
            "str_replace_editor",
            {"command": "create", "path": "a.py", "file_text": "x"},
            [(EDIT, "/w/a.py", "write")],
        ),
        (
            "str_replace_editor",
            {"command": "str_replace", "path": "a.py"},
            [(EDIT, "/w/a.py", "update")],
        ),
        (
            "str_replace_editor",
            {"command": "insert", "path": "a.py"},
            [(EDIT, "/w/a.py", "update")],
        ),
        ("str_replace_editor", {"command": "frobnicate", "path": "a.py"}, []),
        (
            "grep",
            {"pattern": "x", "path": "src", "output_mode": "content"},
            [(READ, "/w/src", "grep")],
        ),
        ("grep", {"pattern": "x", "output_mode": "content"}, [(READ, "/w", "grep")]),
        ("grep", {"pattern": "x", "path": "src", "output_mode": "files_with_matches"}, []),
        ("grep", {"pattern": "x", "path": "src"}, []),
        ("glob", {"pattern": "*.py", "paths": "src"}, []),
        (
            "bash",
            {"command": "head -n 3 a.txt && rm b.txt"},
            [(READ, "/w/a.txt", "read"), (EDIT, "/w/b.txt", "delete")],
        ),
        ("powershell", {"command": "Get-Content a.txt; Remove-Item b.txt"}, []),
        ("read_bash", {"sessionId": "0"}, []),
    ],
)
def test_copilot_tools(
    tool: str, tool_input: dict[str, Any], want: list[tuple[str, str, str]]
) -> None:
    assert _paths("copilot", tool, tool_input) == want


def test_shell_invocations() -> None:
    gemini = shell_invocation(
        "gemini", "run_shell_command", {"command": "ls", "dir_path": "d"}, "/w"
    )
    assert gemini is not None and (gemini.script, gemini.cwd, gemini.posix) == ("ls", "/w/d", True)
    # Gemini CLI runs command strings through powershell.exe on Windows.
    windows = shell_invocation("gemini", "run_shell_command", {"command": "dir"}, "C:\\w")
    assert windows is not None and windows.posix is False
    ps = shell_invocation("copilot", "powershell", {"command": "ls"}, "/w")
    assert ps is not None and ps.posix is False
    bash = shell_invocation("copilot", "bash", {"command": "ls"}, "C:\\w")
    assert bash is not None and bash.posix is True
    assert shell_invocation("copilot", "read_bash", {"command": "ls"}, "/w") is None
    # Codex keeps its own workdir keys, not Gemini's.
    codex = shell_invocation("codex", "shell_command", {"command": "ls", "dir_path": "d"}, "/w")
    assert codex is not None and codex.cwd == "/w"


@pytest.mark.parametrize(
    ("adapter", "tool", "tool_input", "exit_code", "cwd"),
    [
        ("gemini", "run_shell_command", {"command": "make", "dir_path": "b"}, 2, "/w/b"),
        ("copilot", "bash", {"command": "make"}, 0, "/w"),
        ("copilot", "powershell", {"command": "make"}, 1, "/w"),
    ],
)
def test_commands_from_results(
    adapter: str, tool: str, tool_input: dict[str, Any], exit_code: int, cwd: str
) -> None:
    data = {"is_error": False, "exit_code": exit_code, "duration_ms": None, "interrupted": False}
    (command,) = derive(_event(adapter, tool, tool_input, kind=TOOL_RESULT, data=data), lambda c: c)
    assert command.kind == COMMAND
    assert (command.data["command"], command.data["cwd"], command.data["exit_code"]) == (
        "make",
        cwd,
        exit_code,
    )
