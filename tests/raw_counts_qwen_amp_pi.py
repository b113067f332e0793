"""What a Qwen Code, Amp or Pi transcript holds, counted straight from its raw records,
independently of the adapters (tests/raw_counts.py does the same for the first agents).

The rules are written a second time from docs/formats.md, in the plainest code that gets
them right for the corpus and the fixtures; where a rule is a decision (which usage
record is a request, what a fork's copy is), docs/formats.md gives its reason.

* prompts: what a person typed (``briefs``: what a sub-agent was told, what the runtime
  or an extension sent in the user's role);
* messages: assistant records with text; tool calls: the model's calls;
* commands: the exit code of each shell command (None where none was recorded), the
  ones a person ran in Pi (``!``) included;
* edits: (file name, operation) per file-writing call;
* usage: token totals, each request once; ``cost``: the dollars the agent recorded.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from raw_counts import Counts

EDIT_OPS = {
    "qwen": {"edit": "update", "replace": "update", "write_file": "write"},
    "amp": {"edit_file": "update", "undo_edit": "update", "create_file": "write"},
    "pi": {"edit": "update", "write": "write"},
}
_QWEN_EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)
_PI_EXIT = re.compile(r"^Command exited with code (-?\d+)$", re.M)


def _name(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip()]


def _add_usage(counts: Counts, inp: int, out: int, read: int, write: int, reasoning: int, total: int) -> None:
    for key, value in (("input_tokens", inp), ("output_tokens", out), ("cache_read_tokens", read),
                       ("cache_creation_tokens", write), ("reasoning_tokens", reasoning),
                       ("total_tokens", total)):
        counts.usage[key] += value


# --------------------------------------------------------------------------- Qwen Code


def qwen_counts(path: Path) -> Counts:
    """A JSONL chat. Usage: each ``api_response`` telemetry record; an assistant record's
    own ``usageMetadata`` only when no telemetry came since the previous answer."""
    counts = Counts()
    calls: dict[str, str] = {}
    telemetry = False
    for rec in _lines(path):
        kind, subtype = rec.get("type"), rec.get("subtype")
        parts = (rec.get("message") or {}).get("parts") or []
        if kind == "user":
            display = (rec.get("systemPayload") or {}).get("displayText")
            text = display if isinstance(display, str) else "".join(p.get("text", "") for p in parts)
            if not text.strip() or text.startswith("This is the Qwen Code."):
                continue
            if subtype in ("cron", "notification", "goal_runtime") or rec.get("isSidechain"):
                counts.briefs += 1
            else:
                counts.prompts += 1
        elif kind == "assistant":
            if any("text" in p and not p.get("thought") for p in parts):
                counts.messages += 1
            for p in parts:
                call = p.get("functionCall")
                if call:
                    counts.tool_calls += 1
                    calls[call["id"]] = call["name"]
                    if call["name"] in EDIT_OPS["qwen"]:
                        counts.edits.append((_name(call["args"]["file_path"]), EDIT_OPS["qwen"][call["name"]]))
            meta = rec.get("usageMetadata")
            if meta and not telemetry:
                prompt, out = meta.get("promptTokenCount", 0), meta.get("candidatesTokenCount", 0)
                thoughts, total = meta.get("thoughtsTokenCount", 0), meta.get("totalTokenCount", 0)
                out_all = out if (not thoughts or total == prompt + out) else out + thoughts
                _add_usage(counts, prompt, out_all, meta.get("cachedContentTokenCount", 0), 0, thoughts,
                           total or prompt + out_all)
            telemetry = False
        elif kind == "tool_result":
            for p in parts:
                response = p["functionResponse"]
                if calls.get(response["id"]) == "run_shell_command":
                    output = response["response"].get("output") or response["response"].get("error") or ""
                    found = _QWEN_EXIT.findall(output)
                    counts.commands.append(int(found[-1]) if found else None)
        elif kind == "system" and subtype == "ui_telemetry":
            event = rec["systemPayload"]["uiEvent"]
            if event["event.name"] == "qwen-code.api_response":
                telemetry = True
                thoughts = event["thoughts_token_count"]
                out = event["output_token_count"]
                if event.get("auth_type") not in ("openai", "qwen-oauth"):
                    out += thoughts
                _add_usage(counts, event["input_token_count"] + event["tool_token_count"], out,
                           event["cached_content_token_count"], 0, thoughts, event["total_token_count"])
    return counts.normalized()


def qwen_document_counts(path: Path) -> Counts:
    """A first-version ``session-*.json`` document (Gemini CLI's messages, ``qwen`` for
    the assistant's type)."""
    counts = Counts()
    for msg in json.loads(path.read_bytes())["messages"]:
        content = msg.get("content")
        text = content if isinstance(content, str) else ""
        if msg["type"] == "user":
            counts.prompts += bool(text.strip()) and not text.startswith("This is the Qwen Code.")
        elif msg["type"] == "qwen":
            counts.messages += bool(text.strip())
            for call in msg.get("toolCalls") or []:
                counts.tool_calls += 1
                if call["name"] in EDIT_OPS["qwen"]:
                    counts.edits.append((_name(call["args"]["file_path"]), EDIT_OPS["qwen"][call["name"]]))
                if call["name"] == "run_shell_command":
                    output = call["result"][0]["functionResponse"]["response"]["output"]
                    found = _QWEN_EXIT.findall(output)
                    counts.commands.append(int(found[-1]) if found else None)
            tokens = msg.get("tokens") or {}
            _add_usage(counts, tokens["input"] + tokens["tool"], tokens["output"], tokens["cached"], 0,
                       tokens["thoughts"], tokens["total"])
    return counts.normalized()


# --------------------------------------------------------------------------- Amp


def amp_counts(path: Path) -> tuple[Counts, Decimal]:
    """A thread document. Usage: each assistant message's ``usage`` (or, when it has none
    yet, its ``inference`` ledger event), and every other ledger event. Cost: credits
    are cents."""
    thread = json.loads(path.read_bytes())
    counts = Counts()
    cost = Decimal(0)
    names: dict[str, str] = {}
    answers = {m["messageId"]: m for m in thread["messages"] if m["role"] == "assistant"}
    billed: dict[int, dict[str, Any]] = {}
    for event in thread.get("usageLedger", {}).get("events", []):
        if event.get("operationType") == "inference" and event.get("toMessageId") in answers:
            billed[event["toMessageId"]] = event
        else:
            tokens = event["tokens"]
            _add_usage(counts, tokens["input"], tokens["output"], 0, 0, 0, tokens["input"] + tokens["output"])
            cost += Decimal(str(event["credits"])) / 100
    for msg in thread["messages"]:
        blocks = msg["content"]
        if msg["role"] == "user":
            if any(b["type"] == "text" and b["text"].strip() for b in blocks):
                counts.prompts += 1
            for b in blocks:
                if b["type"] == "tool_result" and names.get(b["toolUseID"]) == "Bash":
                    result = b["run"].get("result")
                    counts.commands.append(result.get("exitCode") if isinstance(result, dict) else None)
        elif msg["role"] == "assistant" and msg.get("state", {}).get("type") != "streaming":
            counts.messages += any(b["type"] == "text" for b in blocks)
            for b in blocks:
                if b["type"] == "tool_use":
                    counts.tool_calls += 1
                    names[b["id"]] = b["name"]
                    if b["name"] in EDIT_OPS["amp"]:
                        counts.edits.append((_name(b["input"]["path"]), EDIT_OPS["amp"][b["name"]]))
            usage = msg.get("usage")
            if usage:
                parts = [usage["inputTokens"], usage["outputTokens"], usage["cacheReadInputTokens"],
                         usage["cacheCreationInputTokens"]]
                _add_usage(counts, *parts, 0, sum(parts))
                cost += Decimal(str(usage["credits"])) / 100
            elif msg["messageId"] in billed:
                event = billed[msg["messageId"]]
                tokens = event["tokens"]
                _add_usage(counts, tokens["input"], tokens["output"], 0, 0, 0, tokens["input"] + tokens["output"])
                cost += Decimal(str(event["credits"])) / 100
    return counts.normalized(), cost


# --------------------------------------------------------------------------- Pi


def pi_counts(path: Path) -> tuple[Counts, Decimal]:
    """A session file, every entry of it (a fork's copies of its parent's entries
    included: which session owns them is the store's question, not the file's)."""
    counts = Counts()
    cost = Decimal(0)
    for entry in _lines(path):
        message = entry.get("message") or {}
        role = message.get("role")
        if entry["type"] == "custom_message":
            counts.briefs += 1
        if entry["type"] != "message":
            continue
        content = message.get("content")
        if role == "user":
            texts = [content] if isinstance(content, str) else [b["text"] for b in content if b["type"] == "text"]
            counts.prompts += any(t.strip() for t in texts)
        elif role == "assistant":
            counts.messages += any(b["type"] == "text" and b["text"].strip() for b in content)
            for b in content:
                if b["type"] == "toolCall":
                    counts.tool_calls += 1
                    if b["name"] in EDIT_OPS["pi"]:
                        counts.edits.append((_name(b["arguments"]["path"]), EDIT_OPS["pi"][b["name"]]))
            usage = message["usage"]
            parts = [usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"]]
            if any(parts):
                _add_usage(counts, *parts, 0, usage["totalTokens"])
                cost += Decimal(str(usage["cost"]["total"]))
        elif role == "toolResult" and message["toolName"] == "bash":
            text = "\n".join(b["text"] for b in message["content"] if b["type"] == "text")
            found = _PI_EXIT.findall(text)
            counts.commands.append(int(found[-1]) if found else (None if message["isError"] else 0))
        elif role == "bashExecution":
            counts.commands.append(message.get("exitCode"))
    return counts.normalized(), cost
