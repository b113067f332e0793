"""The MCP server of ``agentsrc mcp``: the bridge's tools (tools.py) registered with the
official MCP SDK (``MCPServer``), served over stdio.

Each tool's input schema comes from its signature (types, ranges, descriptions), and
refuses unknown arguments (``additionalProperties: false``): a misspelt filter is an
error, not a silently wider answer. A ``ToolCallError`` becomes a tool error result
(``isError``) with its message; the server keeps serving. Tools are synchronous: the SDK
runs them on worker threads, so a slow daemon holds up only its own call.

Imported only by the ``mcp`` command: the SDK is the optional ``agentsrc[mcp]`` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ConfigDict, Field

from .. import __version__
from ..errors import ToolCallError
from ..events import AGENTS
from . import tools as T
from .tools import UNTRUSTED, Bridge

# ---- the parameters the tools share -----------------------------------------------

AllProjects = Annotated[bool, Field(
    description="true: answer about every project in the record, not only this server's "
    "project (its default scope, named in each result's `scope`).")]
Project = Annotated[str | None, Field(
    description="Answer about this project instead (its root directory, absolute).")]
Since = Annotated[str | None, Field(
    description="Only from this time on: a duration back from now (30m, 12h, 7d, 2w) or an "
    "ISO 8601 time (2026-05-01T00:00:00Z).", examples=["1d", "2026-05-01T00:00:00Z"])]
Until = Annotated[str | None, Field(
    description="Only before this time: a duration back from now or an ISO 8601 time.")]
Cursor = Annotated[str | None, Field(
    description="next_cursor of the previous result, to get the next page (with the same "
    "other arguments).")]
SessionId = Annotated[str, Field(
    min_length=1, description="A session id as results give it (`claude-code:…`, `codex:…`), "
    "the agent's native id, or a unique prefix of either.")]
SessionFilter = Annotated[str | None, Field(
    min_length=1, description="Only this session (an id, native id or unique prefix).")]
# The agents as sessions name them (events.AGENTS): a new agent is named here by itself.
AGENT_NAMES = ", ".join(AGENTS)
AgentFilter = Annotated[str | None, Field(
    min_length=1, description=f"Only this agent's sessions: {AGENT_NAMES}.")]


def _limit(most: int, what: str) -> Any:
    return Field(ge=1, le=most, description=f"At most this many {what} (1 to {most}); the "
                 "result says when more match and gives a cursor for the rest.")


HitsLimit = Annotated[int, _limit(50, "hits")]
SessionsLimit = Annotated[int, _limit(100, "sessions")]
TurnsLimit = Annotated[int, _limit(500, "turns")]
LogTurnsLimit = Annotated[int, _limit(50, "turns")]
EventsLimit = Annotated[int, _limit(100, "reads and edits")]
CommandsLimit = Annotated[int, _limit(100, "commands")]
FindingsLimit = Annotated[int, _limit(100, "findings")]
RowsLimit = Annotated[int, _limit(100, "rows per group")]


FRAME = (
    " Results are JSON: `scope`, the items, `returned`, `truncated`, `next_cursor` (pass it "
    "as `cursor` for the next page) and, when cut, a `note`; long text ends "
    "`… [cut: N more characters]`. " + UNTRUSTED
)


# ---- the tools --------------------------------------------------------------------


class BridgeTools:
    """The tools, each a method whose signature is its input schema (Tool.from_function
    reads it), bound to one bridge to the daemon."""

    def __init__(self, bridge: Bridge) -> None:
        self.bridge = bridge

    def search_history(
        self,
        query: Annotated[str, Field(min_length=1, description=(
            "What to find (full-text): words (all must match), \"a phrase\", prefix*, AND, "
            "OR, NOT, parentheses; identifiers match their parts (rate limiter finds "
            "RateLimiter)."))],
        kind: Annotated[str | None, Field(description=(
            "Only hits of this kind: prompt, message, command, read, edit, tool_call, "
            "title."))] = None,
        order: Annotated[Literal["rank", "recent"], Field(description=(
            "rank: best matches first (recent ones weigh more); recent: the most recently "
            "recorded first."
            ))] = "rank",
        agent: AgentFilter = None,
        session_id: SessionFilter = None,
        since: Since = None,
        until: Until = None,
        project: Project = None,
        all_projects: AllProjects = False,
        limit: HitsLimit = 10,
        cursor: Cursor = None,
    ) -> CallToolResult:
        return _run(T.search_history, self.bridge, query=query, kind=kind, order=order, agent=agent,
                    session_id=session_id, since=since, until=until, project=project,
                    all_projects=all_projects, limit=limit, cursor=cursor)

    def list_sessions(
        self,
        project: Project = None,
        agent: AgentFilter = None,
        since: Annotated[str | None, Field(description=(
            "Only sessions active from this time on: a duration back from now (30m, 12h, 7d, "
            "2w) or an ISO 8601 time."))] = None,
        until: Annotated[str | None, Field(description=(
            "Only sessions started before this time."))] = None,
        search: Annotated[str | None, Field(min_length=1, description=(
            "Only sessions with a full-text hit of this query (search_history's language)."
            ))] = None,
        sort: Annotated[Literal["last", "started", "tokens", "tools"], Field(description=(
            "last: latest activity first; started: latest start first; tokens: most tokens "
            "first; tools: most tool calls first."))] = "last",
        all_projects: AllProjects = False,
        limit: SessionsLimit = 20,
        cursor: Cursor = None,
    ) -> CallToolResult:
        return _run(T.list_sessions, self.bridge, project=project, agent=agent, since=since,
                    until=until, search=search, sort=sort, all_projects=all_projects,
                    limit=limit, cursor=cursor)

    def get_session(
        self,
        session_id: SessionId,
        all_projects: AllProjects = False,
        limit: TurnsLimit = 50,
        cursor: Cursor = None,
    ) -> CallToolResult:
        return _run(T.get_session, self.bridge, session_id=session_id, all_projects=all_projects,
                    limit=limit, cursor=cursor)

    def session_log(
        self,
        session_id: SessionId,
        all_projects: AllProjects = False,
        limit: LogTurnsLimit = 5,
        cursor: Cursor = None,
    ) -> CallToolResult:
        return _run(T.session_log, self.bridge, session_id=session_id, all_projects=all_projects,
                    limit=limit, cursor=cursor)

    def file_history(
        self,
        path: Annotated[str, Field(min_length=1, description=(
            "The file: absolute, relative to the project root (src/app.py), or a glob "
            "(src/*.py)."))],
        session_id: SessionFilter = None,
        agent: AgentFilter = None,
        since: Since = None,
        project: Project = None,
        all_projects: AllProjects = False,
        limit: EventsLimit = 20,
        cursor: Cursor = None,
    ) -> CallToolResult:
        return _run(T.file_history, self.bridge, path=path, session_id=session_id, agent=agent,
                    since=since, project=project, all_projects=all_projects, limit=limit,
                    cursor=cursor)

    def commands(
        self,
        failed_only: Annotated[bool, Field(description=(
            "true: only commands that failed (non-zero exit, interrupted, or reported as an "
            "error)."))] = False,
        contains: Annotated[str | None, Field(min_length=1, description=(
            "Only commands whose text contains this (case-insensitive), e.g. `migrate`."))] = None,
        session_id: SessionFilter = None,
        since: Since = None,
        project: Project = None,
        all_projects: AllProjects = False,
        limit: CommandsLimit = 20,
        cursor: Cursor = None,
    ) -> CallToolResult:
        return _run(T.commands, self.bridge, failed_only=failed_only, contains=contains,
                    session_id=session_id, since=since, project=project,
                    all_projects=all_projects, limit=limit, cursor=cursor)

    def secret_findings(
        self,
        session_id: SessionFilter = None,
        type: Annotated[str | None, Field(description=(
            "Only this detect-secrets type, e.g. `AWS Access Key`, `Secret Keyword`."))] = None,
        path: Annotated[str | None, Field(description=(
            "Only secrets found in this file (absolute, relative or glob)."))] = None,
        since: Since = None,
        project: Project = None,
        all_projects: AllProjects = False,
        limit: FindingsLimit = 20,
        cursor: Cursor = None,
    ) -> CallToolResult:
        return _run(T.secret_findings, self.bridge, session_id=session_id, secret_type=type,
                    path=path, since=since, project=project, all_projects=all_projects,
                    limit=limit, cursor=cursor)

    def usage_summary(
        self,
        since: Since = None,
        until: Until = None,
        agent: AgentFilter = None,
        project: Project = None,
        all_projects: AllProjects = False,
        limit: RowsLimit = 10,
        cursor: Cursor = None,
    ) -> CallToolResult:
        return _run(T.usage_summary, self.bridge, since=since, until=until, agent=agent,
                    project=project, all_projects=all_projects, limit=limit, cursor=cursor)


DESCRIPTIONS: dict[str, str] = {
    "search_history": (
        "Full-text search of the record of coding-agent sessions: prompts, assistant "
        "messages, commands, paths read and edited, session titles. Use it for 'what did we decide about X', 'when did we "
        "discuss Y'. Hits, best first, with session id and title, event id, turn id, "
        "kind, time and a snippet; follow up with session_log or get_session."
    ),
    "list_sessions": (
        f"List coding-agent sessions ({AGENT_NAMES}), most recently active first (or by start, tokens, tool calls): id, agent, title, project, model, times, "
        "counts of prompts, tool calls and errors, tokens, cost, parent session."
    ),
    "get_session": (
        "One session's facts: agent, model, project, times, counts, tokens, event counts "
        "by kind, its parent and children (subagent or forked sessions), and its turn "
        "list (turn id, start, end, status, model), paged."
    ),
    "session_log": (
        "What happened in a session, turn by turn: each turn's prompt, its steps (files "
        "read and edited, commands with exit code and duration, searches, sub-agents, "
        "other tool calls), the answer, tokens and wall time. Paged by turns."
    ),
    "file_history": (
        "Who read and who changed a file, newest first: each read or edit with its time, "
        "operation (read, grep, add, update, delete, move, write), session and turn. Use "
        "it for 'has this file been changed by another session today?' (since: 1d)."
    ),
    "commands": (
        "Shell commands the agents ran, newest first: command line, cwd, exit code, "
        "duration, whether it failed, session and turn. Use it for 'which command failed "
        "last time we ran the migration?' (failed_only, contains)."
    ),
    "secret_findings": (
        "Secrets that reached a model, newest first: the detect-secrets type, where "
        "(file, line, which content), session and turn, and a keyed hash (the same "
        "secret has the same hash). Never the value: the record does not hold it."
    ),
    "usage_summary": (
        "Tokens used (input, output, cache read and write, reasoning, total) and what "
        "they cost, in total and by model, project, day (UTC, newest first) and agent, "
        "with the sessions and model responses counted. Each cost is {usd, kind}: "
        "estimated (priced from a price table), reported (the agent's own figure), "
        "unpriced (usd null: the model is unknown, with unpriced_tokens and a reason) "
        "or mixed."
    ),
}


def build_server(bridge: Bridge) -> MCPServer[Any]:
    """The MCP server with every tool bound to ``bridge``."""
    bound = BridgeTools(bridge)
    tools = []
    for name, description in DESCRIPTIONS.items():
        tool = Tool.from_function(
            getattr(bound, name),
            name=name,
            description=description + FRAME,
            annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                        idempotent_hint=True, open_world_hint=False),
            structured_output=False,
        )
        _refuse_unknown_arguments(tool)
        tools.append(tool)
    return MCPServer(
        "agentsrc",
        version=__version__,
        instructions=(
            "agentsrc keeps a local record of what coding agents did on this machine. These "
            "read-only tools answer from it. By default they answer about the project this "
            f"server was started in ({bridge.project or 'all projects'}); all_projects: true "
            "widens any of them. " + UNTRUSTED
        ),
        log_level="WARNING",
        tools=tools,
    )


def _refuse_unknown_arguments(tool: Tool) -> None:
    """An argument the tool does not have is refused, in the schema and when called."""
    model = tool.fn_metadata.arg_model
    strict = type(model.__name__, (model,), {
        "model_config": ConfigDict(extra="forbid", arbitrary_types_allowed=True)})
    tool.fn_metadata.arg_model = strict
    tool.parameters["additionalProperties"] = False


def _run(fn: Any, bridge: Bridge, **arguments: Any) -> CallToolResult:
    try:
        result = fn(bridge, **arguments)
    except ToolCallError as exc:
        raise ToolError(str(exc)) from None
    text = orjson.dumps(result).decode()
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=result)


def serve(socket_path: Path, project: str | None, timeout: float) -> None:
    """Serve the tools over stdio until the client closes the stream."""
    build_server(Bridge(socket_path, project, timeout)).run("stdio")
