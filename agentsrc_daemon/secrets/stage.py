"""The scan stage: what the model saw and wrote is scanned for secrets at ingest; only
findings are kept, and stored text is redacted before it is written.

For each batch of events from one file round:

* tool results: their contents (tool output, stdout/stderr, a read file's content) and,
  for Claude, the spilled ``tool-results/<id>.txt`` file the result points at (only at
  the path the layout dictates, never a path taken from transcript text; 16 MiB cap);
* tool calls: the content they write (Write content, Edit/MultiEdit new strings,
  NotebookEdit source, apply_patch text) and their stored input strings (commands);
* prompts and assistant text.

Every finding becomes a ``secret`` event (type, line within the content, keyed hash of
the value, the file path when the content was a file read). Stored strings (prompt and
assistant text, tool inputs, command lines) are redacted: each secret replaced by
``[REDACTED:<type>]``. Reads of sensitive paths (.env, keys, credentials...) become
``sensitive_read`` events whether or not their content matched anything.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from ..config import ScanConfig
from ..events import (
    COMMAND,
    DIRECTIVE,
    ERROR,
    MESSAGE,
    PROMPT,
    READ,
    SECRET,
    SENSITIVE_READ,
    TOOL_CALL,
    TOOL_RESULT,
    Event,
    derived_event,
    key_digest,
)
from .engine import (
    Finding,
    SecretScanner,
    is_excluded_path,
    is_excluded_session,
    is_sensitive_path,
)

log = structlog.get_logger("agentsrc.secrets")

MAX_SPILL_BYTES = 16 * 1024 * 1024
MIN_SCANNED_CHARS = 8  # no detector fires on anything shorter
# A text over this is scanned in slices: a slice is held with its encoding and the
# engine's copy beside the text (about 3 MB here; 12.9 MB with slices of 4 MiB, at the
# daemon's peak, beside a 50 MB line's string: docs/performance.md).
SLICE_CHARS = 1024 * 1024
CALL_PATHS_REMEMBERED = 4096

# Events whose stored strings can carry what the model saw or wrote. (Paths in read
# and edit events are not redacted: they are what those events are for.)
REDACTED_KINDS = frozenset({PROMPT, DIRECTIVE, MESSAGE, TOOL_CALL, COMMAND, ERROR})
# Tool input fields holding content the model wrote (full input, before summarizing).
WRITTEN_FIELDS = ("content", "new_string", "new_source", "new_text")


@dataclass
class SecretStage:
    scanner: SecretScanner
    config: ScanConfig
    # call id -> the paths its derived read events named: a result's content is
    # attributed to a file when its call read exactly one.
    _call_paths: OrderedDict[str, list[str]] = field(default_factory=OrderedDict)

    def process(self, events: list[Event]) -> list[Event]:
        extra: list[Event] = []
        for ev in events:
            if ev.kind == READ:
                self._remember_read(ev)
        jobs: list[_Job] = []
        for ev in events:
            if self.config.exclude_sessions and is_excluded_session(
                ev.session_id, self.config.exclude_sessions
            ):
                continue
            if ev.kind == READ:
                sensitive = self._sensitive_read(ev)
                if sensitive is not None:
                    extra.append(sensitive)
                continue
            if ev.contents or ev.kind in (TOOL_RESULT, TOOL_CALL):
                jobs.extend(self._content_jobs(ev))
            if ev.kind in REDACTED_KINDS:  # the others store no string to scan
                jobs.extend(self._stored_jobs(ev))
        if not jobs:
            return extra
        # One engine call for all the texts of this round: per-call overhead dominates
        # small texts. Huge texts go in slices (bounded memory).
        small = [j for j in jobs if len(j.text) <= SLICE_CHARS]
        for job, findings in zip(
            small, self.scanner.scan_many([j.text for j in small]), strict=True
        ):
            job.findings = findings
        # One finding per secret value per event: a Read result carries the same file
        # text as tool output and as file content, and both are what the model saw once.
        seen: set[tuple[str, str, str]] = set()
        for job in jobs:
            if job.findings is None:
                job.findings = self._scan_text(job.text)
            if not job.findings:
                continue
            if job.holder is not None:
                job.holder[job.field] = self.scanner.apply_redaction(job.text, job.findings)
            for f in job.findings:
                once = (job.event.key, f.type, f.value_hash)
                if once not in seen:
                    seen.add(once)
                    extra.append(self._finding(job.event, job.label, f, job.path, job.paths))
        return extra

    def redact_title(self, title: str) -> str | None:
        """Titles come from prompts: redacted like them, and not kept at all when no
        prompt text is (store_text off). Findings come from the prompt event itself."""
        if not self.config.store_text:
            return None
        return self.scanner.redact(title)[0]

    # ---- reads ----------------------------------------------------------------------

    def _remember_read(self, ev: Event) -> None:
        if not ev.call_id or not isinstance(ev.data.get("path"), str):
            return
        paths = self._call_paths.setdefault(ev.call_id, [])
        paths.append(ev.data["path"])
        self._call_paths.move_to_end(ev.call_id)
        while len(self._call_paths) > CALL_PATHS_REMEMBERED:
            self._call_paths.popitem(last=False)

    def _sensitive_read(self, ev: Event) -> Event | None:
        path = ev.data.get("path")
        if not isinstance(path, str):
            return None
        if not is_sensitive_path(path, self.config.sensitive_paths or None):
            return None
        data = {
            k: ev.data.get(k) for k in ("path", "rel_path", "project_root", "external", "op")
        }
        return derived_event(ev, SENSITIVE_READ, f"{ev.key}#sensitive", data)

    # ---- contents -------------------------------------------------------------------

    def _read_paths_of(self, ev: Event) -> list[str]:
        """The files the call read, each once, in order: a finding in the output of a
        command that read several (``cat .npmrc && cat keys/id_rsa``) could be in any of
        them, so it keeps them all as its candidate ``paths``."""
        return list(dict.fromkeys(self._call_paths.get(ev.call_id or "") or []))

    def _contents_of(self, ev: Event) -> Iterable[tuple[str, str]]:
        yield from ev.contents
        if ev.kind == TOOL_CALL and isinstance(ev.input, dict):
            for name in WRITTEN_FIELDS:
                value = ev.input.get(name)
                if isinstance(value, str):
                    yield name, value
            edits = ev.input.get("edits")
            if isinstance(edits, list):
                for i, edit in enumerate(edits):
                    if isinstance(edit, dict) and isinstance(edit.get("new_string"), str):
                        yield f"edits[{i}].new_string", edit["new_string"]
        if ev.kind == TOOL_RESULT and ev.spill_path:
            spilled = _read_spill(ev.spill_path, ev.source_path)
            if spilled is not None:
                yield "spilled", spilled

    def _content_jobs(self, ev: Event) -> list[_Job]:
        candidates = self._read_paths_of(ev) if ev.kind == TOOL_RESULT else []
        path = candidates[0] if len(candidates) == 1 else None
        if ev.kind == TOOL_CALL and isinstance(ev.input, dict):
            target = ev.input.get("file_path") or ev.input.get("path")
            if isinstance(target, str):
                path = target
        if path is not None and self.config.exclude_paths and is_excluded_path(
            path, self.config.exclude_paths
        ):
            return []
        if path is None and self.config.exclude_paths:
            candidates = [p for p in candidates if not is_excluded_path(p, self.config.exclude_paths)]
        return [
            _Job(ev, label, text, path, paths=candidates if len(candidates) > 1 else None)
            for label, text in self._contents_of(ev)
            if len(text) >= MIN_SCANNED_CHARS
        ]

    def _scan_text(self, text: str) -> list[Finding]:
        """Scan, in slices of at most SLICE_CHARS cut at line breaks, so a huge tool
        output or pasted prompt costs bounded extra memory (the engine encodes and
        hashes what it is given). Line numbers stay those of the whole text."""
        if len(text) <= SLICE_CHARS:
            return self.scanner.scan(text)
        out: list[Finding] = []
        start = 0
        lines_before = 0
        while start < len(text):
            end = min(start + SLICE_CHARS, len(text))
            if end < len(text):
                nl = text.rfind("\n", start, end)
                if nl > start:
                    end = nl + 1
            chunk = text[start:end]
            for f in self.scanner.scan(chunk):
                out.append(
                    Finding(f.type, f.line + lines_before, f.value_hash, f.start + start,
                            f.end + start)
                )
            lines_before += chunk.count("\n")
            start = end
        return out

    # ---- stored strings ----------------------------------------------------------------

    def _stored_jobs(self, ev: Event) -> list[_Job]:
        """The strings this event stores, to be redacted in place; findings in them
        (prompt and assistant text, command lines, tool inputs) become secret events."""
        # PROMPT and MESSAGE are among the REDACTED_KINDS (process calls this for those).
        if ev.kind in (PROMPT, MESSAGE) and not self.config.store_text:
            text = ev.data.pop("text", None)
            ev.data["text_omitted"] = True
            if isinstance(text, str):
                ev.data.setdefault("text_chars", len(text))
                return [_Job(ev, "text", text, None)] if len(text) >= MIN_SCANNED_CHARS else []
            return []
        if ev.kind not in REDACTED_KINDS:
            return []
        jobs: list[_Job] = []
        _collect_strings(ev, ev.data, "", jobs)
        return jobs

    def _finding(
        self, ev: Event, label: str, f: Finding, path: str | None,
        paths: list[str] | None = None,
    ) -> Event:
        data: dict[str, Any] = {
            "type": f.type,
            "line": f.line,
            "hash": f.value_hash,
            "label": label,
            "path": path,
            # The output of a call that read several files: the finding is in one of them.
            **({"paths": paths} if paths else {}),
            # The event the content belonged to, by its stored key digest: the finding's
            # event_id is resolved through it at query time.
            "of": key_digest(ev.key).hex(),
            "of_kind": ev.kind,
        }
        key = f"{ev.key}#secret:{label}:{f.line}:{f.type}:{f.value_hash[:16]}"
        return derived_event(ev, SECRET, key, data)


@dataclass(slots=True)
class _Job:
    """One text to scan: content (findings only) or a stored string (redacted in
    place through ``holder[field]``)."""

    event: Event
    label: str
    text: str
    path: str | None
    holder: dict[str, Any] | list[Any] | None = None
    field: Any = None
    findings: list[Finding] | None = None
    paths: list[str] | None = None  # candidate paths, when the content came from several


def _collect_strings(ev: Event, value: Any, where: str, jobs: list[_Job]) -> None:
    items: Iterable[tuple[Any, Any]]
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for k, v in items:
        # The label is built only for what is scanned or walked into: most values are
        # numbers, flags and short strings.
        if isinstance(v, str):
            if len(v) >= MIN_SCANNED_CHARS:
                jobs.append(_Job(ev, _label(where, k), v, None, value, k))
        elif isinstance(v, dict | list):
            _collect_strings(ev, v, _label(where, k), jobs)


def _label(where: str, k: Any) -> str:
    """The path of ``k`` under ``where`` in a job's label: 'input.command', 'edits[0]'."""
    return f"{where}.{k}" if where and isinstance(k, str) else (
        f"{where}[{k}]" if where else str(k)
    )


def _read_spill(spill_path: str, source_path: str) -> str | None:
    """A Claude spilled tool output, read only where the layout puts it:
    ``<project>/<session>/tool-results/<id>.txt``, for the session transcript beside
    ``<session>/`` or a subagent transcript inside ``<session>/subagents/``."""
    spill = Path(spill_path)
    src = Path(source_path)
    session_dir = spill.parent.parent
    in_layout = spill.parent.name == "tool-results" and (
        session_dir.parent == src.parent  # <project>/<session>.jsonl, agent-<id>.jsonl
        or session_dir == src.parent.parent  # <project>/<session>/subagents/agent-<id>.jsonl
    )
    if not in_layout:
        log.warning("spill_path_refused", reason="outside the session's tool-results")
        return None
    try:
        fd = os.open(spill, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_size > MAX_SPILL_BYTES:
            log.info("spill_too_large", size=st.st_size)
            return None
        # Its size, not the cap: os.read allocates what it is asked for before it
        # reads (16 MiB for a file of a few KiB, the worker's largest allocation).
        data = os.read(fd, st.st_size)
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace")
