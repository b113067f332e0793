"""Read, edit and command events derived from the tool calls of every agent.

* A TOOL_CALL yields READ and EDIT events: the files the call names (file tools), the
  headers of an apply_patch, or what the shell parser finds in a command line.
* A TOOL_RESULT of a shell-type tool yields one COMMAND event: the command line, where
  it ran, its exit code, duration and whether it was interrupted. A format that
  records no results at all (Cursor's JSONL transcripts) marks its calls
  ``no_result``: the COMMAND comes from the call, with no exit code.

Derived events copy the provenance of their source (session, ts, adapter, file, offset,
turn, call, subagent, tool) and get deterministic keys ``<source key>/read/<i>``,
``<source key>/edit/<i>``, ``<source key>/command``, so re-deriving never duplicates.

Pure apart from the injected ``project_root_for`` (see projects.ProjectRoots). The
rules are documented in docs/formats-derived.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..adapters.common import as_int, summarize_input
from ..events import COMMAND, EDIT, READ, TOOL_CALL, TOOL_RESULT, Event, SessionFacts, derived_event
from .patch import MOVE, parse_patch, patch_text_of
from .projects import is_external, is_windows_path, relative_to_project, resolve_path
from .shellparse import (
    OP_UPDATE,
    OP_WRITE,
    SHELLS,
    argv_to_script,
    is_foreign_shell,
    parse_command,
)

OP_READ = "read"  # the model saw (part of) the file's content
OP_GREP = "grep"  # the model saw matching lines of a file or of files under a directory

# Codex tools that run a command line (argv list or string) and the key holding it.
_CODEX_SHELL_TOOLS = {
    "shell": "command",
    "container.exec": "command",
    "local_shell": "command",
    "shell_command": "command",
    "exec_command": "cmd",
}
_CODEX_PATCH_TOOLS = frozenset({"apply_patch", "applypatch"})

# File tools: tool name -> (input keys holding the path, derived kind, op).
_CLAUDE_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "Read": (("file_path",), READ, OP_READ),
    "NotebookRead": (("notebook_path",), READ, OP_READ),
    "Edit": (("file_path",), EDIT, OP_UPDATE),
    "MultiEdit": (("file_path",), EDIT, OP_UPDATE),
    "Write": (("file_path",), EDIT, OP_WRITE),
    "NotebookEdit": (("notebook_path",), EDIT, OP_UPDATE),
}
# Muse tools arrive normalized (Read/Edit/Write with file_path) or raw (read/edit/write
# with path): both are accepted.
_MUSE_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "Read": (("file_path", "path"), READ, OP_READ),
    "Edit": (("file_path", "path"), EDIT, OP_UPDATE),
    "Write": (("file_path", "path"), EDIT, OP_WRITE),
}
for _name in ("Read", "Edit", "Write"):
    _MUSE_FILE_TOOLS[_name.lower()] = _MUSE_FILE_TOOLS[_name]
# OpenCode tools take camelCase arguments (packages/opencode/src/tool/*.ts). ``edit``
# with an empty oldString creates the file (a write); ``grep`` shows matching lines; a
# ``read`` of a directory lists it (still a read of that path); ``glob`` and ``list``
# show names only and derive nothing, like Claude's Glob.
_OPENCODE_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "read": (("filePath",), READ, OP_READ),
    "write": (("filePath",), EDIT, OP_WRITE),
    "edit": (("filePath",), EDIT, OP_UPDATE),
    "multiedit": (("filePath",), EDIT, OP_UPDATE),
}
_OPENCODE_PATCH_TOOLS = frozenset({"patch", "apply_patch"})  # {patchText}: Codex-style patch
# Crush tools (internal/llm/tools/*.go, internal/agent/tools since): snake_case file_path;
# ``edit`` with an empty old_string creates the file; ``grep`` shows matching lines;
# ``download`` writes what it fetched to file_path.
_CRUSH_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "view": (("file_path",), READ, OP_READ),
    "write": (("file_path",), EDIT, OP_WRITE),
    "edit": (("file_path",), EDIT, OP_UPDATE),
    "multiedit": (("file_path",), EDIT, OP_UPDATE),
    "download": (("file_path",), EDIT, OP_WRITE),
}
_SHELL_TOOLS_BY_ADAPTER = {
    "claude-code": {"Bash": "command"},
    "muse": {"Bash": "command", "exec": "command"},
    "gemini": {"run_shell_command": "command"},
    "copilot": {"bash": "command", "powershell": "command"},
    "opencode": {"bash": "command"},  # {command, workdir, timeout, description}
    "qwen": {"run_shell_command": "command"},  # {command, description, is_background, directory}
    "amp": {"Bash": "cmd"},  # {cmd, cwd}
    "pi": {"bash": "command", "user_bash": "command"},  # {command, timeout}; ``!`` commands
    "cursor": {"Shell": "command", "run_terminal_cmd": "command"},
    # The extensions' execute_command ({command}); the Cline SDK's run_commands, whose
    # results the adapter gives one command each (``command``).
    "cline": {"execute_command": "command", "run_commands": "command"},
    "roo-code": {"execute_command": "command"},
    "kilo-code": {"execute_command": "command"},
    "continue": {"run_terminal_command": "command"},
    "crush": {"bash": "command", "shell": "command"},  # shell: a bang-mode command
    "aider": {"run": "command"},  # Running <command>, /run, !, /test, /git
}
# Where a shell tool says it ran: Codex workdir; Gemini CLI dir_path (0.14 and later) or
# directory (before).
_WORKDIR_KEYS: dict[str, tuple[str, ...]] = {
    "gemini": ("dir_path", "directory"),
    "qwen": ("directory", "dir_path"),
    "amp": ("cwd",),
}
_DEFAULT_WORKDIR_KEYS = ("workdir", "working_directory")
# Shell tools whose command lines are never POSIX shell.
_FOREIGN_SHELL_TOOLS = {"copilot": frozenset({"powershell"})}

# Gemini CLI file tools; path argument names across versions (absolute_path and path
# before 0.14, file_path and dir_path since).
_GEMINI_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "read_file": (("file_path", "absolute_path", "path"), READ, OP_READ),
    "write_file": (("file_path", "path"), EDIT, OP_WRITE),
    "replace": (("file_path", "path"), EDIT, OP_UPDATE),
}
# Qwen Code (a fork of Gemini CLI) renamed ``replace`` to ``edit`` (tool-names.ts); its
# read_file took ``absolute_path`` up to 0.5 at least.
_QWEN_FILE_TOOLS = {**_GEMINI_FILE_TOOLS, "edit": _GEMINI_FILE_TOOLS["replace"]}
_GEMINI_GREP_TOOLS = frozenset({"grep_search", "search_file_content"})
# Amp: Read {path, read_range}, edit_file {path, old_str, new_str}, create_file {path,
# content}, undo_edit {path}; Grep {pattern, path} shows matching lines.
_AMP_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "Read": (("path",), READ, OP_READ),
    "edit_file": (("path",), EDIT, OP_UPDATE),
    "create_file": (("path",), EDIT, OP_WRITE),
    "undo_edit": (("path",), EDIT, OP_UPDATE),
}
# Pi (packages/coding-agent/src/core/tools): read {path}, write {path, content}, edit
# {path, oldText, newText}; grep {pattern, path} shows matching lines; find and ls names.
_PI_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "read": (("path",), READ, OP_READ),
    "write": (("path",), EDIT, OP_WRITE),
    "edit": (("path",), EDIT, OP_UPDATE),
}
_GEMINI_READ_MANY = "read_many_files"
# Copilot CLI file tools (path), and str_replace_editor's sub-commands.
_COPILOT_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "view": (("path",), READ, OP_READ),
    "create": (("path",), EDIT, OP_WRITE),
    "edit": (("path",), EDIT, OP_UPDATE),
}
_COPILOT_EDITOR_COMMANDS = {
    "view": _COPILOT_FILE_TOOLS["view"],
    "create": _COPILOT_FILE_TOOLS["create"],
    "str_replace": _COPILOT_FILE_TOOLS["edit"],
    "insert": _COPILOT_FILE_TOOLS["edit"],
    "undo_edit": _COPILOT_FILE_TOOLS["edit"],
}
# Cursor (its transcripts are the spec): Read, StrReplace and Write name a path;
# Delete removes one; Grep shows content in its "content" mode.
_CURSOR_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "Read": (("path", "target_file"), READ, OP_READ),
    "StrReplace": (("path", "target_file"), EDIT, OP_UPDATE),
    "Write": (("path", "target_file"), EDIT, OP_WRITE),
    "Delete": (("path", "target_file"), EDIT, "delete"),
}
# Cline, Roo Code and Kilo Code (the extensions' tool names: their system prompts' XML
# tools and native tools alike, and the UI rows' names); the Cline SDK's tools.
_CLINE_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "read_file": (("path",), READ, OP_READ),
    "readFile": (("path",), READ, OP_READ),
    "write_to_file": (("path",), EDIT, OP_WRITE),
    "newFileCreated": (("path",), EDIT, OP_WRITE),
    "replace_in_file": (("path",), EDIT, OP_UPDATE),
    "apply_diff": (("path",), EDIT, OP_UPDATE),
    "insert_content": (("path",), EDIT, OP_UPDATE),
    "search_and_replace": (("path",), EDIT, OP_UPDATE),
    "editedExistingFile": (("path",), EDIT, OP_UPDATE),
    "appliedDiff": (("path",), EDIT, OP_UPDATE),
    "insertContent": (("path",), EDIT, OP_UPDATE),
    "searchAndReplace": (("path",), EDIT, OP_UPDATE),
    "fileDeleted": (("path",), EDIT, "delete"),
    "editor": (("path",), EDIT, OP_UPDATE),  # the SDK: creates the file when it is missing
}
# Continue's built-in tools (core/tools/builtIn.ts).
_CONTINUE_FILE_TOOLS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "read_file": (("filepath",), READ, OP_READ),
    "read_file_range": (("filepath",), READ, OP_READ),
    "create_new_file": (("filepath",), EDIT, OP_WRITE),
    "edit_existing_file": (("filepath",), EDIT, OP_UPDATE),
    "single_find_and_replace": (("filepath",), EDIT, OP_UPDATE),
    "multi_edit": (("filepath",), EDIT, OP_UPDATE),
}
_GLOB_CHARS = frozenset("*?[{")
# Adapters whose shell tool runs the user's configured shell: on a Windows cwd that may
# be PowerShell or cmd.exe, so a command string there is recorded but not parsed.
_USER_SHELL_ADAPTERS = frozenset(
    {"codex", "gemini", "opencode", "qwen", "cursor", "cline", "roo-code", "kilo-code",
     "continue"}
)


@dataclass(frozen=True, slots=True)
class ShellInvocation:
    script: str  # the command line; a `bash -lc SCRIPT` argv is unwrapped to SCRIPT
    cwd: str | None  # where it ran: the tool's workdir, else the event's cwd
    posix: bool  # False for PowerShell / cmd.exe: recorded as a command, never parsed


def shell_invocation(
    adapter: str, tool: str | None, tool_input: Any, cwd: str | None
) -> ShellInvocation | None:
    """The command line a shell-type tool call runs, or None for any other tool (or an
    input that holds no usable command)."""
    if not isinstance(tool_input, dict) or tool is None:
        return None
    if adapter == "codex":
        key = _CODEX_SHELL_TOOLS.get(tool)
    else:
        key = _SHELL_TOOLS_BY_ADAPTER.get(adapter, {}).get(tool)
    if key is None:
        return None
    inp: dict[str, Any] = tool_input
    action = inp.get("action")
    if key not in inp and isinstance(action, dict):  # Codex local_shell_call
        inp = action
    command = inp.get(key)
    if command is None and key == "cmd":
        command = inp.get("command")
    workdir = next(
        (inp.get(k) for k in _WORKDIR_KEYS.get(adapter, _DEFAULT_WORKDIR_KEYS) if inp.get(k)),
        None,
    )
    run_cwd = cwd
    if isinstance(workdir, str) and workdir:
        run_cwd = resolve_path(workdir, cwd)
    if isinstance(command, list):
        if not command or not all(isinstance(w, str) for w in command):
            return None
        return ShellInvocation(argv_to_script(command), run_cwd, not is_foreign_shell(command[0]))
    if not isinstance(command, str) or not command.strip():
        return None
    if tool in _FOREIGN_SHELL_TOOLS.get(adapter, ()):
        return ShellInvocation(command, run_cwd, False)
    return ShellInvocation(command, run_cwd, _string_is_posix(adapter, inp, run_cwd))


def _string_is_posix(adapter: str, inp: dict[str, Any], cwd: str | None) -> bool:
    """Whether a command *string* is POSIX shell. Codex hands strings to the user's
    shell, which on Windows is PowerShell, and so does Gemini CLI (powershell.exe);
    Claude Code runs Bash (Git Bash) there."""
    shell = inp.get("shell")
    if isinstance(shell, str) and shell:
        if is_foreign_shell(shell):
            return False
        if shell.replace("\\", "/").rsplit("/", 1)[-1] in SHELLS:
            return True
    return not (adapter in _USER_SHELL_ADAPTERS and cwd is not None and is_windows_path(cwd))


def derive(
    event: Event, project_root_for: Callable[[str], str], home: str | None = None
) -> list[Event]:
    """READ/EDIT events for a tool call, a COMMAND event for a shell tool's result,
    nothing for anything else. ``home`` expands ~ and $HOME in command lines."""
    if event.kind == TOOL_CALL:
        out = _derive_from_call(event, project_root_for, home)
        if event.data.get("no_result") is True:
            out += _derive_command(event)
        return out
    if event.kind == TOOL_RESULT:
        return _derive_command(event)
    return []


def _derive_from_call(
    event: Event, project_root_for: Callable[[str], str], home: str | None
) -> list[Event]:
    """A tool call's reads, edits and command: the shell parser for a shell tool, else the
    adapter's file-tool table. Long on purpose: one dispatch over every agent's tools, a
    branch of a few lines each, so an agent's tools read as the list they are."""
    inp = event.input
    if not isinstance(inp, dict) or event.tool is None:
        return []
    tool = event.tool
    reads: list[tuple[str, str]] = []  # (path, op)
    edits: list[tuple[str, str]] = []
    invocation = shell_invocation(event.adapter, tool, inp, event.cwd)
    if invocation is not None:
        if invocation.posix:
            effects = parse_command(invocation.script, invocation.cwd, home, project_root_for)
            reads = [(path, OP_READ) for path in effects.reads]
            edits = list(effects.writes)
    elif event.adapter == "codex":
        if tool in _CODEX_PATCH_TOOLS:
            text = patch_text_of(inp)
            if text is not None:
                edits = _patch_edits(text, event.cwd)
        elif tool == "view_image":
            path = _path_arg(inp, ("path",), event.cwd)
            if path is not None:
                reads = [(path, OP_READ)]
    elif event.adapter == "claude-code":
        if tool == "Grep":
            # Only the content mode shows file content; the others list names or counts.
            if inp.get("output_mode") == "content":
                path = _path_arg(inp, ("path",), event.cwd) or event.cwd
                if path is not None:
                    reads = [(path, OP_GREP)]
        else:
            reads, edits = _file_tool(_CLAUDE_FILE_TOOLS, tool, inp, event.cwd)
    elif event.adapter == "muse":
        reads, edits = _file_tool(_MUSE_FILE_TOOLS, tool, inp, event.cwd)
    elif event.adapter == "gemini":
        reads, edits = _gemini_file_tool(tool, inp, event.cwd)
    elif event.adapter == "copilot":
        reads, edits = _copilot_file_tool(tool, inp, event.cwd)
    elif event.adapter == "opencode":
        reads, edits = _opencode_tool(tool, inp, event.cwd)
    elif event.adapter == "qwen":
        reads, edits = _gemini_file_tool(tool, inp, event.cwd, _QWEN_FILE_TOOLS)
    elif event.adapter in ("amp", "pi"):
        table, grep = (_AMP_FILE_TOOLS, "Grep") if event.adapter == "amp" else (_PI_FILE_TOOLS, "grep")
        if tool == grep:
            path = _path_arg(inp, ("path",), event.cwd) or event.cwd
            reads = [(path, OP_GREP)] if path else []
        else:
            reads, edits = _file_tool(table, tool, inp, event.cwd)
    elif event.adapter == "cursor":
        reads, edits = _cursor_tool(tool, inp, event.cwd)
    elif event.adapter in ("cline", "roo-code", "kilo-code"):
        reads, edits = _cline_tool(tool, inp, event.cwd)
    elif event.adapter == "continue":
        reads, edits = _file_tool(_CONTINUE_FILE_TOOLS, tool, inp, event.cwd)
    elif event.adapter == "crush":
        reads, edits = _crush_tool(tool, inp, event.cwd)
    elif event.adapter == "aider" and tool == "edit":
        # "Applied edit to <path>": the adapter says how (a whole file or a new one is
        # written, a SEARCH/REPLACE block or a diff updates).
        path = _path_arg(inp, ("path",), event.cwd)
        op = inp.get("op") if inp.get("op") in (OP_WRITE, OP_UPDATE) else OP_UPDATE
        edits = [(path, str(op))] if path is not None else []
    if not reads and not edits:
        return []
    root = project_root_for(event.cwd) if event.cwd else None
    out = [
        derived_event(event, READ, f"{event.key}/read/{i}", _path_data(path, op, root))
        for i, (path, op) in enumerate(reads)
    ]
    out += [
        derived_event(event, EDIT, f"{event.key}/edit/{i}", _path_data(path, op, root))
        for i, (path, op) in enumerate(edits)
    ]
    return out


def _file_tool(
    table: dict[str, tuple[tuple[str, ...], str, str]],
    tool: str,
    inp: dict[str, Any],
    cwd: str | None,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    entry = table.get(tool)
    if entry is None:
        return [], []
    keys, kind, op = entry
    path = _path_arg(inp, keys, cwd)
    if path is None:
        return [], []
    return ([(path, op)], []) if kind == READ else ([], [(path, op)])


def _gemini_file_tool(
    tool: str,
    inp: dict[str, Any],
    cwd: str | None,
    file_tools: dict[str, tuple[tuple[str, ...], str, str]] = _GEMINI_FILE_TOOLS,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Gemini CLI (and Qwen Code, with its own ``file_tools``): read_file / write_file /
    replace name one file; grep_search (named search_file_content before 0.28) shows
    matching lines unless ``names_only``; read_many_files reads the plain paths of its
    ``include`` (``paths`` before) list, not its glob patterns."""
    if tool in _GEMINI_GREP_TOOLS:
        if inp.get("names_only") is True:
            return [], []
        path = _path_arg(inp, ("dir_path", "path"), cwd) or cwd
        return ([(path, OP_GREP)] if path else []), []
    if tool == _GEMINI_READ_MANY:
        reads: list[tuple[str, str]] = []
        for key in ("include", "paths"):
            entries = inp.get(key)
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, str) and not _GLOB_CHARS.intersection(entry):
                    path = _path_arg({"p": entry}, ("p",), cwd)
                    if path is not None and (path, OP_READ) not in reads:
                        reads.append((path, OP_READ))
        return reads, []
    return _file_tool(file_tools, tool, inp, cwd)


def _copilot_file_tool(
    tool: str, inp: dict[str, Any], cwd: str | None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Copilot CLI: view / create / edit (path), str_replace_editor by its ``command``,
    grep with ``output_mode: "content"`` (the other modes list names or counts)."""
    if tool == "str_replace_editor":
        command = inp.get("command")
        entry = _COPILOT_EDITOR_COMMANDS.get(command) if isinstance(command, str) else None
        return _file_tool({tool: entry}, tool, inp, cwd) if entry else ([], [])
    if tool == "grep":
        if inp.get("output_mode") != "content":
            return [], []
        path = _path_arg(inp, ("path",), cwd) or cwd
        return ([(path, OP_GREP)] if path else []), []
    return _file_tool(_COPILOT_FILE_TOOLS, tool, inp, cwd)


def _opencode_tool(
    tool: str, inp: dict[str, Any], cwd: str | None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    if tool in _OPENCODE_PATCH_TOOLS:
        text = inp.get("patchText")
        return [], (_patch_edits(text, cwd) if isinstance(text, str) else [])
    if tool == "grep":
        path = _path_arg(inp, ("path",), cwd) or cwd
        return ([(path, OP_GREP)] if path is not None else []), []
    reads, edits = _file_tool(_OPENCODE_FILE_TOOLS, tool, inp, cwd)
    if tool == "edit" and edits and inp.get("oldString") == "":
        edits = [(path, OP_WRITE) for path, _ in edits]
    return reads, edits


def _cursor_tool(
    tool: str, inp: dict[str, Any], cwd: str | None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    if tool == "Grep":
        if inp.get("output_mode") != "content":
            return [], []
        path = _path_arg(inp, ("path",), cwd) or cwd
        return ([(path, OP_GREP)] if path else []), []
    return _file_tool(_CURSOR_FILE_TOOLS, tool, inp, cwd)


def _cline_tool(
    tool: str, inp: dict[str, Any], cwd: str | None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The extensions' file tools; the SDK's read_files (a list of files) and editor
    (a write when it inserts nothing and replaces nothing: it creates the file)."""
    if tool == "read_files":
        files = inp.get("files")
        entries = files if isinstance(files, list) else [files]
        reads: list[tuple[str, str]] = []
        for entry in entries:
            value = entry.get("path") if isinstance(entry, dict) else entry
            path = _path_arg({"p": value}, ("p",), cwd)
            if path is not None and (path, OP_READ) not in reads:
                reads.append((path, OP_READ))
        return reads, []
    reads, edits = _file_tool(_CLINE_FILE_TOOLS, tool, inp, cwd)
    if tool == "editor" and edits and not inp.get("old_text") and inp.get("insert_line") is None:
        edits = [(path, OP_WRITE) for path, _ in edits]
    return reads, edits


def _crush_tool(
    tool: str, inp: dict[str, Any], cwd: str | None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    if tool == "grep":
        path = _path_arg(inp, ("path",), cwd) or cwd
        return ([(path, OP_GREP)] if path is not None else []), []
    reads, edits = _file_tool(_CRUSH_FILE_TOOLS, tool, inp, cwd)
    if tool == "edit" and edits and inp.get("old_string") == "":
        edits = [(path, OP_WRITE) for path, _ in edits]
    return reads, edits


def _path_arg(inp: dict[str, Any], keys: tuple[str, ...], cwd: str | None) -> str | None:
    for key in keys:
        value = inp.get(key)
        if isinstance(value, str) and value.strip() and "\0" not in value and "\n" not in value:
            return resolve_path(value.strip(), cwd)
    return None


def _patch_edits(text: str, cwd: str | None) -> list[tuple[str, str]]:
    edits: list[tuple[str, str]] = []
    for entry in parse_patch(text):
        for path in (entry.path, entry.move_to if entry.op == MOVE else None):
            if path:
                edit = (resolve_path(path, cwd), entry.op)
                if edit not in edits:
                    edits.append(edit)
    return edits


def _path_data(path: str, op: str, root: str | None) -> dict[str, Any]:
    return {
        "path": path,
        "rel_path": relative_to_project(path, root),
        "project_root": root,
        "external": is_external(path, root),
        "op": op,
    }


def _derive_command(event: Event) -> list[Event]:
    invocation = shell_invocation(event.adapter, event.tool, event.input, event.cwd)
    if invocation is None and not event.data.get("command_unknown"):
        return []
    is_error = event.data.get("is_error")
    data = {
        # Cut like any stored tool input: a heredoc can make a command line very long.
        # A command whose line was not recorded (a Codex code-mode script ran it in a
        # loop) is still a command that ran, with its exit code: its line is null.
        "command": summarize_input(invocation.script) if invocation else None,
        "cwd": invocation.cwd if invocation else event.cwd,
        "exit_code": as_int(event.data.get("exit_code")),
        "duration_ms": as_int(event.data.get("duration_ms")),
        "interrupted": event.data.get("interrupted") is True,
        # Muse reports only success/failure: kept as is rather than invented as an exit code.
        "is_error": is_error if isinstance(is_error, bool) else None,
    }
    if invocation is None:
        data["command_unknown"] = True
    return [derived_event(event, COMMAND, f"{event.key}/command", data)]


@dataclass
class Deriver:
    """The derive stage as the ingestor calls it: ``deriver(event) -> list[Event]``.

    ``home`` is the default home for ~ expansion (the local user's, since transcripts
    are normally this machine's); ``learn`` records a session's own home from its
    SessionFacts when the adapter knows it. Bounded: the oldest sessions are forgotten."""

    project_root_for: Callable[[str], str]
    home: str | None = None
    max_sessions: int = 10000
    _homes: dict[str, str] = field(default_factory=dict)

    def learn(self, facts: SessionFacts) -> None:
        if facts.home and facts.session_id not in self._homes:
            if len(self._homes) >= self.max_sessions:
                self._homes.pop(next(iter(self._homes)))
            self._homes[facts.session_id] = facts.home

    def __call__(self, event: Event) -> list[Event]:
        if event.kind not in (TOOL_CALL, TOOL_RESULT):
            return []
        return derive(event, self.project_root_for, self._homes.get(event.session_id, self.home))
