"""Codex 0.147 and later: the turn items of ``event_msg/item_completed`` and the other
records of the 2026 rollouts, translated into what the Codex adapter emits.

Codex 0.147 moved turns into ``item_completed`` events whose ``item`` is one of the
PascalCase ``TurnItem`` variants of ``codex-rs/protocol/src/items.rs`` (written in
snake_case in the rollout): ``UserMessage``, ``AgentMessage``, ``Reasoning``,
``CommandExecution``, ``FileChange``, ``McpToolCall``, ``WebSearch``, ``DynamicToolCall``,
``CollabAgentToolCall``, ``SubAgentActivity``, ``Plan``, ``ContextCompaction``... An item
that records a call the model made (a ``function_call`` or ``custom_tool_call`` with the
same id, or, ids differing, the open call of its kind) adds what the call's output lacks;
an item of its own (a call a code-mode ``exec`` script made, ids ``exec-<uuid>``) is a tool
call and its result. This module says what each item is; codex.py emits it.

Pure: no state of its own, standard library and the common helpers only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .common import as_dict, as_int, nonempty_str, text_of

# Items that are tool invocations (the call and its result in one record).
TOOL_ITEMS = frozenset(
    {
        "CommandExecution",
        "FileChange",
        "McpToolCall",
        "mcpToolCall",  # the casing issue 26 names; 0.152 rollouts write McpToolCall
        "WebSearch",
        "DynamicToolCall",
        "CollabAgentToolCall",
        "ImageView",
        "ImageGeneration",
        "Extension",  # an extension's item, by its kind (EXTENSION_KINDS)
    }
)
# Items whose content another record already gives, or that are UI state: ignored on
# purpose (docs/formats.md, "Ignored on purpose"). Reasons beside each.
IGNORED_ITEMS = {
    "Plan": "the plan of a plan-mode turn; the assistant item carries it as <proposed_plan>",
    "SubAgentActivity": "a sub-agent started or finished; the sub-agent's rollout names its parent",
    "Sleep": "the agent waited; nothing ran",
}
# ``Extension`` items (codex-rs ``ExtensionItem``: ``{"type": "Extension", "kind":
# "<namespace>.<item>", "id", ...}``, the fields flattened or under ``payload``): the
# kinds that are tool calls, and those ignored on purpose with the reason. Any other kind
# is drift.
EXTENSION_TOOLS = {"web.search": "web_search", "image_gen.generation": "image_generation"}
IGNORED_EXTENSION_KINDS = {"clock.sleep": "the agent waited; nothing ran"}
# Message-like items handled by the adapter itself.
MESSAGE_ITEMS = frozenset({"UserMessage", "AgentMessage", "Reasoning", "HookPrompt", "ContextCompaction"})

# The shell tools an item can record, and the kinds of model calls each item records.
SHELL_TOOLS = frozenset({"exec_command", "shell_command", "shell", "local_shell", "container.exec"})
CODE_MODE_TOOL = "exec"  # the code-mode tool: a script whose tool calls are items of their own


@dataclass
class ItemCall:
    """A tool item, as the call and result codex.py emits when it records no model call."""

    tool: str
    call_input: dict[str, Any]
    exit_code: int | None = None
    duration_ms: int | None = None
    is_error: bool | None = None
    output: str = ""
    names: frozenset[str] = field(default_factory=frozenset)  # model calls it may record


def item_type(item: dict[str, Any]) -> str | None:
    kind = item.get("type")
    return kind if isinstance(kind, str) else None


def duration_ms(value: Any) -> int | None:
    """``{"secs": s, "nanos": n}`` (a Rust Duration) in whole milliseconds."""
    duration = as_dict(value)
    secs, nanos = as_int(duration.get("secs")), as_int(duration.get("nanos"))
    if secs is None:
        return None
    return secs * 1000 + round((nanos or 0) / 1_000_000)


def path_of_uri(value: Any) -> str | None:
    """A ``file://`` URL (0.153's ``cwd``) as a path; a plain path as it is."""
    text = nonempty_str(value)
    if text is None:
        return None
    if text.startswith("file://"):
        from urllib.parse import unquote, urlsplit

        path = unquote(urlsplit(text).path)
        # file:///C:/x -> C:/x
        if len(path) > 2 and path[0] == "/" and path[2] == ":":
            path = path[1:]
        return path or None
    return text


def command_line(value: Any) -> str | None:
    """The command of a CommandExecution: an argv, a ``bash -lc SCRIPT`` unwrapped by
    derive like any argv; kept as the argv so derive reads it as it reads ``shell``."""
    return value if isinstance(value, str) else None


def _failed(status: Any) -> bool | None:
    if status in ("failed", "declined"):
        return True
    if status == "completed":
        return False
    return None


def _synthetic_patch(changes: Any) -> str:
    """A FileChange's ``changes`` as apply_patch text: the headers derive reads for the
    edits, and the added or changed lines the secret scanner reads."""
    lines = ["*** Begin Patch"]
    for target, change in as_dict(changes).items():
        if not isinstance(target, str) or not target:
            continue
        change = as_dict(change)
        kind = change.get("type")
        if kind == "add":
            lines.append(f"*** Add File: {target}")
            content = change.get("content")
            if isinstance(content, str):
                lines += ["+" + ln for ln in content.splitlines()]
        elif kind == "delete":
            lines.append(f"*** Delete File: {target}")
        else:
            lines.append(f"*** Update File: {target}")
            move = nonempty_str(change.get("move_path"))
            if move:
                lines.append(f"*** Move to: {move}")
            diff = change.get("unified_diff")
            if isinstance(diff, str):
                lines += [ln for ln in diff.splitlines() if ln[:1] in ("+", "-", " ", "@")]
    lines.append("*** End Patch")
    return "\n".join(lines) + "\n"


def item_call(item: dict[str, Any]) -> ItemCall | None:
    """What a tool item did, or None for an item that is not a tool invocation. Long on
    purpose: one dispatch over Codex's item types, a branch of a few lines each."""
    kind = item_type(item)
    if kind == "CommandExecution":
        argv = item.get("command")
        inp: dict[str, Any] = {"command": argv if isinstance(argv, list | str) else []}
        workdir = path_of_uri(item.get("cwd"))
        if workdir:
            inp["workdir"] = workdir
        code = as_int(item.get("exit_code"))
        failed = _failed(item.get("status"))
        output = item.get("aggregated_output")
        return ItemCall(
            "shell",
            inp,
            exit_code=code,
            duration_ms=duration_ms(item.get("duration")),
            is_error=(code != 0) if code is not None else failed,
            output=output if isinstance(output, str) else "",
            names=SHELL_TOOLS,
        )
    if kind == "FileChange":
        stderr = item.get("stderr")
        stdout = item.get("stdout")
        return ItemCall(
            "apply_patch",
            {"input": _synthetic_patch(item.get("changes"))},
            is_error=_failed(item.get("status")),
            output="\n".join(s for s in (stdout, stderr) if isinstance(s, str) and s),
            names=frozenset({"apply_patch", "applypatch"}),
        )
    if kind in ("McpToolCall", "mcpToolCall"):
        server, tool = nonempty_str(item.get("server")), nonempty_str(item.get("tool"))
        error = as_dict(item.get("error")).get("message")
        result = as_dict(item.get("result"))
        output = text_of(result.get("content")) or (error if isinstance(error, str) else "")
        name = f"mcp__{server}__{tool}" if server and tool else tool or "mcp"
        return ItemCall(
            name,
            as_dict(item.get("arguments")),
            duration_ms=duration_ms(item.get("duration")),
            is_error=True if error else (result.get("isError") if isinstance(result.get("isError"), bool) else _failed(item.get("status"))),
            output=output,
            names=frozenset(n for n in (name, tool) if n),
        )
    if kind == "Extension":
        item = {**as_dict(item.get("payload")), **item}
        kind = {"web_search": "WebSearch", "image_generation": "ImageGeneration"}.get(
            EXTENSION_TOOLS.get(str(item.get("kind")), ""), ""
        )
    if kind == "WebSearch":
        action = as_dict(item.get("action"))
        if not action and nonempty_str(item.get("query")):
            action = {"type": "search", "query": item["query"]}
        return ItemCall(nonempty_str(item.get("name")) or "web_search", action,
                        names=frozenset({"web_search"}))
    if kind == "DynamicToolCall":
        tool = nonempty_str(item.get("tool")) or "dynamic_tool"
        success = item.get("success")
        return ItemCall(
            tool,
            as_dict(item.get("arguments")),
            duration_ms=duration_ms(item.get("duration")),
            is_error=(not success) if isinstance(success, bool) else _failed(item.get("status")),
            output=text_of(item.get("content_items")),
            names=frozenset({tool}),
        )
    if kind == "CollabAgentToolCall":
        tool = nonempty_str(item.get("tool")) or "collab_agent"
        inp = {"prompt": item.get("prompt"), "receiver_thread_ids": item.get("receiver_thread_ids")}
        return ItemCall(tool, {k: v for k, v in inp.items() if v}, is_error=_failed(item.get("status")),
                        names=frozenset({tool}))
    if kind == "ImageView":
        path = path_of_uri(item.get("path"))
        return ItemCall("view_image", {"path": path} if path else {}, names=frozenset({"view_image"}))
    if kind == "ImageGeneration":
        return ItemCall("image_generation", {"revised_prompt": item.get("revised_prompt")} if item.get("revised_prompt") else {},
                        is_error=_failed(item.get("status")), names=frozenset({"image_generation"}))
    return None


def extension_kind(item: dict[str, Any]) -> str:
    """An ``Extension`` item's kind (``web.search``, ``clock.sleep``...), "?" if none."""
    kind = item.get("kind")
    return kind if isinstance(kind, str) and kind else "?"


def item_text(item: dict[str, Any]) -> str:
    """The text of a UserMessage, AgentMessage or HookPrompt item (its text parts)."""
    if item_type(item) == "HookPrompt":
        parts, kinds = item.get("fragments"), None
    else:
        parts, kinds = item.get("content"), ("text", "Text")
    texts: list[str] = []
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict) or (kinds and part.get("type") not in kinds):
            continue
        text = part.get("text")
        if isinstance(text, str):
            texts.append(text)
    return "\n".join(texts)


# --------------------------------------------------------------------------- usage

# token_usage_record.usage field -> our USAGE data key
RECORD_USAGE_FIELDS = (
    ("input_tokens", "input_tokens"),
    ("cached_input_tokens", "cache_read_tokens"),
    ("cache_write_input_tokens", "cache_creation_tokens"),
    ("output_tokens", "output_tokens"),
    ("reasoning_output_tokens", "reasoning_tokens"),
    ("total_tokens", "total_tokens"),
)


def record_usage(payload: dict[str, Any]) -> dict[str, int] | None:
    """A ``token_usage_record``'s usage of one response, our field names; None when it
    carries none."""
    usage = payload.get("usage")
    if not isinstance(usage, dict):
        return None
    out = {ours: as_int(usage.get(theirs)) or 0 for theirs, ours in RECORD_USAGE_FIELDS}
    return out if any(out.values()) else None


def thread_totals(payload: dict[str, Any]) -> dict[str, int] | None:
    """The thread's cumulative totals a record carries, our field names."""
    usage = payload.get("thread_token_usage")
    if not isinstance(usage, dict):
        return None
    return {ours: as_int(usage.get(theirs)) or 0 for theirs, ours in RECORD_USAGE_FIELDS}


# --------------------------------------------------------------------------- sub-agents


def spawn_of(source: Any) -> dict[str, Any] | None:
    """``source.subagent.thread_spawn`` (parent_thread_id, depth, agent_path,
    agent_nickname) of a spawned sub-agent's session_meta."""
    sub = as_dict(as_dict(source).get("subagent"))
    spawn = sub.get("thread_spawn")
    return spawn if isinstance(spawn, dict) else None


def subagent_kind(source: Any) -> str | None:
    """What kind of sub-agent a rollout says it is: ``review`` ({"subagent": "review"}),
    ``thread_spawn``, or the ``other`` value (``guardian``)."""
    sub = as_dict(source).get("subagent")
    if isinstance(sub, str):
        return sub or None
    if isinstance(sub, dict):
        if "thread_spawn" in sub:
            return "thread_spawn"
        other = sub.get("other")
        if isinstance(other, str) and other:
            return other
        return next((k for k in sub if isinstance(k, str)), None)
    return None


# --------------------------------------------------------------------------- code mode

# A code-mode script's shell calls: ``tools.shell_command({command: "...", workdir: ...})``
# (``exec_command`` takes ``cmd``). Only literal strings are read; a call in a loop or with
# a computed command is not paired with a result.
_SCRIPT_CALL = re.compile(r"\btools\.(shell_command|exec_command|shell)\s*\(\s*\{")
_LOOP = re.compile(r"\b(?:for|while)\s*\(|\.(?:map|forEach)\s*\(")
_STRING_FIELD = r'\b{key}\s*:\s*("(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')'


def _js_string(literal: str) -> str | None:
    """A JS string literal's value (double or single quoted, JSON-style escapes)."""
    body = literal[1:-1]
    if literal[0] == "'":
        body = body.replace("\\'", "'").replace('"', '\\"')
    try:
        value = json.loads(f'"{body}"')
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _field(call: str, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        match = re.search(_STRING_FIELD.format(key=key), call)
        if match:
            return _js_string(match.group(1))
    return None


def script_shell_calls(script: str) -> list[dict[str, Any]] | None:
    """The shell calls of a code-mode script in order, each ``{"command", "workdir"?}``,
    when they can be paired with its results one to one: literal commands, no loop.
    None otherwise."""
    if _LOOP.search(script):
        return None
    calls: list[dict[str, Any]] = []
    starts = [m.end() for m in _SCRIPT_CALL.finditer(script)]
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(script)
        body = script[start:end]
        command = _field(body, ("command", "cmd"))
        if command is None:
            return None
        call: dict[str, Any] = {"command": command}
        workdir = _field(body, ("workdir",))
        if workdir:
            call["workdir"] = workdir
        calls.append(call)
    return calls
