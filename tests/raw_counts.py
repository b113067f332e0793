"""What a transcript holds, counted straight from its raw records, independently of the
adapters: the oracle the adapters' output is checked against exactly (test_formats.py).

The counting rules are written here a second time, from the formats as docs/formats.md
states them, in the plainest code that gets them right for the corpus and the fixtures:
no adapter, no store. Where a rule is a decision (what a sub-agent's brief is, whether a
rewound Gemini message still counts), docs/formats.md gives its reason and the adapters
follow the same decision, so the two can be compared.

* prompts: what a person typed (a sub-agent's brief, a review request Codex builds and
  injected context are not); ``briefs`` counts what a parent agent or the runtime sent
  in the user's place;
* messages: assistant messages, each once however many records repeat it;
* tool calls: each invocation once (the model's own calls, and the calls a Codex
  code-mode script made, which Codex records as items of their own);
* commands: the exit code of each shell command that ran (None when none was recorded);
* edits: (file name, operation) for each file an edit touched;
* usage: token totals, each response counted once;
* reported_cost: the dollars the agent itself recorded (Aider's message costs, Crush's
  session costs: a sub-agent session's once, in its parent's).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "reasoning_tokens",
    "total_tokens",
)


@dataclass
class Counts:
    prompts: int = 0
    briefs: int = 0
    messages: int = 0
    tool_calls: int = 0
    commands: list[int | None] = field(default_factory=list)
    edits: list[tuple[str, str]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    reported_cost: float = 0.0

    def normalized(self) -> Counts:
        """Order-free: commands and edits sorted."""
        return Counts(
            self.prompts,
            self.briefs,
            self.messages,
            self.tool_calls,
            sorted(self.commands, key=lambda c: (c is None, c)),
            sorted(self.edits),
            dict(self.usage),
            round(self.reported_cost, 6),
        )


def _lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for raw in path.read_bytes().splitlines():
        if raw.strip():
            obj = json.loads(raw)
            if isinstance(obj, dict):
                out.append(obj)
    return out


def _name(path: str) -> str:
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _patch_edits(patch: str) -> list[tuple[str, str]]:
    edits: list[tuple[str, str]] = []
    for line in patch.splitlines():
        for header, op in (("*** Add File: ", "add"), ("*** Update File: ", "update"), ("*** Delete File: ", "delete")):
            if line.startswith(header):
                edits.append((_name(line[len(header) :].strip()), op))
        if line.startswith("*** Move to: ") and edits and edits[-1][1] == "update":
            edits[-1] = (edits[-1][0], "move")
            edits.append((_name(line[len("*** Move to: ") :].strip()), "move"))
    return edits


# --------------------------------------------------------------------------- Codex

SHELL_TOOLS = frozenset({"exec_command", "shell_command", "shell", "local_shell", "container.exec"})
CODEX_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"})
CODEX_TOOL_ITEMS = frozenset(
    {"CommandExecution", "McpToolCall", "FileChange", "WebSearch", "DynamicToolCall", "ImageView",
     "ImageGeneration"}
)
# Extension items that are tool calls, by kind (a web search, an image generated); the
# others (clock.sleep) ran nothing.
CODEX_EXTENSION_TOOLS = {"web.search": "WebSearch", "image_gen.generation": "ImageGeneration"}
_EXIT = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)$", re.M)


_TRUNCATED = re.compile(r"^Warning: truncated output \(original token count: \d+\)\nTotal output lines: \d+\n\n")
_SHELL_HEADER = ("Exit code: ", "Process exited with code ", "Wall time: ", "Chunk ID: ", "Command: ")


def _exit_code(output: Any) -> int | None:
    """The exit code a shell tool's output states: a JSON string's metadata, or the
    header lines of a text output (after Codex's truncation notice), else None."""
    text = output if isinstance(output, str) else ""
    if isinstance(output, list):
        text = "\n".join(o.get("text", "") for o in output if isinstance(o, dict))
    if text.startswith("{"):
        try:
            return json.loads(text).get("metadata", {}).get("exit_code")
        except (ValueError, AttributeError):
            return None
    text = _TRUNCATED.sub("", text, count=1)
    if not text.startswith(_SHELL_HEADER):
        return None
    header = text.split("\nOutput:\n", 1)[0]
    match = _EXIT.search(header)
    return int(match.group(1)) if match else None


def _codex_own(lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the session's own records, the copy of another session's history it holds).

    A paginated sub-agent copies its parent's rows below ``subagent_history_start_ordinal``.
    A legacy fork writes the parent's session_meta and its history in one burst: the copy
    ends where the child's own turn starts (a task_started while a copied turn is still
    open), or, before task_started existed, at the first pause over a second."""
    meta = lines[0].get("payload", {}) if lines and lines[0].get("type") == "session_meta" else {}
    start = meta.get("subagent_history_start_ordinal")
    if isinstance(start, int):
        copy = [r for r in lines[1:] if isinstance(r.get("ordinal"), int) and r["ordinal"] < start]
        return [lines[0]] + [r for r in lines[1:] if r not in copy], copy
    own_id = meta.get("id")
    j = next(
        (
            i
            for i, rec in enumerate(lines[1:], 1)
            if rec.get("type") == "session_meta" and (rec.get("payload") or {}).get("id") != own_id
        ),
        None,
    )
    if j is None:
        return lines, []
    opened: set[str] = set()
    end = len(lines)
    for i in range(j + 1, len(lines)):
        payload = lines[i].get("payload") or {}
        if lines[i].get("type") == "event_msg" and payload.get("type") == "task_started":
            turn = str(payload.get("turn_id"))
            if opened and turn not in opened:
                end = i
                break
            opened.add(turn)
        elif not opened and i > j + 1 and _gap(lines[i - 1], lines[i]) > 1.0:
            end = i
            break
    return lines[:j] + lines[end:], lines[j:end]


def _gap(a: dict[str, Any], b: dict[str, Any]) -> float:
    from datetime import datetime

    def parse(line: dict[str, Any]) -> datetime:
        return datetime.fromisoformat(str(line.get("timestamp")).replace("Z", "+00:00"))

    return (parse(b) - parse(a)).total_seconds()


def _codex_usage(own: list[dict[str, Any]], copy: list[dict[str, Any]]) -> dict[str, int]:
    usage = dict.fromkeys(USAGE_KEYS, 0)
    names = {
        "input_tokens": "input_tokens",
        "cached_input_tokens": "cache_read_tokens",
        "cache_write_input_tokens": "cache_creation_tokens",
        "output_tokens": "output_tokens",
        "reasoning_output_tokens": "reasoning_tokens",
        "total_tokens": "total_tokens",
    }
    records = {
        rec["payload"].get("response_id"): rec["payload"].get("usage") or {}
        for rec in own
        if rec.get("type") == "token_usage_record"
    }
    if records:
        for one in records.values():
            for theirs, ours in names.items():
                usage[ours] += one.get(theirs) or 0
        return usage

    def last_total(lines: list[dict[str, Any]]) -> dict[str, int]:
        total: dict[str, int] = {}
        for rec in lines:
            p = rec.get("payload") or {}
            if rec.get("type") == "event_msg" and p.get("type") == "token_count":
                total = (p.get("info") or {}).get("total_token_usage") or total
        return total

    end, base = last_total(own), last_total(copy)
    for theirs, ours in names.items():
        usage[ours] = (end.get(theirs) or 0) - (base.get(theirs) or 0)
    return usage


def codex_counts(path: Path) -> Counts:
    lines = _lines(path)
    own, copy = _codex_own(lines)
    meta = lines[0].get("payload", {}) if lines and lines[0].get("type") == "session_meta" else {}
    source = meta.get("source")
    subagent = isinstance(source, dict) and isinstance(source.get("subagent"), dict)
    counts = Counts(usage=_codex_usage(own, copy))
    payloads = [(rec.get("type"), rec.get("payload") or {}) for rec in own]
    events = [p for t, p in payloads if t == "event_msg"]
    items = [p for t, p in payloads if t == "response_item"]
    completed = [(p.get("item") or {}) for p in events if p.get("type") == "item_completed"]

    typed_items = [c for c in completed if c.get("type") == "UserMessage"]
    typed_events = [p for p in events if p.get("type") == "user_message"]
    if subagent:
        counts.briefs = len([i for i in items if i.get("type") == "agent_message"]) + len(typed_events)
    elif typed_items:
        counts.prompts = len(typed_items)
    else:
        counts.prompts = len(
            [p for p in typed_events if not str(p.get("message", "")).lstrip().startswith(("<", "# AGENTS.md"))]
        )

    assistant = [i for i in items if i.get("type") == "message" and i.get("role") == "assistant"]
    ids = {i["id"] for i in assistant if i.get("id")} | {c["id"] for c in completed if c.get("type") == "AgentMessage"}
    counts.messages = len(ids) + len([i for i in assistant if not i.get("id")])

    calls: dict[str, dict[str, Any]] = {}  # call id -> name, done, exit code from an item
    nested: Counter[str] = Counter()  # code-mode exec call id -> items seen inside it
    for kind, p in payloads:
        ptype = p.get("type")
        if kind == "response_item" and ptype in CODEX_CALLS:
            call_id = str(p.get("call_id") or p.get("id"))
            name = p.get("name") or ("tool_search" if ptype == "tool_search_call" else "local_shell")
            calls[call_id] = {"name": name, "done": False, "exit": None}
            counts.tool_calls += 1
            if name == "apply_patch":
                raw = p.get("input") if ptype == "custom_tool_call" else p.get("arguments")
                counts.edits += _patch_edits(raw if isinstance(raw, str) else "")
        elif kind == "response_item" and ptype == "web_search_call":
            calls[str(p.get("id"))] = {"name": "web_search", "done": True, "exit": None}
            counts.tool_calls += 1
        elif kind == "response_item" and ptype in ("function_call_output", "custom_tool_call_output", "tool_search_output"):
            output_of = str(p.get("call_id"))
            call = calls.get(output_of)
            if call is None:
                continue
            call["done"] = True
            if call["name"] in SHELL_TOOLS:
                code = _exit_code(p.get("output"))
                counts.commands.append(code if code is not None else call["exit"])
            elif call["name"] == "exec" and not nested[output_of]:
                # a code-mode script recorded without items (0.144): each shell result
                # it printed is a command that ran
                output = p.get("output")
                for chunk in (output if isinstance(output, list) else [])[1:]:
                    code = _exit_code([chunk])
                    if code is not None:
                        counts.tool_calls += 1
                        counts.commands.append(code)
        elif kind == "event_msg" and ptype == "item_completed":
            item = p.get("item") or {}
            itype = item.get("type")
            itype = "McpToolCall" if itype == "mcpToolCall" else itype
            if itype == "Extension":
                itype = CODEX_EXTENSION_TOOLS.get(str(item.get("kind")), "Extension")
            if itype not in CODEX_TOOL_ITEMS:
                continue
            call = calls.get(str(item.get("id")))
            open_exec = [cid for cid, c in calls.items() if c["name"] == "exec" and not c["done"]]
            if call is None and not open_exec:
                call = _pending_twin(calls, item)
            if call is not None:
                if itype == "CommandExecution":
                    call["exit"] = item.get("exit_code")
                continue
            if open_exec:
                nested[open_exec[-1]] += 1
            counts.tool_calls += 1
            if itype == "CommandExecution":
                counts.commands.append(item.get("exit_code"))
            elif itype == "FileChange":
                for target, change in (item.get("changes") or {}).items():
                    move = (change or {}).get("move_path")
                    op = "move" if move else str((change or {}).get("type"))
                    counts.edits.append((_name(target), op))
                    if move:
                        counts.edits.append((_name(move), "move"))
    return counts.normalized()


def _pending_twin(calls: dict[str, dict[str, Any]], item: dict[str, Any]) -> dict[str, Any] | None:
    """The call an item records when their ids differ: the open call of its kind."""
    itype = item.get("type")
    names: set[str] = set()
    if itype == "CommandExecution":
        names = set(SHELL_TOOLS)
    elif itype == "FileChange":
        names = {"apply_patch"}
    elif itype in ("McpToolCall", "mcpToolCall"):
        names = {str(item.get("tool")), f"mcp__{item.get('server')}__{item.get('tool')}"}
    for call in reversed(calls.values()):
        if not call["done"] and call["name"] in names:
            return call
    return None


# --------------------------------------------------------------------------- Claude Code

# Claude Code's file-writing tools and the operation of their edit (as derive names it).
EDIT_TOOLS = {"Edit": "update", "MultiEdit": "update", "NotebookEdit": "update", "Write": "write"}


def claude_counts(projects: Path) -> dict[str, Counts]:
    """Per session id, over every transcript under ``projects``. A record copied into
    several files (same uuid) is counted once, for the file that is not a background
    copy (``sessionKind: "bg"``) when there is one."""
    records: dict[str, tuple[bool, dict[str, Any], bool]] = {}  # uuid -> (bg, record, in a sub-agent file)
    order: list[str] = []
    for path in sorted(projects.rglob("*.jsonl")):
        sub = path.name.startswith("agent-")
        for obj in _lines(path):
            uid = obj.get("uuid")
            if not uid:
                continue
            bg = obj.get("sessionKind") == "bg"
            if uid not in records:
                order.append(uid)
            if uid not in records or (records[uid][0] and not bg):
                records[uid] = (bg, obj, sub)
    out: dict[str, Counts] = {}
    usage: dict[str, dict[str, dict[str, int]]] = {}
    texts: dict[str, set[str]] = {}
    calls: dict[str, dict[str, str]] = {}
    for uid in order:
        _, obj, sub = records[uid]
        sid = str(obj.get("sessionId"))
        counts = out.setdefault(sid, Counts())
        message = obj.get("message") or {}
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if obj.get("type") == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            for b in results:
                name = calls.get(sid, {}).get(b.get("tool_use_id"))
                if name == "Bash":
                    counts.commands.append(None)  # Claude Code records no exit code for Bash
            if results or obj.get("isMeta") or obj.get("isCompactSummary") or obj.get("promptSource") == "system":
                continue
            parts = [content] if isinstance(content, str) else [b.get("text", "") for b in blocks if b.get("type") == "text"]
            typed = [
                t
                for t in (re.sub(r"^<uploaded_files>.*?</uploaded_files>\s*", "", p.strip(), flags=re.S) for p in parts)
                if t and not t.startswith(("<", "[Request interrupted", "This session is being continued"))
            ]
            if (sub or obj.get("isSidechain")) and obj.get("isSidechain") and obj.get("parentUuid") is None:
                counts.briefs += 1  # the root of a sidechain: the sub-agent's brief
            elif typed or sub or obj.get("isSidechain"):
                counts.prompts += 1
        elif obj.get("type") == "assistant" and message.get("model") != "<synthetic>":
            mid = message.get("id") or uid
            if any(b.get("type") == "text" for b in blocks):
                texts.setdefault(sid, set()).add(mid)
            for b in blocks:
                if b.get("type") == "tool_use":
                    calls.setdefault(sid, {})[b["id"]] = b.get("name")
                    if b.get("name") in EDIT_TOOLS:
                        inp = b.get("input") or {}
                        target = inp.get("file_path") or inp.get("notebook_path") or ""
                        counts.edits.append((_name(target), EDIT_TOOLS[b["name"]]))
            snapshot = message.get("usage") or {}
            best = usage.setdefault(sid, {}).setdefault(mid, dict.fromkeys(USAGE_KEYS, 0))
            for theirs, ours in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                                 ("cache_read_input_tokens", "cache_read_tokens"),
                                 ("cache_creation_input_tokens", "cache_creation_tokens")):
                best[ours] = max(best[ours], snapshot.get(theirs) or 0)
    for sid, counts in out.items():
        counts.messages = len(texts.get(sid, ()))
        counts.tool_calls = len(calls.get(sid, {}))
        for one in usage.get(sid, {}).values():
            for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens"):
                counts.usage[key] += one[key]
        counts.usage["total_tokens"] = sum(counts.usage[k] for k in USAGE_KEYS[:4])
        out[sid] = counts.normalized()
    return out


# --------------------------------------------------------------------------- Gemini CLI

GEMINI_EDITS = {"write_file": "write", "replace": "update"}
_GEMINI_EXIT = re.compile(r"^Exit Code: (-?\d+)$", re.M)


def gemini_counts(path: Path) -> tuple[Counts, set[str]]:
    """Counts over every message the file ever held, the last copy of each id (a message
    is written again as its tokens and tool calls arrive), and the ids a ``$rewindTo``
    took out of the conversation: they happened, so they count (docs/formats.md)."""
    messages: dict[str, dict[str, Any]] = {}
    rewound: set[str] = set()
    for obj in _lines(path):
        if "$rewindTo" in obj:
            ids = list(messages)
            cut = ids.index(obj["$rewindTo"]) if obj["$rewindTo"] in ids else 0
            rewound |= {i for i in ids[cut:]}
        elif "$set" in obj:
            for message in (obj["$set"] or {}).get("messages") or []:
                messages[message["id"]] = message
        elif isinstance(obj.get("id"), str) and "type" in obj:
            messages[obj["id"]] = obj
    counts = Counts()
    for message in messages.values():
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"text": content}] if isinstance(content, str) else []
        text = "".join(p.get("text", "") for p in parts if isinstance(p, dict) and not p.get("thought"))
        if message.get("type") == "user":
            if text.strip() and not text.lstrip().startswith(("<session_context>", "<hook_context>")):
                counts.prompts += 1
        elif message.get("type") == "gemini":
            counts.messages += bool(text.strip())
            for call in message.get("toolCalls") or []:
                counts.tool_calls += 1
                args = call.get("args") or {}
                if call.get("name") in GEMINI_EDITS:
                    counts.edits.append((_name(args.get("file_path", "")), GEMINI_EDITS[call["name"]]))
                if call.get("name") == "run_shell_command" and call.get("result"):
                    output = json.dumps(call["result"])
                    match = _GEMINI_EXIT.search(
                        "\n".join(r["functionResponse"]["response"].get("output", "") for r in call["result"])
                    )
                    counts.commands.append(int(match.group(1)) if match else (0 if "Output:" in output else None))
            tokens = message.get("tokens") or {}
            counts.usage["input_tokens"] += (tokens.get("input") or 0) + (tokens.get("tool") or 0)
            counts.usage["output_tokens"] += tokens.get("output") or 0
            counts.usage["cache_read_tokens"] += tokens.get("cached") or 0
            counts.usage["reasoning_tokens"] += tokens.get("thoughts") or 0
            counts.usage["total_tokens"] += tokens.get("total") or 0
    return counts.normalized(), rewound


# --------------------------------------------------------------------------- Aider

_AIDER_RUN = "# aider chat started at "
_AIDER_CHAT_COMMANDS = ("/code", "/ask", "/architect", "/context", "/help")


def _aider_tokens(text: str) -> int:
    text = text.replace(",", "")
    return round(float(text[:-1]) * 1000) if text.endswith("k") else int(float(text))


def aider_counts(chat: Path) -> dict[str, Counts]:
    """Per run (keyed by its start as written), from the Markdown as aider/io.py writes
    it: ``#### `` lines ending in two spaces are typed input (a block of them one
    input); ``> `` notes end in two spaces, and a note whose first line does not runs on
    to the line that does; any other line after a blank one starts the model's answer,
    which runs to the next input, note or run. Prompts: inputs that are not slash
    commands, Aider's answered questions, empty inputs or the copy Aider writes of a
    chat command's argument (a chat command with an argument is one prompt). Tool calls:
    ``Applied edit to``, ``Commit``, ``Running`` notes, and ``!``, ``/run``, ``/test``,
    ``/git`` inputs (commands, no exit code). Edits: write when the file was confirmed
    created or the edit format rewrites whole files, else update."""
    runs: dict[str, Counts] = {}
    counts: Counts | None = None
    lines = chat.read_text(encoding="utf-8", errors="replace").split("\n")
    mode = ""  # "", "note" (a note runs on), "answer"
    fmt, created, last_note, echo = "", [], "", None
    i = 0
    while i < len(lines):
        line = lines[i].removesuffix("\r")
        i += 1
        if mode == "note":
            if line.endswith("  "):
                mode = ""
            continue
        is_input = line.startswith("#### ") and line.endswith("  ")
        is_note = line.startswith(">") and (line.startswith("> ") or line.strip() == ">")
        if mode == "answer" and not (line.startswith(_AIDER_RUN) or is_input
                                     or (is_note and line.endswith("  "))
                                     or line.startswith("> Tokens: ")):
            continue
        mode = ""
        if line.startswith(_AIDER_RUN):
            counts = runs.setdefault(line[len(_AIDER_RUN):].strip(), Counts())
            fmt, created, last_note, echo = "", [], "", None
            continue
        if counts is None or not line.strip():
            continue
        if is_input:
            block = [line[5:-2]]
            while i < len(lines) and lines[i].startswith("#### ") and lines[i].endswith("  "):
                block.append(lines[i][5:-2])
                i += 1
            typed = "\n".join(block)
            if not typed.strip() or typed.strip() == "<blank>" or "(Y)es/(N)o" in typed:
                continue
            if echo is not None and (typed == echo or (echo == "/help" and typed.startswith("# Question: "))):
                echo = None
                continue
            echo = None
            word, _, rest = typed.partition(" ")
            if typed.startswith("!") or word in ("/run", "/test", "/git"):
                counts.tool_calls += 1
                counts.commands.append(None)
            elif word in _AIDER_CHAT_COMMANDS and rest.strip():
                counts.prompts += 1
                created = []
                echo = "/help" if word == "/help" else rest.strip()
            elif not word.startswith("/"):
                counts.prompts += 1
                created = []
            continue
        if is_note:
            text = line[2:].rstrip() if line.startswith("> ") else ""
            if not line.endswith("  "):
                mode = "note"
                if text.startswith("Tokens: "):  # the cost is on the note's last line
                    text = text + " " + lines[i].strip()
            if text.startswith("Tokens: "):
                m = re.match(r"Tokens: ([\d.,]+k?) sent(?:, ([\d.,]+k?) cache write)?"
                             r"(?:, ([\d.,]+k?) cache hit)?(?:, ([\d.,]+k?) cached)?"
                             r", ([\d.,]+k?) received\.(?: +Cost: \$([\d.]+))?", text)
                assert m is not None, text
                sent, write, hit, cached, received, cost = m.groups()
                hit = hit or cached  # Aider before 0.6x: "N cached"
                counts.usage["input_tokens"] += _aider_tokens(sent)
                counts.usage["cache_creation_tokens"] += _aider_tokens(write) if write else 0
                counts.usage["cache_read_tokens"] += _aider_tokens(hit) if hit else 0
                counts.usage["output_tokens"] += _aider_tokens(received)
                counts.usage["total_tokens"] += _aider_tokens(sent) + _aider_tokens(received)
                counts.reported_cost += float(cost) if cost else 0.0
            elif text.startswith("Applied edit to "):
                path = text[len("Applied edit to "):]
                counts.tool_calls += 1
                whole = fmt in ("whole", "editor-whole")
                counts.edits.append((_name(path), "write" if whole or path in created else "update"))
            elif re.match(r"Commit [0-9a-f]{7,40} ", text):
                counts.tool_calls += 1
            elif text.startswith("Running "):
                counts.tool_calls += 1
                counts.commands.append(None)
            elif text.startswith("Main model: ") and " with " in text:
                fmt = text.split(" with ", 1)[1].split(" ", 1)[0]
            elif text.startswith("Create new file?") and text.rstrip().endswith(": y"):
                created.append(last_note)
            last_note = text
            continue
        mode = "answer"
        counts.messages += 1
    return {start: c.normalized() for start, c in runs.items()}


# --------------------------------------------------------------------------- Crush

CRUSH_EDITS = {"write": "write", "edit": "update", "multiedit": "update"}
_CRUSH_EXIT = re.compile(r"Exit code (-?\d+)\s*$")
CRUSH_INIT_PROMPTS = ("`Please analyze this codebase and create a **CRUSH.md** file",
                      "Analyze this codebase and create/update **")


def crush_counts(db: Path) -> dict[str, Counts]:
    """Per session, from a copy of a Crush database read with the standard library:
    prompts are user messages other than Crush's initialize prompt; messages the
    non-empty text parts of finished assistant messages; tool calls their tool_call
    parts; commands the bash results' exit codes (the last ``Exit code N`` of the run's
    output, 0 without one, None for a refused call); edits write/edit/multiedit calls
    (an edit with an empty old_string writes); usage the session row's tokens; cost the
    session row's, a sub-agent's counted once, in its parent's."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out: dict[str, Counts] = {}
    parents: dict[str, str | None] = {}
    for sid, parent, prompt, completion, cost in conn.execute(
        "SELECT id, parent_session_id, prompt_tokens, completion_tokens, cost FROM sessions"
    ):
        c = out.setdefault(sid, Counts())
        parents[sid] = parent
        c.usage["input_tokens"] = prompt
        c.usage["output_tokens"] = completion
        c.usage["total_tokens"] = prompt + completion
        c.reported_cost = 0.0 if parent and not sid.startswith("title-") else cost
    for sid, role, parts_json, finished in conn.execute(
        "SELECT session_id, role, parts, finished_at FROM messages ORDER BY rowid"
    ):
        c = out.setdefault(sid, Counts())
        parts = json.loads(parts_json)
        if role == "user":
            text = "\n".join(p["data"].get("text", "") for p in parts if p["type"] == "text")
            if text.strip() and not text.strip().startswith(CRUSH_INIT_PROMPTS):
                c.prompts += 1
        elif role == "assistant":
            if not any(p["type"] == "finish" for p in parts) and finished is None:
                continue
            for p in parts:
                data = p["data"]
                if p["type"] == "text" and data.get("text", "").strip():
                    c.messages += 1
                elif p["type"] == "tool_call":
                    c.tool_calls += 1
                    args = json.loads(data.get("input") or "{}")
                    if data["name"] in CRUSH_EDITS:
                        op = CRUSH_EDITS[data["name"]]
                        if data["name"] == "edit" and args.get("old_string") == "":
                            op = "write"
                        c.edits.append((_name(args.get("file_path", "")), op))
        elif role == "tool":
            for p in parts:
                data = p["data"]
                if p["type"] != "tool_result" or not data.get("metadata", "").startswith('{"start_time"'):
                    continue
                if data.get("is_error"):
                    c.commands.append(None)
                    continue
                output = json.loads(data["metadata"]).get("output", "")
                match = _CRUSH_EXIT.search(output.rstrip())
                c.commands.append(int(match.group(1)) if match else 0)
    conn.close()
    return {sid: c.normalized() for sid, c in out.items()}
