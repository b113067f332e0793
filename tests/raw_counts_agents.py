"""What a Cursor, Cline (Roo Code, Kilo Code, the Cline SDK) or Continue transcript holds,
counted straight from its raw records, independently of the adapters: the oracle
tests/test_agents_a.py checks the adapters' events against exactly. The rules are those
docs/formats.md states for each agent, written again in the plainest code (see
tests/raw_counts.py for the first agents', and what each count means).

``cost`` is the dollars the agent itself recorded (``reported``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raw_counts import Counts


@dataclass
class AgentCounts(Counts):
    cost: float = 0.0
    costs: int = 0  # how many usage records carried a cost


def _name(path: Any) -> str:
    return str(path or "").replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]


# --------------------------------------------------------------------------- Cursor

CURSOR_EDITS = {"StrReplace": "update", "Write": "write", "Delete": "delete"}


def cursor_counts(path: Path) -> AgentCounts:
    """A Cursor transcript: a prompt is a user record with a ``<user_query>`` (a
    sub-agent's is its brief); each assistant record (JSONL line, text block) with text
    outside ``<think>`` and the tool lines is one message; every tool use is a call;
    a Shell call is a command (no exit code is ever recorded)."""
    counts = AgentCounts()
    brief = path.parent.name == "subagents"
    if path.suffix == ".jsonl":
        for rec in _json_lines(path):
            blocks = rec["message"]["content"]
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            if rec["role"] == "user" and "<user_query>" in text:
                if brief:
                    counts.briefs += 1
                else:
                    counts.prompts += 1
            if rec["role"] == "assistant":
                counts.messages += bool(text.strip())
                for b in blocks:
                    if b.get("type") == "tool_use":
                        _cursor_call(counts, b["name"], b.get("input") or {})
        return counts
    text = path.read_text(encoding="utf-8")
    pieces = re.split(r"^(user|assistant):[ \t]*$", text, flags=re.M)
    for role, body in zip(pieces[1::2], pieces[2::2], strict=True):
        if role == "user":
            counts.prompts += "<user_query>" in body
            continue
        body = re.sub(r"<think>.*?(?:</think>|\Z)", "\n\x00\n", body, flags=re.S)
        prose: list[str] = []
        in_call = False
        for line in body.split("\n"):
            if line.startswith("[Tool call] "):
                in_call = True
                name = line[len("[Tool call] ") :].strip()
                path_arg = None
                counts.tool_calls += 1
                counts.commands += [None] if name == "Shell" else []
                if name in CURSOR_EDITS:
                    counts.edits.append(("?", CURSOR_EDITS[name]))  # its path follows
                continue
            if line.startswith("[Tool result] ") or line == "\x00":
                in_call = False
                continue
            if in_call:
                if line.startswith("  path: ") and path_arg is None:
                    path_arg = line[len("  path: ") :]
                    if counts.edits and counts.edits[-1][0] == "?":
                        counts.edits[-1] = (_name(path_arg), counts.edits[-1][1])
                continue
            prose.append(line)
        counts.messages += bool("".join(prose).strip())
    return counts


def _cursor_call(counts: AgentCounts, name: str, args: dict[str, Any]) -> None:
    counts.tool_calls += 1
    if name == "Shell":
        counts.commands.append(None)
    if name in CURSOR_EDITS:
        counts.edits.append((_name(args.get("path")), CURSOR_EDITS[name]))


# --------------------------------------------------------------------------- Cline family

CLINE_EDITS = {"editedExistingFile": "update", "appliedDiff": "update", "newFileCreated": "write",
               "fileDeleted": "delete"}
CLINE_CALL_ROWS = {"tool", "command", "use_mcp_server", "browser_action_launch", "new_task",
                   "use_subagents"}
USAGE_NAMES = {"tokensIn": "input_tokens", "tokensOut": "output_tokens",
               "cacheReads": "cache_read_tokens", "cacheWrites": "cache_creation_tokens"}
_CLINE_EXIT = re.compile(r"\(exit code (-?\d+)\)|failed with exit code (-?\d+)")
_ROO_EXIT = re.compile(r"Exit code: (-?\d+)")


def cline_counts(task: Path, agent: str = "cline") -> AgentCounts:
    """A task folder of Cline, Roo Code or Kilo Code: its ``ui_messages.json`` rows, and
    for Roo Code and Kilo Code the commands' exit codes in the API history."""
    rows = json.loads((task / "ui_messages.json").read_bytes())
    counts = AgentCounts()
    pending_command = False
    for i, row in enumerate(rows):
        name = row.get("say") or row.get("ask")
        text = row.get("text") or ""
        if name in ("task", "user_feedback") or (i == 0 and name == "text"):
            counts.prompts += bool(text.strip())
        elif name == "text" or (row["type"] == "say" and name == "completion_result"):
            counts.messages += bool(text.strip())
        elif name in ("followup", "plan_mode_respond", "act_mode_respond"):
            counts.messages += 1
        elif name in CLINE_CALL_ROWS:
            counts.tool_calls += 1
            if name == "tool":
                spec = json.loads(text)
                if spec["tool"] in CLINE_EDITS:
                    counts.edits.append((_name(spec.get("path")), CLINE_EDITS[spec["tool"]]))
            pending_command = name == "command"
        elif name in ("api_req_started", "deleted_api_reqs", "subagent_usage"):
            spec = json.loads(text)
            if name == "api_req_started" and pending_command and agent == "cline":
                match = _CLINE_EXIT.search(spec.get("request", ""))
                counts.commands.append(int(next(g for g in match.groups() if g)) if match else None)
            if name == "api_req_started":
                pending_command = False
            _cline_usage(counts, spec, agent)
    if agent != "cline" and (task / "api_conversation_history.json").exists():
        history = json.loads((task / "api_conversation_history.json").read_bytes())
        commands = {b["id"] for m in history if m["role"] == "assistant" and isinstance(m["content"], list)
                    for b in m["content"] if b.get("type") == "tool_use" and b["name"] == "execute_command"}
        for message in history:
            if message["role"] != "user" or not isinstance(message["content"], list):
                continue
            for b in message["content"]:
                body = b.get("content") if b.get("type") == "tool_result" else b.get("text", "")
                body = body if isinstance(body, str) else "".join(x.get("text", "") for x in body)
                if (b.get("type") == "tool_result" and b["tool_use_id"] in commands) or (
                    b.get("type") == "text" and body.startswith("[execute_command for ")
                ):
                    match = _ROO_EXIT.search(body)
                    counts.commands.append(int(match.group(1)) if match else None)
    return counts


def _cline_usage(counts: AgentCounts, spec: dict[str, Any], agent: str) -> None:
    values = {ours: int(spec.get(theirs) or 0) for theirs, ours in USAGE_NAMES.items()}
    cost = spec.get("cost")
    if not any(values.values()) and not cost:
        return  # a request that failed: nothing billed, nothing counted
    cache = values["cache_read_tokens"] + values["cache_creation_tokens"]
    if agent != "cline" and values["input_tokens"] >= cache:
        values["input_tokens"] -= cache  # Roo Code 3.30+: the whole input, cache included
    for key, n in values.items():
        counts.usage[key] += n
    counts.usage["total_tokens"] += sum(values.values())
    if isinstance(cost, int | float):
        counts.cost += cost
        counts.costs += 1


def cline_session_counts(session: Path) -> AgentCounts:
    """A Cline SDK session folder: the lead's and the sub-agents' messages."""
    counts = AgentCounts()
    for path in sorted(session.glob("*.messages.json")):
        doc = json.loads(path.read_bytes())
        lead = path.name == f"{session.name}.messages.json"
        names: dict[str, str] = {}
        for message in doc["messages"]:
            for b in message["content"]:
                kind = b.get("type")
                if message["role"] == "user" and kind == "text" and b["text"].strip():
                    if lead:
                        counts.prompts += 1
                    else:
                        counts.briefs += 1
                    break
            texts = [b for b in message["content"] if b.get("type") == "text" and b["text"].strip()]
            if message["role"] == "assistant":
                counts.messages += bool(texts)
                for b in message["content"]:
                    if b.get("type") == "tool_use":
                        counts.tool_calls += 1
                        names[b["id"]] = b["name"]
                        if b["name"] == "editor":
                            op = "update" if b["input"].get("old_text") else "write"
                            counts.edits.append((_name(b["input"]["path"]), op))
                metrics = message.get("metrics") or {}
                for theirs, ours in (("inputTokens", "input_tokens"), ("outputTokens", "output_tokens"),
                                     ("cacheReadTokens", "cache_read_tokens"),
                                     ("cacheWriteTokens", "cache_creation_tokens")):
                    counts.usage[ours] += metrics.get(theirs, 0)
                    counts.usage["total_tokens"] += metrics.get(theirs, 0)
                if "cost" in metrics:
                    counts.cost += metrics["cost"]
                    counts.costs += 1
            for b in message["content"]:
                if b.get("type") == "tool_result" and names.get(b["tool_use_id"]) == "run_commands":
                    counts.commands += [None] * len(json.loads(b["content"]))
    return counts


# --------------------------------------------------------------------------- Continue

CONTINUE_EDITS = {"create_new_file": "write", "edit_existing_file": "update",
                  "single_find_and_replace": "update", "multi_edit": "update"}


def continue_counts(path: Path) -> AgentCounts:
    """A Continue session: user messages with text are prompts, assistant messages with
    text are messages, each tool call a call; a terminal command that finished is a
    command, its exit code in its output's status; usage per assistant message, else
    the session's running total."""
    doc = json.loads(path.read_bytes())
    counts = AgentCounts()
    per_message = any("usage" in item["message"] for item in doc["history"])
    for item in doc["history"]:
        message = item["message"]
        content = message.get("content")
        text = content if isinstance(content, str) else "".join(
            p.get("text", "") for p in content or [] if isinstance(p, dict))
        if message["role"] == "user":
            counts.prompts += bool(text.strip())
        if message["role"] != "assistant":
            continue
        counts.messages += bool(text.strip())
        states = {s["toolCallId"]: s for s in item.get("toolCallStates") or []}
        for call in message.get("toolCalls") or []:
            counts.tool_calls += 1
            name = call["function"]["name"]
            state = states.get(call["id"], {})
            args = state.get("parsedArgs") or json.loads(call["function"]["arguments"] or "{}")
            if name in CONTINUE_EDITS:
                counts.edits.append((_name(args.get("filepath")), CONTINUE_EDITS[name]))
            if name == "run_terminal_command" and state.get("status") in ("done", "errored"):
                status = " ".join(o.get("status", "") for o in state.get("output") or [])
                failed = re.search(r"exit code (-?\d+)", status)
                counts.commands.append(int(failed.group(1)) if failed else 0 if "completed" in status else None)
        if per_message and "usage" in message:
            _continue_usage(counts, message["usage"])
    if not per_message and "usage" in doc:
        _continue_usage(counts, doc["usage"])
        counts.cost += doc["usage"].get("totalCost", 0)
        counts.costs += 1
    return counts


def _continue_usage(counts: AgentCounts, usage: dict[str, Any]) -> None:
    details = usage.get("promptTokensDetails") or {}
    counts.usage["input_tokens"] += usage["promptTokens"]
    counts.usage["output_tokens"] += usage["completionTokens"]
    counts.usage["cache_read_tokens"] += details.get("cachedTokens", 0)
    counts.usage["cache_creation_tokens"] += details.get("cacheWriteTokens", 0)
    counts.usage["reasoning_tokens"] += (usage.get("completionTokensDetails") or {}).get("reasoningTokens", 0)
    counts.usage["total_tokens"] += usage["promptTokens"] + usage["completionTokens"]
