"""OpenCode adapter: OpenCode's session, message and part records in, normalized records
out. Pure: it is handed decoded rows (by ``ingest/agent_db.py``) or decoded JSON
documents (by the document reader) and knows nothing of files, SQLite or sockets.

OpenCode keeps a conversation as three kinds of record, each one JSON object:

* a **session** ``ses_*``: directory, title, version, parent session (a subagent run by
  the ``task`` tool is a child session), times;
* a **message** ``msg_*`` with ``role`` user or assistant. An assistant message is one
  model response: ``parentID`` names the user message it answers, ``modelID``,
  ``providerID``, ``path.cwd``, ``time.created``/``time.completed``, ``finish`` (the
  step's finish reason), ``error``, ``summary`` (a compaction summary), ``tokens``,
  ``cost``;
* a **part** ``prt_*`` of a message: ``text``, ``reasoning``, ``tool`` (call and result
  together in ``state`` {status pending | running | completed | error, input, output,
  error, metadata, time}), ``step-start``, ``step-finish`` (one model step: ``tokens``
  and ``cost``), ``retry``, ``compaction``, ``file``, ``agent``, ``subtask``, ``patch``,
  ``snapshot``.

Versions 1.2 and later store them in SQLite (tables ``session``, ``message``, ``part``,
JSON in ``data``), read by ingest and handed over page by page (``parse_rows``, the
adapter protocol's optional method): see :func:`records_from_rows`. Older versions wrote one JSON file per
record under ``storage/`` (0.6 to 1.1) or ``project/<project>/storage/session/`` (0.5):
see :meth:`OpenCodeAdapter.parse_document`. Both paths end in the same code and give the
same event keys, which are OpenCode's own ids, so a session seen in both (OpenCode
copies its JSON tree into the database) counts once.

Rows and records are rewritten in place while a response streams; this adapter only
emits a part once it is final (see ``_part``), and re-emits a part that changes later
under the same key with the row's ``time_updated`` as its ``Event.revision``, so the
store replaces the stored version with the newer one (never counting it twice).

Long on purpose: one agent's storage across its layouts (message and part files, the
database's rows), a part's revisions beside its reading.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..events import (
    COMPACTION,
    ERROR,
    MESSAGE,
    PROMPT,
    REASONING,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USAGE,
    Drift,
    Event,
    Record,
    SessionFacts,
    TurnFacts,
    session_key,
)
from .common import (
    LineContext,
    LineRules,
    as_count,
    as_int,
    begin,
    first_line,
    normalize_ts,
    summarize_input,
)
from .common import as_dict as _dict
from .common import nonempty_str as _str
from .common import remember_bounded as _remember
from .common import state_table as _table

NAME = "opencode"

SESSION = "session"
MESSAGE_TABLE = "message"
PART = "part"
TABLES = (SESSION, MESSAGE_TABLE, PART)

# Part types: each one handled or deliberately ignored; anything else is Drift.
HANDLED_PART_TYPES = frozenset({"text", "reasoning", "tool", "step-finish", "retry", "compaction"})
IGNORED_PART_TYPES = frozenset(
    {
        "step-start",  # a step began (its snapshot hash only)
        "snapshot",  # a worktree snapshot hash
        "patch",  # files the step's snapshot saw change (hash + paths; the tool calls say more)
        "file",  # an attachment; its content reaches the model as synthetic text parts
        "agent",  # an @agent mention
        "subtask",  # a subagent request; the child session carries the work
    }
)
TOOL_STATUSES = frozenset({"pending", "running", "completed", "error"})
ROLES = frozenset({"user", "assistant"})

# Finish reasons after which OpenCode's loop calls the model again: not a turn end.
CONTINUE_FINISHES = frozenset({"tool-calls", "unknown"})
ABORTED_ERROR = "MessageAbortedError"
# OpenCode's placeholder titles until one is generated.
PLACEHOLDER_TITLE = re.compile(r"^(?:New|Child) session - \d{4}-\d{2}-\d{2}T")
# Tool-call input fields (camelCase) holding file content or patch text: stored as sizes.
CONTENT_KEYS = ("oldString", "newString", "patchText")
INTERRUPTED_ERRORS = ("Tool execution aborted", "Tool execution was interrupted")

# Bounds on the per-source state (it is persisted after every batch).
MAX_SESSIONS = 1000
MAX_MESSAGES = 500
MAX_TURNS = 2000
MAX_TITLE_CHARS = 120
MAX_ERROR_CHARS = 500

TITLE_PROMPT = 1  # a title from the first prompt, while the session has a placeholder
TITLE_SESSION = 2  # the session's own title

_ID = r"[A-Za-z0-9_-]+"
_SESSION_FILE = re.compile(rf"ses_{_ID}\.json")
_MESSAGE_FILE = re.compile(rf"msg_{_ID}\.json")
_PART_FILE = re.compile(rf"prt_{_ID}\.json")


# -- small helpers ----------------------------------------------------------------------


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return float(value)


def _entry(state: dict[str, Any], name: str, key: str) -> dict[str, Any]:
    return _dict(_table(state, name).get(key))


def _ts(value: Any) -> str | None:
    return normalize_ts(value) if as_int(value) is not None else None


def _error_info(error: Any) -> tuple[str, str]:
    """(message, name) of an OpenCode NamedError object ``{name, data: {message}}``."""
    err = _dict(error)
    name = _str(err.get("name")) or "error"
    data = _dict(err.get("data"))
    message = _str(data.get("message")) or _str(err.get("message")) or name
    return message[:MAX_ERROR_CHARS], name


def _summarize_tool_input(value: dict[str, Any]) -> Any:
    """The stored input: OpenCode's camelCase content fields become their size (the
    snake_case ones are common.CONTENT_FIELDS), then the common summary."""
    shrunk: dict[str, Any] = {}
    for k, v in value.items():
        if k in CONTENT_KEYS and isinstance(v, str):
            shrunk[k] = {"omitted_chars": len(v)}
        else:
            shrunk[k] = v
    return summarize_input(shrunk)


# -- the context a record is read in --------------------------------------------------------


# The context's rules (common.LineRules): one context per row, everything of it fixed
# when it is read: its session, its session's version, its revision; every key is
# OpenCode's own id, and each event names its time, turn and cwd.
RULES = LineRules(agent=NAME, version=None)


def _rec(
    row: dict[str, Any], native_sid: str, source_path: str, state: dict[str, Any]
) -> LineContext:
    """The context of a message or part row: its session's directory and version come
    from the row's ``session`` context (the reader joins them in) or from the state.
    Its revision is the row's ``time_updated`` (0 for a document, which has none): a
    row OpenCode rewrote later re-emits its events under the same keys with a higher
    revision, so the store replaces what it holds (Event.revision)."""
    known = _entry(state, "sessions", native_sid)
    ctx = _dict(row.get("session"))
    directory = _str(ctx.get("directory")) or _str(known.get("dir"))
    version = _str(ctx.get("version")) or _str(known.get("v"))
    if directory != known.get("dir") or version != known.get("v"):
        known = dict(known, dir=directory, v=version)
        _remember(_table(state, "sessions"), native_sid, known, MAX_SESSIONS)
    return LineContext(
        RULES,
        source_path,
        as_int(row.get("rowid")) or 0,
        state,
        native_id=native_sid,
        revision=max(0, as_int(row.get("time_updated")) or 0),
        version=version,
    )


def _session_dir(rec: LineContext) -> str | None:
    return _str(_entry(rec.state, "sessions", rec.native_id).get("dir"))


# -- the adapter ----------------------------------------------------------------------------


class OpenCodeAdapter:
    name = NAME

    def record_kind(self, obj: Any, state: dict[str, Any]) -> tuple[str, str, bool]:
        """(version, record type, ignored on purpose) of a JSON-tree document just read,
        for the fidelity tally: ``session``, ``message/<role>``, ``part/<type>``; the
        version is its session's, when known."""
        if not isinstance(obj, dict):
            return "unknown", "<not an object>", False
        session = _str(obj.get("sessionID")) or _str(obj.get("id"))
        known = _dict(_dict(state.get("sessions")).get(session)) if session else {}
        version = _str(obj.get("version")) or _str(known.get("v")) or "unknown"
        if isinstance(obj.get("role"), str):
            return version, f"message/{obj['role']}", False
        kind = obj.get("type")
        if isinstance(kind, str) and "messageID" in obj:
            return version, f"part/{kind}", kind in IGNORED_PART_TYPES
        if _str(obj.get("id")) and ("title" in obj or "version" in obj):
            return version, "session", False
        return version, "document", False

    def initial_state(self, source_path: str) -> dict[str, Any]:
        return {
            "sessions": {},  # native id -> {"dir", "v" (version), "title" rank, "model"}
            "messages": {},  # message id -> what its parts need (see _message_info)
            "turns": {},  # turn id -> "open" | "ended": TurnFacts status "open" sent once
            "compactions": {},  # compaction requests already recorded (part or summary)
        }

    def parse(
        self, obj: dict[str, Any], offset: int, source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """OpenCode writes no JSONL; a line holding one record is read as a document."""
        return self.parse_document(obj, source_path, state)

    def parse_document(
        self, obj: Any, source_path: str, state: dict[str, Any] | None = None
    ) -> list[Record]:
        """One file of the JSON tree: a session (``ses_*.json``), a message
        (``msg_*.json``) or a part (``prt_*.json``), told apart by the file name, else by
        the object's shape. Anything else (``storage/migration``, project, todo, diff
        files) yields nothing. With a per-file state a part cannot know its message: a
        text part is then a prompt when it has no ``time`` (OpenCode stamps the text
        parts it streams, never the ones a user typed), and assistant parts carry no
        turn, model or cwd."""
        if state is None:
            state = self.initial_state(source_path)
        early = begin(RULES, obj, source_path, state)
        if early is not None:
            return early
        state["documents"] = True
        kind = _document_kind(obj, source_path)
        if kind is None:
            return []
        return records_from_rows(kind, [_row_of_document(kind, obj)], source_path, state)

    def parse_rows(
        self, table: str, rows: Iterable[dict[str, Any]], source_path: str, state: dict[str, Any]
    ) -> list[Record]:
        """Rows of OpenCode's database (see records_from_rows)."""
        return records_from_rows(table, rows, source_path, state)


ADAPTER = OpenCodeAdapter()


def _document_kind(obj: dict[str, Any], source_path: str) -> str | None:
    name = os.path.basename(source_path)
    if _PART_FILE.fullmatch(name):
        return PART
    if _MESSAGE_FILE.fullmatch(name):
        return MESSAGE_TABLE
    if _SESSION_FILE.fullmatch(name):
        return SESSION
    if isinstance(obj.get("role"), str):
        return MESSAGE_TABLE
    if isinstance(obj.get("type"), str) and "messageID" in obj:
        return PART
    if _str(obj.get("id")) and ("title" in obj or "version" in obj):
        return SESSION
    return None


def _row_of_document(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """A JSON-tree document in the shape of a database row (as OpenCode's own
    JSON-to-SQLite migration maps it)."""
    time = _dict(obj.get("time"))
    if kind == SESSION:
        return {
            "id": obj.get("id"),
            "parent_id": obj.get("parentID"),
            "project_id": obj.get("projectID"),
            "directory": obj.get("directory"),
            "title": obj.get("title"),
            "version": obj.get("version"),
            "time_created": time.get("created"),
            "time_updated": time.get("updated"),
        }
    if kind == MESSAGE_TABLE:
        return {"id": obj.get("id"), "session_id": obj.get("sessionID"), "data": obj}
    return {
        "id": obj.get("id"),
        "message_id": obj.get("messageID"),
        "session_id": obj.get("sessionID"),
        "data": obj,
    }


def records_from_rows(
    table: str, rows: Iterable[dict[str, Any]], source_path: str, state: dict[str, Any]
) -> list[Record]:
    """Records from rows of one OpenCode table (``session``, ``message`` or ``part``),
    each a dict of its columns with ``data`` decoded, as ``OpenCodeDB.poll`` returns
    them: message and part rows may carry a ``session`` context ({directory, version})
    and part rows a ``message`` context (a few fields of their message's data). Mutates
    ``state`` (initial_state(), JSON, bounded). Deterministic: the same rows give the
    same records, and keys are OpenCode's ids, so splitting rows into pages or reading
    a row again never duplicates an event. Never raises on odd input."""
    out: list[Record] = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        try:
            if table == SESSION:
                out += _session(row, source_path, state)
            elif table == MESSAGE_TABLE:
                out += _message(row, source_path, state)
            elif table == PART:
                out += _part(row, source_path, state)
        except Exception as exc:  # one odd row must not stop the source; count it
            out.append(Drift(NAME, "unknown", f"{table}/parse-error:{type(exc).__name__}"))
    return out


# -- sessions -------------------------------------------------------------------------------


def _session(row: dict[str, Any], source_path: str, state: dict[str, Any]) -> list[Record]:
    native = _str(row.get("id"))
    if native is None:
        return [Drift(NAME, _str(row.get("version")) or "unknown", "session/<no id>")]
    sessions = _table(state, "sessions")
    known = _dict(sessions.get(native))
    directory = _str(row.get("directory")) or _str(known.get("dir"))
    version = _str(row.get("version")) or _str(known.get("v"))
    title = _str(row.get("title"))
    parent = _str(row.get("parent_id"))
    rank = as_int(known.get("title")) or 0
    stored_title = None
    if title and not PLACEHOLDER_TITLE.match(title):
        stored_title = title.strip()[:MAX_TITLE_CHARS] or None
        rank = TITLE_SESSION
    _remember(sessions, native, dict(known, dir=directory, v=version, title=rank), MAX_SESSIONS)
    return [
        SessionFacts(
            session_id=session_key(NAME, native),
            agent=NAME,
            native_id=native,
            cwd=directory,
            started_at=_ts(row.get("time_created")),
            title=stored_title,
            version=version,
            parent_session_id=session_key(NAME, parent) if parent else None,
        )
    ]


# -- messages -------------------------------------------------------------------------------


def _message_info(data: dict[str, Any]) -> dict[str, Any]:
    """What a part needs of its message, in the message's own shape (the reader's
    ``message`` context of a part row has the same shape)."""
    time = _dict(data.get("time"))
    return {
        "role": data.get("role"),
        "parentID": data.get("parentID"),
        "modelID": data.get("modelID"),
        "providerID": data.get("providerID"),
        "path": {"cwd": _dict(data.get("path")).get("cwd")},
        "time": {"created": time.get("created"), "completed": time.get("completed")},
        "summary": data.get("summary"),
    }


def _message(row: dict[str, Any], source_path: str, state: dict[str, Any]) -> list[Record]:
    data = _dict(row.get("data"))
    mid = _str(row.get("id")) or _str(data.get("id"))
    native = _str(row.get("session_id")) or _str(data.get("sessionID"))
    if mid is None or native is None:
        return [Drift(NAME, "unknown", "message/<no id>")]
    rec = _rec(row, native, source_path, state)
    role = data.get("role")
    if role not in ROLES:
        return [rec.drift(f"message/{role if isinstance(role, str) else '<no role>'}")]
    _remember(_table(state, "messages"), mid, _message_info(data), MAX_MESSAGES)
    if role == "user":
        return _user_message(rec, mid, data)
    return _assistant_message(rec, mid, data)


def _user_message(rec: LineContext, mid: str, data: dict[str, Any]) -> list[Record]:
    """Every user message opens a turn (OpenCode's loop answers each one; the turn of a
    compaction request or a shell command has no prompt). The turn id is the message id,
    which the answering assistant messages name as their ``parentID``."""
    created = _ts(_dict(data.get("time")).get("created"))
    cwd = _session_dir(rec)
    model = _str(_dict(data.get("model")).get("modelID"))
    start = rec.event(TURN_START, f"{NAME}:turn:{mid}:start", ts=created, turn_id=mid, cwd=cwd)
    out: list[Record] = [start]
    turns = _table(rec.state, "turns")
    if mid not in turns:
        # A user message is rewritten after its turn (OpenCode adds a summary), so its
        # row can come after the turn's end: "open" only for a turn not seen ended, and
        # never from documents (each has its own state: the end may be in another one).
        _remember(turns, mid, "open", MAX_TURNS)
        status = None if rec.state.get("documents") else "open"
        out.append(
            TurnFacts(rec.session_id, mid, started_at=created, status=status, cwd=cwd, model=model)
        )
    return out


def _assistant_message(rec: LineContext, mid: str, data: dict[str, Any]) -> list[Record]:
    time = _dict(data.get("time"))
    created = _ts(time.get("created"))
    completed = _ts(time.get("completed"))
    turn = _str(data.get("parentID"))
    cwd = _str(_dict(data.get("path")).get("cwd")) or _session_dir(rec)
    model = _str(data.get("modelID"))
    out: list[Record] = []

    known = _entry(rec.state, "sessions", rec.native_id)
    if model and known.get("model") != model:
        _remember(_table(rec.state, "sessions"), rec.native_id, dict(known, model=model),
                  MAX_SESSIONS)
        out.append(
            rec.facts(
                cwd=_str(_dict(data.get("path")).get("cwd")),
                model=model,
                model_provider=_str(data.get("providerID")),
            )
        )
    if turn and (model or cwd):
        out.append(TurnFacts(rec.session_id, turn, cwd=cwd, model=model))

    error = data.get("error")
    aborted = False
    if isinstance(error, dict):
        message, name = _error_info(error)
        aborted = name == ABORTED_ERROR
        if not aborted:
            out.append(
                rec.event(
                    ERROR,
                    f"{NAME}:error:{mid}",
                    ts=completed or created,
                    turn_id=turn,
                    cwd=cwd,
                    data={"message": message, "error_type": name},
                )
            )
    compactions = _table(rec.state, "compactions")
    if data.get("summary") is True and turn and turn not in compactions:
        # A compaction: this message's text is the summary (never kept). Keyed by the
        # compaction request it answers, as the request's compaction part is (read
        # first from a database; the part says whether it was automatic).
        _remember(compactions, turn, 1, MAX_TURNS)
        out.append(
            rec.event(
                COMPACTION,
                f"{NAME}:compaction:{turn}",
                ts=completed or created,
                turn_id=turn,
                cwd=cwd,
                data={"trigger": None, "pre_tokens": None},
            )
        )
    finish = _str(data.get("finish"))
    ends = completed and turn and (isinstance(error, dict) or finish not in CONTINUE_FINISHES)
    if ends and turn and _table(rec.state, "turns").get(turn) != "ended":
        reason: str | None
        if isinstance(error, dict):
            status, reason = "aborted", ("interrupted" if aborted else _error_info(error)[1])
        else:
            status, reason = "complete", (finish if finish not in (None, "stop") else None)
        end = rec.event(
            TURN_END,
            f"{NAME}:turn:{turn}:end",
            ts=completed,
            turn_id=turn,
            cwd=cwd,
            data={"status": status, "reason": reason},
        )
        out.append(end)
        out.append(TurnFacts(rec.session_id, turn, ended_at=completed, status=status))
        _remember(_table(rec.state, "turns"), turn, "ended", MAX_TURNS)
    return out


# -- parts ----------------------------------------------------------------------------------


def _part(row: dict[str, Any], source_path: str, state: dict[str, Any]) -> list[Record]:
    data = _dict(row.get("data"))
    pid = _str(row.get("id")) or _str(data.get("id"))
    mid = _str(row.get("message_id")) or _str(data.get("messageID"))
    native = _str(row.get("session_id")) or _str(data.get("sessionID"))
    if pid is None or mid is None or native is None:
        return [Drift(NAME, "unknown", "part/<no id>")]
    rec = _rec(row, native, source_path, state)
    ptype = data.get("type")
    if not isinstance(ptype, str):
        return [rec.drift("part/<no type>")]
    if ptype in IGNORED_PART_TYPES:
        return []
    if ptype not in HANDLED_PART_TYPES:
        return [rec.drift(f"part/{ptype}")]
    info = _dict(row.get("message")) or _entry(state, "messages", mid)
    role = info.get("role")
    if role not in ROLES:
        # No message known. A compaction request is the user's; text can be either,
        # and OpenCode stamps the text it streams, never what a user typed.
        if ptype == "compaction":
            role = "user"
        else:
            role = "assistant" if ptype != "text" or "time" in data else "user"
    part = _Part(rec, row, data, pid, mid, info, role)
    if ptype == "text":
        return part.text()
    if ptype == "reasoning":
        return part.reasoning()
    if ptype == "tool":
        return part.tool()
    if ptype == "step-finish":
        return part.usage()
    if ptype == "retry":
        return part.retry()
    return part.compaction()


@dataclass(slots=True)
class _Part:
    rec: LineContext
    row: dict[str, Any]
    data: dict[str, Any]
    pid: str
    mid: str
    info: dict[str, Any]  # what is known of the part's message (may be empty)
    role: str

    @property
    def turn(self) -> str | None:
        return self.mid if self.role == "user" else _str(self.info.get("parentID"))

    @property
    def cwd(self) -> str | None:
        return _str(_dict(self.info.get("path")).get("cwd")) or _session_dir(self.rec)

    @property
    def message_time(self) -> dict[str, Any]:
        return _dict(self.info.get("time"))

    def created(self) -> str | None:
        """When the row was written, else when its message was."""
        return _ts(self.row.get("time_created")) or _ts(self.message_time.get("created"))

    def event(self, kind: str, key: str, ts: str | None, **fields: Any) -> Event:
        fields.setdefault("turn_id", self.turn)
        fields.setdefault("cwd", self.cwd)
        return self.rec.event(kind, key, ts=ts, **fields)

    def final(self) -> bool:
        """A streamed part (text, reasoning) is final once ``time.end`` is set; one
        without ``time`` (typed by the user, or written by older versions) is final as
        written; any part is final once its message completed."""
        time = self.data.get("time")
        if not isinstance(time, dict) or time.get("end") is not None:
            return True
        return self.message_time.get("completed") is not None

    def text(self) -> list[Record]:
        text = self.data.get("text")
        if not isinstance(text, str) or not text.strip():
            return []
        if self.role == "user":
            if self.data.get("synthetic") is True or self.data.get("ignored") is True:
                return []  # injected by OpenCode: attachment reads, shell-mode notices
            ts = _ts(self.message_time.get("created")) or self.created()
            out: list[Record] = [
                self.event(PROMPT, f"{NAME}:prompt:{self.pid}", ts, data={"text": text})
            ]
            return out + self._prompt_title(text)
        if self.info.get("summary") is True or not self.final():
            return []  # a compaction summary (never kept), or still streaming
        time = _dict(self.data.get("time"))
        ts = _ts(time.get("end")) or _ts(time.get("start")) or self.created()
        return [self.event(MESSAGE, f"{NAME}:message:{self.pid}", ts, data={"text": text})]

    def _prompt_title(self, text: str) -> list[Record]:
        """The first prompt titles a session whose own title is still a placeholder
        (known only when the session record was read with this state)."""
        sessions = _table(self.rec.state, "sessions")
        known = _dict(sessions.get(self.rec.native_id))
        if "title" not in known or (as_int(known.get("title")) or 0) != 0:
            return []
        title = first_line(text, MAX_TITLE_CHARS)
        if not title:
            return []
        _remember(sessions, self.rec.native_id, dict(known, title=TITLE_PROMPT), MAX_SESSIONS)
        return [self.rec.facts(title=title)]

    def reasoning(self) -> list[Record]:
        if not self.final():
            return []
        text = self.data.get("text")
        time = _dict(self.data.get("time"))
        ts = _ts(time.get("start")) or self.created()
        data = {"chars": len(text)} if isinstance(text, str) else {}
        return [self.event(REASONING, f"{NAME}:reasoning:{self.pid}", ts, data=data)]

    def tool(self) -> list[Record]:
        """A tool part holds the call and its result. The call is emitted once it runs
        (its input is complete), again when it ends (same key: a duplicate); the result
        when it ends. Pending parts have no input yet."""
        state = _dict(self.data.get("state"))
        status = state.get("status")
        if status not in TOOL_STATUSES:
            return [self.rec.drift(f"tool-state/{status if isinstance(status, str) else '<none>'}")]
        if status == "pending":
            return []
        tool = _str(self.data.get("tool"))
        call_id = _str(self.data.get("callID"))
        raw = state.get("input")
        full_input: dict[str, Any] = raw if isinstance(raw, dict) else {}
        time = _dict(state.get("time"))
        start = _ts(time.get("start")) or self.created()
        call = self.event(
            TOOL_CALL,
            f"{NAME}:tool_call:{self.pid}",
            start,
            tool=tool,
            call_id=call_id,
            data={"input": _summarize_tool_input(full_input)},
            input=full_input,
            contents=_written_contents(full_input),
        )
        if status == "running":
            return [call]
        metadata = _dict(state.get("metadata"))
        if status == "completed":
            output = state.get("output")
            text = output if isinstance(output, str) else ""
            is_error = False
        else:
            err = state.get("error")
            text = err if isinstance(err, str) else ""
            is_error = True
        contents = [("output", text)] if text else []
        # bash: the output as it streamed (its last 30 KB); older versions kept stdout and
        # stderr apart.
        for label in ("output", "stdout", "stderr"):
            extra = metadata.get(label)
            if isinstance(extra, str) and extra and extra not in text:
                contents.append((label, extra))
        start_ms, end_ms = as_int(time.get("start")), as_int(time.get("end"))
        duration = end_ms - start_ms if start_ms is not None and end_ms is not None else None
        result = self.event(
            TOOL_RESULT,
            f"{NAME}:tool_result:{self.pid}",
            _ts(time.get("end")) or start,
            tool=tool,
            call_id=call_id,
            data={
                "is_error": is_error,
                "exit_code": _exit_code(metadata),
                "duration_ms": duration if duration is not None and duration >= 0 else None,
                "output_chars": len(text),
                "interrupted": metadata.get("interrupted") is True
                or (is_error and text.startswith(INTERRUPTED_ERRORS)),
            },
            input=full_input,
            contents=contents,
        )
        return [call, result]

    def usage(self) -> list[Record]:
        """One model step's tokens. Step-finish parts are written once, final; their sum
        is a message's usage (an old multi-step message's own ``tokens`` are only its
        last step's)."""
        tokens = _dict(self.data.get("tokens"))
        cache = _dict(tokens.get("cache"))
        counts = {
            "input_tokens": as_count(tokens.get("input")),
            "output_tokens": as_count(tokens.get("output")),
            "cache_read_tokens": as_count(cache.get("read")),
            "cache_creation_tokens": as_count(cache.get("write")),
            "reasoning_tokens": as_count(tokens.get("reasoning")),
        }
        total = as_int(tokens.get("total"))
        if total is None or total < 0:
            # Reasoning is part of the output tokens: not added again.
            total = sum(v for k, v in counts.items() if k != "reasoning_tokens")
        data: dict[str, Any] = dict(counts, total_tokens=total)
        data["model"] = _str(self.info.get("modelID"))
        data["cost"] = _number(self.data.get("cost"))
        ts = self.created() or _ts(self.message_time.get("completed"))
        return [self.event(USAGE, f"{NAME}:usage:{self.pid}", ts, data=data)]

    def retry(self) -> list[Record]:
        """A failed model call OpenCode retried (the final failure is the message's
        error)."""
        message, name = _error_info(self.data.get("error"))
        ts = _ts(_dict(self.data.get("time")).get("created")) or self.created()
        data = {"message": message, "error_type": name, "attempt": as_int(self.data.get("attempt"))}
        return [self.event(ERROR, f"{NAME}:error:{self.pid}", ts, data=data)]

    def compaction(self) -> list[Record]:
        """A compaction request (the user message's part); its summary is the answer."""
        trigger = "auto" if self.data.get("auto") is True else "manual"
        _remember(_table(self.rec.state, "compactions"), self.mid, 1, MAX_TURNS)
        return [
            self.event(
                COMPACTION,
                f"{NAME}:compaction:{self.mid}",
                _ts(self.message_time.get("created")) or self.created(),
                data={"trigger": trigger, "pre_tokens": None},
            )
        ]


def _written_contents(inp: dict[str, Any]) -> list[tuple[str, str]]:
    """What a call writes that the scan stage does not find by itself (it reads
    ``content`` and ``new_string``; OpenCode spells the others in camelCase)."""
    out: list[tuple[str, str]] = []
    new = inp.get("newString")
    if isinstance(new, str) and new:
        out.append(("new_string", new))
    edits = inp.get("edits")
    if isinstance(edits, list):
        for i, edit in enumerate(edits):
            value = _dict(edit).get("newString")
            if isinstance(value, str) and value:
                out.append((f"edits[{i}].new_string", value))
    patch = inp.get("patchText")
    if isinstance(patch, str) and patch:
        out.append(("patch", patch))
    return out


def _exit_code(metadata: dict[str, Any]) -> int | None:
    """The shell tool's exit status: ``metadata.exit`` (null when it was killed)."""
    for name in ("exit", "exitCode", "exit_code"):
        code = as_int(metadata.get(name))
        if code is not None:
            return code
    return None
