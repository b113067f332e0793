"""Aider adapter: the Markdown chat history Aider appends to in a repository, with its
input and LLM histories, in; normalized records out. Pure: ingest hands it complete
lines (``common.TextLines``) and it says how far it used them (``common.TextRead``).

What Aider writes (aider/io.py and aider/coders/base_coder.py in Aider-AI/aider, every
record one ``write`` of ``InputOutput.append_chat_history``):

* ``.aider.chat.history.md``: each run of Aider starts with ``# aider chat started at
  YYYY-MM-DD HH:MM:SS`` (local time); what the person typed is ``#### <line>  `` (two
  trailing spaces; a multi-line input is consecutive such lines); Aider's notes are
  ``> <text>  `` (a note of several lines has ``> `` on its first line only and the two
  spaces on its last); the model's answer is plain Markdown between them, after a blank
  line. Aider writes its own questions' answers as notes (``Add file to the chat?
  (Y)es/...: y``) and, when a group answer applies, as ``#### `` lines: never prompts.
* ``.aider.input.history``: prompt_toolkit's history, ``# <local time with
  microseconds>`` then ``+<line>`` per typed line: the times of what was typed.
* ``.aider.llm.history`` (only with ``--llm-history-file``): ``TO LLM <local time>`` and
  the request's messages, ``LLM RESPONSE <local time>`` and the answer, each line
  prefixed with its role.

A session is one run: its id is ``<start as YYYYMMDDTHHMMSS>-<8 hex of the project
folder's path>`` (a second run started in the same second gets ``-2``), stable across
restarts of agentsrc, changed when the project folder moves. Each prompt opens a turn.
Aider's notes give the version, model and edit format, ``Applied edit to <path>``
(an ``edit`` tool call: the edit), ``Commit <hash> <message>`` (a ``commit`` tool
call), ``Running <command>`` (a ``run`` tool call: a command the model suggested and the
person let run; ``/run``, ``!``, ``/test`` and ``/git`` inputs are run the same way),
``Tokens: ... sent, ... received. Cost: $... message, $... session.`` (a usage event
whose ``cost`` is the message's, as Aider reported it) and ``litellm...Error`` (an
error). Other notes (file lists, warnings, help) are Aider's output: ignored.

Times are local times without a zone; they are read in this machine's zone (where
Aider ran). A prompt's time is its input-history entry's; an answer's is its LLM
response's; anything else takes the last time known in its run.

What the model saw: each ``TO LLM`` request is handed to the scan stage as a transient
``request`` event (never stored: ``events.TRANSIENT_KINDS``) in the session and turn it
was sent in (by its time), so a secret in a file added to the chat is found.

Records span lines and the file grows while Aider runs: a record is final once the next
one starts; the last one is emitted when the file has been quiet (``final``), and its
start is where the next read begins (``TextRead.reopen``), so a record that grows later
is emitted again whole, its events under the same keys with a higher revision (the
record's length). The persisted state is always the state before the last record.

Long on purpose (over 600 lines): the chat's framing, its two companions' framing and the run's reading
are one format (three files written together); each part alone would only be read here.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..events import (
    ERROR,
    MESSAGE,
    PROMPT,
    REQUEST,
    TOOL_CALL,
    TOOL_RESULT,
    USAGE,
    Drift,
    Event,
    Record,
)
from .common import LineContext, LineRules, TextLines, TextRead, first_line, open_turn_in_state
from .common import nonempty_str as _str
from .injected import person_text

NAME = "aider"
CHAT_FILE = ".aider.chat.history.md"
INPUT_FILE = ".aider.input.history"
LLM_FILE = ".aider.llm.history"
INPUT = "input"  # the companions' names (ingest.sources.companions_of)
LLM = "llm"
COMPANION_FILES = {INPUT: INPUT_FILE, LLM: LLM_FILE}

_RUN = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_INPUT_TIME = re.compile(r"^# (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\s*$")
_LLM_HEAD = re.compile(r"^(TO LLM|LLM RESPONSE) (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\s*$")
# Aider's own questions, answered ("... (Y)es/(N)o/... [Yes]: y").
_CONFIRM = re.compile(r"\(Y\)es/\(N\)o.*\[[^\]]*\]:\s*\S*\s*$", re.S)
_NUMBER = r"[\d][\d,.]*k?"
_TOKENS = re.compile(
    rf"^Tokens: (?P<sent>{_NUMBER}) sent"
    rf"(?:, (?P<write>{_NUMBER}) cache write)?"
    rf"(?:, (?P<hit>{_NUMBER}) cache hit)?"
    rf"(?:, (?P<cached>{_NUMBER}) cached)?"  # before 0.6x: the cache reads
    rf", (?P<recv>{_NUMBER}) received\."
    r"(?:\s+Cost: \$(?P<cost>[\d.]+) (?:message|request), \$(?P<total>[\d.]+) session\.)?"
    r"(?: Use --no-stream for accurate caching costs\.)?\s*$",
    re.S,
)
_VERSION = re.compile(r"^Aider v(\S+)\s*$")
_MODEL = re.compile(r"^(Main|Editor) model: (\S+) with (\S+) edit format")
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
_COMMIT = re.compile(r"^Commit ([0-9a-f]{7,40}) (.*)$", re.S)
_RUNNING = re.compile(r"^Running (.+?)\s*$", re.S)
_CREATE = re.compile(r"^Create new file\? \(Y\)es/\(N\)o.*:\s*(\S*)\s*$")
_ERROR = re.compile(r"^(litellm\.[A-Za-z]+Error)\b")

# Inputs that send their argument to the model (it is the prompt; Aider then writes it
# again as an input line of its own, which is not one).
CHAT_COMMANDS = frozenset({"/code", "/ask", "/architect", "/context", "/help"})
HELP_ECHO = "# Question: "  # /help's argument goes to the model inside docs of Aider's
SHELL_COMMANDS = {"/run": "", "/test": "", "/git": "git "}  # what the argument runs as
WHOLE_FORMATS = frozenset({"whole", "editor-whole"})  # edits that rewrite whole files

MAX_NOTE_LINES = 5000  # a note of several lines ends at its last (two spaces) line
MAX_ERROR_CHARS = 500
MAX_TITLE_CHARS = 120
MAX_CREATED = 64
DIGEST_CHARS = 64 * 1024


def _digest(text: str) -> str:
    """What two texts are compared by: their lines without trailing blanks."""
    norm = "\n".join(line.rstrip() for line in text[:DIGEST_CHARS].splitlines()).strip()
    return hashlib.blake2b(norm.encode("utf-8", "replace"), digest_size=8).hexdigest()


def local_ts(text: str) -> str | None:
    """A local time Aider wrote (no zone) in UTC, read in this machine's zone."""
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"):
        try:
            dt = datetime.strptime(text, fmt)
        except ValueError:
            continue
        utc = dt.astimezone(UTC)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
    return None


def _tokens(text: str | None) -> int:
    """Aider's token counts: ``2,345`` (0.50), ``3.2k``, ``10k`` (rounded by Aider)."""
    if not text:
        return 0
    value = text.replace(",", "")
    scale = 1000 if value.endswith("k") else 1
    try:
        return round(float(value.rstrip("k")) * scale)
    except ValueError:
        return 0


def native_id(start: str, project: str, repeat: int = 1) -> str:
    """A run's session id: its start (compact) and the project folder's digest."""
    compact = start.replace("-", "").replace(":", "").replace(" ", "T")
    folder = hashlib.blake2b(project.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{compact}-{folder}" + (f"-{repeat}" if repeat > 1 else "")


# -- the chat history in blocks ---------------------------------------------------------------

RUN, INPUT_BLOCK, NOTE, ANSWER = "run", "input", "note", "answer"


@dataclass(slots=True)
class Block:
    kind: str
    start: int  # file offset of its first line
    end: int  # just past its last line
    lines: list[str]
    complete: bool  # its end was seen (else it is the last, maybe still growing)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _closed_note(line: str) -> bool:
    return line.startswith(">") and line.endswith("  ") and (line.startswith("> ") or
                                                              line.strip() == ">")


def _input_line(line: str) -> bool:
    return line.startswith("#### ") and line.endswith("  ")


def blocks(lines: list[tuple[int, str]], end: int) -> list[Block]:
    """The chat history's lines (from a record's start) in records. Every block but the
    last is complete; the last is complete when its kind ends by itself (a run header,
    a one-line note, a note whose last line came), else it may still grow."""
    out: list[Block] = []
    cur: Block | None = None
    for i, (offset, line) in enumerate(lines):
        nxt = lines[i + 1][0] if i + 1 < len(lines) else end
        if cur is not None and cur.kind == NOTE and not cur.complete:
            cur.lines.append(line)
            cur.end = nxt
            cur.complete = line.endswith("  ") or len(cur.lines) >= MAX_NOTE_LINES
            continue
        if cur is not None and cur.kind == ANSWER:
            marker = (_RUN.match(line) or _input_line(line) or _closed_note(line)
                      or line.startswith("> Tokens: "))
            if not marker:
                cur.lines.append(line)
                cur.end = nxt
                continue
            cur.complete = True
        if cur is not None and cur.kind == INPUT_BLOCK:
            if _input_line(line):
                cur.lines.append(line)
                cur.end = nxt
                continue
            cur.complete = True
        cur = None
        if not line.strip():
            continue  # a separator between records
        if _RUN.match(line):
            out.append(Block(RUN, offset, nxt, [line], True))
        elif _input_line(line):
            cur = Block(INPUT_BLOCK, offset, nxt, [line], False)
        elif line.startswith("> ") or line.strip() == ">":
            cur = Block(NOTE, offset, nxt, [line], line.endswith("  "))
        else:
            cur = Block(ANSWER, offset, nxt, [line], False)
        if cur is not None:
            out.append(cur)
            if cur.complete:
                cur = None
    return out


def _note_text(block: Block) -> str:
    first = block.lines[0]
    first = first[2:] if first.startswith("> ") else first[1:]
    return "\n".join([first, *block.lines[1:]]).strip()


def _input_text(block: Block) -> str:
    """What was typed: each ``#### `` line without its prefix and Aider's two spaces."""
    return "\n".join(line[5:-2] for line in block.lines).strip("\n")


# -- the companions -----------------------------------------------------------------------------


@dataclass(slots=True)
class InputEntry:
    start: int
    end: int
    ts: str | None
    digest: str


def input_entries(chunk: TextLines | None) -> list[InputEntry]:
    """The input history's entries (``# <time>`` then ``+<line>``s). An entry is whole
    once the next starts or the read reached the end of the file (prompt_toolkit writes
    one entry in one write)."""
    if chunk is None:
        return []
    out: list[InputEntry] = []
    head: tuple[int, str | None] | None = None
    typed: list[str] = []
    last_end = chunk.start

    def close(end: int) -> None:
        if head is not None:
            out.append(InputEntry(head[0], end, head[1], _digest("\n".join(typed))))

    for i, (offset, line) in enumerate(chunk.lines):
        nxt = chunk.lines[i + 1][0] if i + 1 < len(chunk.lines) else chunk.end
        stamp = _INPUT_TIME.match(line)
        if stamp:
            close(offset)
            head, typed = (offset, local_ts(stamp.group(1))), []
        elif line.startswith("+") and head is not None:
            typed.append(line[1:])
        last_end = nxt
    if head is not None and chunk.eof:
        close(last_end)
    return out


@dataclass(slots=True)
class Request:
    start: int
    end: int
    sent: str | None  # TO LLM time
    answered: str | None  # LLM RESPONSE time
    response: str  # digest of the response text
    request: str  # what the model was sent (scanned, never stored)
    crc: int


def requests(chunk: TextLines | None) -> list[Request]:
    """The LLM history's requests: ``TO LLM`` to the next ``TO LLM``. One is whole once
    the next starts, or once its response came and the read reached the end."""
    if chunk is None:
        return []
    out: list[Request] = []
    cur: dict[str, Any] | None = None

    def close(end: int) -> None:
        if cur is not None:
            out.append(Request(cur["start"], end, cur["sent"], cur["answered"],
                               _digest("\n".join(cur["resp"])), "\n".join(cur["req"]),
                               cur["crc"]))

    for offset, line in chunk.lines:
        head = _LLM_HEAD.match(line)
        if head and head.group(1) == "TO LLM":
            close(offset)
            cur = {"start": offset, "sent": local_ts(head.group(2)), "answered": None,
                   "req": [], "resp": [], "crc": zlib.crc32(line.encode())}
        elif cur is None:
            continue
        elif head:
            cur["answered"] = local_ts(head.group(2))
        elif cur["answered"] is None:
            cur["req"].append(line)
        else:
            cur["resp"].append(line[10:] if line.startswith("ASSISTANT ") else line)
    if cur is not None and cur["answered"] is not None and chunk.eof:
        close(chunk.end)
    return out


# -- the adapter ----------------------------------------------------------------------------------


def _key(ctx: LineContext, suffix: str) -> str:
    return f"{ctx.source_path}@{ctx.offset}#{ctx.record_id}.{suffix}"


RULES = LineRules(agent=NAME, turn=open_turn_in_state, turn_key=f"{NAME}:turn:")


def project_of(source_path: str) -> str:
    return os.path.dirname(source_path)


# Aider's notes by what they say (the first pattern that matches names the record type
# ``note/<name>``); any other note is Aider's output (file lists, help, warnings),
# ignored on purpose: ``note/output``.
NOTE_TYPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("tokens", _TOKENS), ("applied", _APPLIED), ("commit", _COMMIT), ("running", _RUNNING),
    ("create", _CREATE), ("version", _VERSION), ("model", _MODEL), ("error", _ERROR),
)
IGNORED_TYPES = frozenset({"note/output"})


def record_type(block: Block) -> str:
    """A record's type as the fidelity report names it: ``run``, ``input``, ``answer``,
    ``note/<what it says>``."""
    if block.kind != NOTE:
        return block.kind
    text = _note_text(block)
    for name, pattern in NOTE_TYPES:
        if pattern.match(text):
            return f"note/{name}"
    return "note/tokens" if text.startswith("Tokens: ") else "note/output"


class AiderAdapter:
    name = NAME

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, record type, ignored on purpose) of a record read (an entry of
        ``TextRead.read``); the version is the run's (Aider's ``Aider v`` note)."""
        run = state.get("run")
        version = _str(run.get("version")) if isinstance(run, dict) else None
        kind = obj.get("type") if isinstance(obj, dict) else None
        kind = kind if isinstance(kind, str) else "<no type>"
        return version or "unknown", kind, kind in IGNORED_TYPES

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return {
            "run": None,  # the current run: {"id", "start", "repeat", "titled", ...}
            "turn": None,  # the open turn (common.LineContext.open_turn)
            "turn_open": False,
            "last_ts": None,  # the last time known in the run
        }

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        return []  # Aider writes Markdown, read by parse_text_stream

    def parse_document(self, obj: Any, source_path: str, state: dict[str, Any]) -> list[Record]:
        return []

    def parse_text_stream(
        self,
        text: TextLines,
        companions: dict[str, TextLines],
        source_path: str,
        state: dict[str, Any],
        *,
        final: bool,
    ) -> TextRead:
        """The chat history's complete records from ``text`` (which starts at a record),
        the companions' entries they use. With ``final`` (the file is quiet) the last
        record is emitted too, read on a copy of the state."""
        reader = _Reader(source_path, state, input_entries(companions.get(INPUT)),
                         requests(companions.get(LLM)), companions)
        found = blocks(text.lines, text.end)
        pending = found[-1] if found and not found[-1].complete else None
        offset = text.end if pending is None else pending.start
        held: tuple[dict[str, Any], int, tuple[int, int], int] | None = None
        for block in found:
            if block is pending:
                break
            if block is found[-1] and not final:
                held = (copy.deepcopy(state), len(reader.out), reader.pointers(),
                        len(reader.read))
            if not reader.block(block):
                offset = block.start  # waits for more of a companion
                pending, held = None, None
                break
        reader.settle(final=False)
        if held is not None and reader.next_request < len(reader.requests):
            # Requests of the last turn are not settled: the last record waits for the
            # quiet read as an open one does, so the offset stays before it and the
            # requests are scanned even when the daemon stops before the file is quiet.
            state.clear()
            state.update(held[0])
            del reader.out[held[1]:]
            del reader.read[held[3]:]
            reader.next_entry, reader.next_request = held[2]
            pending, offset = found[-1], found[-1].start
        result = TextRead(reader.out, offset, None, reader.companion_offsets(), reader.read)
        if final and pending is not None and text.eof:
            # Quiet: the last record as it stands, on a copy; the state stays before it.
            flush = _Reader(source_path, copy.deepcopy(state), reader.entries, reader.requests,
                            companions, pointers=reader.pointers())
            flush.block(pending)
            flush.settle(final=True)
            result.records += flush.out
            result.offset, result.reopen = text.end, pending.start
        elif final and text.eof:
            # Nothing pending: the requests of the run's last turn are scanned now, and
            # again (the same keys) until a later record says they are done.
            flush = _Reader(source_path, copy.deepcopy(state), reader.entries, reader.requests,
                            companions, pointers=reader.pointers())
            flush.settle(final=True)
            result.records += flush.out
        return result


ADAPTER = AiderAdapter()


class _Reader:
    """One parse_text_stream call over the chat's blocks, with the companions in memory."""

    def __init__(self, source_path: str, state: dict[str, Any], entries: list[InputEntry],
                 reqs: list[Request], companions: dict[str, TextLines],
                 pointers: tuple[int, int] | None = None) -> None:
        self.path = source_path
        self.state = state
        self.entries = entries
        self.requests = reqs
        self.companions = companions
        self.next_entry, self.next_request = pointers or (0, 0)
        self.out: list[Record] = []
        self.read: list[dict[str, Any]] = []  # the records read (TextRead.read)
        self.project = project_of(source_path)

    def pointers(self) -> tuple[int, int]:
        return self.next_entry, self.next_request

    def companion_offsets(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, items, pointer in ((INPUT, self.entries, self.next_entry),
                                     (LLM, self.requests, self.next_request)):
            chunk = self.companions.get(name)
            if chunk is None:
                continue
            out[name] = items[pointer].start if pointer < len(items) else (
                items[-1].end if items else chunk.start)
        return out

    # -- the run and its context

    @property
    def run(self) -> dict[str, Any] | None:
        run = self.state.get("run")
        return run if isinstance(run, dict) else None

    def ctx(self, block: Block) -> LineContext:
        run = self.run or {}
        ctx = LineContext(RULES, self.path, block.start, self.state,
                          ts=_str(self.state.get("last_ts")), out=self.out,
                          native_id=_str(run.get("id")),
                          record_id=f"{zlib.crc32(block.lines[0].encode()):08x}",
                          cwd=self.project, revision=block.end - block.start,
                          version=_str(run.get("version")))
        return ctx

    def saw(self, ts: str | None) -> None:
        if ts is not None:
            self.state["last_ts"] = ts

    # -- blocks

    def block(self, block: Block) -> bool:
        """Read one record; False when it waits for more of a companion. A record read
        is named in ``read`` for the fidelity tally, with what became of it."""
        before = len(self.out)
        done = self._block(block)
        if done:
            made = [type(r) for r in self.out[before:]]
            self.read.append({"type": record_type(block), "events": Event in made,
                              "drift": Drift in made})
        return done

    def _block(self, block: Block) -> bool:
        if block.kind == RUN:
            return self._run(block)
        if self.run is None:
            self.out.append(Drift(NAME, "unknown", f"{block.kind}/<before a run started>"))
            return True
        if block.kind == INPUT_BLOCK:
            return self._input(block)
        if block.kind == NOTE:
            self._note(block)
        else:
            self._answer(block)
        return True

    def _run(self, block: Block) -> bool:
        start = _RUN.match(block.lines[0])
        assert start is not None
        ts = local_ts(start.group(1))
        if self.run is not None:
            if not self.settle(before=ts):
                return False
            self.ctx(block).close_turn("complete", None)
        previous = self.run or {}
        repeat = (int(previous.get("repeat") or 1) + 1
                  if previous.get("start") == start.group(1) else 1)
        self.state["run"] = {"id": native_id(start.group(1), self.project, repeat),
                             "start": start.group(1), "repeat": repeat}
        self.state["last_ts"] = ts
        self.state["turn"], self.state["turn_open"] = None, False
        # Entries typed before this run started belong to earlier runs.
        while (self.next_entry < len(self.entries) and ts is not None
               and (self.entries[self.next_entry].ts or "") < ts):
            self.next_entry += 1
        self.ctx(block).facts(cwd=self.project, started_at=ts, last_event_at=ts)
        return True

    def _input(self, block: Block) -> bool:
        typed = _input_text(block)
        run = self.run
        assert run is not None
        if not typed.strip() or typed.strip() == "<blank>" or _CONFIRM.search(typed):
            return True  # an empty input, or Aider's own question answered
        echo = run.get("echo")
        if echo is not None and (_digest(typed) == echo
                                 or (echo == "help" and typed.startswith(HELP_ECHO))):
            del run["echo"]
            return True  # Aider writing a chat command's argument as an input again
        index = self._entry(_digest(typed))
        if index is None:
            return False  # its entry may be in the part of the input history not read yet
        found = self.entries[index].ts if index >= 0 else None
        if found is not None and not self.settle(before=found):
            return False  # requests sent before it may be in the LLM history not read yet
        if index >= 0:
            self.next_entry = index + 1
        run.pop("echo", None)
        ts = found or _str(self.state.get("last_ts"))
        word, _, rest = typed.partition(" ")
        if typed.startswith("!") or word in SHELL_COMMANDS:
            command = typed[1:] if typed.startswith("!") else SHELL_COMMANDS[word] + rest
            self.saw(found)
            self._tool(block, "run", {"command": command.strip()}, ts, result=True)
            return True
        if word.startswith("/") and not (word in CHAT_COMMANDS and rest.strip()):
            return True  # an Aider command (/model, /add, /commit...): not a prompt
        prompt = typed
        if word in CHAT_COMMANDS:
            prompt = rest.strip()
            run["echo"] = "help" if word == "/help" else _digest(prompt)
        self._prompt(block, prompt, ts)
        return True

    def _entry(self, digest: str) -> int | None:
        """The input-history entry of what was typed (matched in order: entries skipped
        were never written to the chat, such as the ``/run`` lines Aider adds for the
        commands it ran), not consumed yet; -1 when there is none; None to wait for
        more of the input history (read in pieces: the entries this piece holds can
        then only be earlier ones, and are consumed, so the next piece is further on)."""
        for i in range(self.next_entry, len(self.entries)):
            if self.entries[i].digest == digest:
                return i
        chunk = self.companions.get(INPUT)
        if chunk is not None and not chunk.eof and self.next_entry < len(self.entries):
            self.next_entry = len(self.entries)
            return None
        return -1

    def _prompt(self, block: Block, prompt: str, ts: str | None) -> None:
        run = self.run
        assert run is not None
        ctx = self.ctx(block)
        ctx.ts = ts
        turn = f"{run['id']}:{block.start}"
        ctx.open_turn(turn, ts=ts, cwd=self.project, model=_str(run.get("model")))
        self.saw(ts)
        ctx.event(PROMPT, _key(ctx, "prompt"), data={"text": prompt})
        run["created"] = []
        if not run.get("titled"):
            title = first_line(person_text(prompt), MAX_TITLE_CHARS)
            if title:
                run["titled"] = True
                ctx.facts(title=title)

    def _tool(self, block: Block, tool: str, inp: dict[str, Any], ts: str | None,
              *, result: bool, suffix: str = "") -> None:
        ctx = self.ctx(block)
        call_id = f"{ctx.record_id}@{block.start}{suffix}"
        ctx.event(TOOL_CALL, _key(ctx, f"call{suffix}"), ts=ts, tool=tool, call_id=call_id,
                  data={"input": inp}, input=inp)
        if result:
            # Aider does not record how the command ended: no exit code.
            ctx.event(TOOL_RESULT, _key(ctx, f"result{suffix}"), ts=ts, tool=tool,
                      call_id=call_id, input=inp,
                      data={"is_error": None, "exit_code": None, "output_chars": None})

    def _note(self, block: Block) -> None:
        text = _note_text(block)
        run = self.run
        assert run is not None
        last = run.get("last_note")
        run["last_note"] = text[:1024]
        ts = _str(self.state.get("last_ts"))
        if m := _TOKENS.match(text):
            self._usage(block, m)
        elif m := _APPLIED.match(text):
            path = m.group(1)
            created = run.get("created") or []
            fmt = _str(run.get("edit_format")) or ""
            op = "write" if path in created or fmt in WHOLE_FORMATS else "update"
            self._tool(block, "edit", {"path": path, "op": op}, ts, result=False)
        elif m := _COMMIT.match(text):
            self._tool(block, "commit", {"hash": m.group(1), "message": m.group(2).strip()},
                       ts, result=False)
        elif m := _RUNNING.match(text):
            self._tool(block, "run", {"command": m.group(1)}, ts, result=True)
        elif m := _CREATE.match(text):
            if m.group(1).lower().startswith("y") and isinstance(last, str) and last:
                run["created"] = [*(run.get("created") or []), last][-MAX_CREATED:]
        elif m := _VERSION.match(text):
            run["version"] = m.group(1)
            self.ctx(block).facts(version=m.group(1))
        elif m := _MODEL.match(text):
            self._model(block, m)
        elif m := _ERROR.match(text):
            ctx = self.ctx(block)
            ctx.event(ERROR, _key(ctx, "error"),
                      data={"message": text[:MAX_ERROR_CHARS], "error_type": m.group(1)})
        elif text.startswith("Tokens: "):
            self.ctx(block).drift("note/Tokens")  # a usage line this adapter cannot read

    def _model(self, block: Block, m: re.Match[str]) -> None:
        run = self.run
        assert run is not None
        role, model, fmt = m.groups()
        if role == "Main":
            run["model"], run["main_format"] = model, fmt
            run["edit_format"] = fmt
            provider = model.split("/", 1)[0] if "/" in model else None
            self.ctx(block).facts(model=model, model_provider=provider)
        elif run.get("main_format") == "architect":
            run["edit_format"] = fmt  # the editor model makes the edits

    def _usage(self, block: Block, m: re.Match[str]) -> None:
        run = self.run
        assert run is not None
        sent, write = _tokens(m["sent"]), _tokens(m["write"])
        hit = _tokens(m["hit"]) or _tokens(m["cached"])
        received = _tokens(m["recv"])
        data: dict[str, Any] = {
            "input_tokens": sent,
            "output_tokens": received,
            "cache_read_tokens": hit,
            "cache_creation_tokens": write,
            "reasoning_tokens": 0,
            "total_tokens": sent + received,
            "model": _str(run.get("model")),
        }
        if m["cost"] is not None:
            data["cost"] = float(m["cost"])
            data["session_cost"] = float(m["total"])
        ctx = self.ctx(block)
        ctx.event(USAGE, _key(ctx, "usage"), data=data)

    def _answer(self, block: Block) -> None:
        text = block.text.strip()
        if not text:
            return
        digest = _digest(text)
        ts = _str(self.state.get("last_ts"))
        for i in range(self.next_request, len(self.requests)):
            if self.requests[i].response == digest:
                ts = self.requests[i].answered or ts
                break
        self.saw(ts)
        ctx = self.ctx(block)
        ctx.event(MESSAGE, _key(ctx, "message"), ts=ts, data={"text": text})

    # -- the requests, in the turn they were sent in

    def settle(self, before: str | None = None, *, final: bool = False) -> bool:
        """Hand the LLM requests sent before ``before`` (a later record's time) to the
        scan stage in the current turn; with ``final``, all that are whole. False when
        the LLM history was read only in part and every request of that part was sent
        before: the record waits (the next part may hold more of the current turn's)."""
        run = self.run
        if run is None:
            return True
        while self.next_request < len(self.requests):
            req = self.requests[self.next_request]
            if not final:
                if before is None or req.sent is None:
                    return True
                # A request sent in the same second as the record is the record's.
                if req.sent[:19] >= before[:19]:
                    return True
            self.next_request += 1
            ctx = LineContext(RULES, self.path, req.start, self.state, ts=req.sent,
                              out=self.out, native_id=_str(run.get("id")),
                              record_id=f"{req.crc:08x}", cwd=self.project)
            path = os.path.join(self.project, LLM_FILE)
            ctx.event(REQUEST, f"{path}@{req.start}#{req.crc:08x}.request",
                      data={"answered_at": req.answered, "request_chars": len(req.request)},
                      contents=[("request", req.request)])
        chunk = self.companions.get(LLM)
        return final or before is None or chunk is None or chunk.eof or not self.requests

