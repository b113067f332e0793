"""The per-line fast paths of a live append give what the general paths give, on any
input (Hypothesis): a Claude file's name read once per path, a typed prompt that is a
string, a user-role text that opens no tag."""

from __future__ import annotations

import os
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.adapters import claude, common, injected
from agentsrc_daemon.events import SessionFacts
from agentsrc_daemon.secrets import engine

# The rules as they were written before their fast paths (the oracle).
_OPEN_TAG = re.compile(r"^<([A-Za-z][A-Za-z0-9_ -]{0,63})(?:\s[^>]*)?>")
_WHOLE_WRAPPER = re.compile(r"^<([a-z][a-z0-9_ -]{0,63})>(.*)</\1>$", re.DOTALL)


def peel_reference(text: str) -> str | None:
    for _ in range(injected.MAX_PEELED_BLOCKS):
        marker = next((m for m in injected.LEADING_MARKERS if text.startswith(m + "\n")), None)
        if marker is not None:
            text = text[len(marker) :].lstrip()
            continue
        match = _OPEN_TAG.match(text)
        if match is None or match.group(1) not in set(injected.LEADING_TAGS):
            return text
        close = text.find(f"</{match.group(1)}>", match.end())
        if close < 0:
            return None
        text = text[close + len(match.group(1)) + 3 :].lstrip()
    return ""


def person_text_reference(text: str) -> str:
    for _ in range(injected.MAX_PEELED_BLOCKS):
        before = text = text.strip()
        if text.startswith(injected.IDE_CONTEXT_PREFIX):
            _, heading, request = text.partition(injected.IDE_REQUEST_HEADING)
            text = request.strip() if heading else ""
        text = peel_reference(text) or ""
        if not text or text in injected.INJECTED_TEXTS or text.startswith(injected.INJECTED_PREFIXES):
            return ""
        whole = _WHOLE_WRAPPER.match(text)
        if whole is not None and f"</{whole.group(1)}>" not in whole.group(2):
            if whole.group(1) not in injected.PERSON_WRAPPERS:
                return ""
            text = whole.group(2)
        if text == before:
            return text
    return ""


pieces = st.sampled_from(
    [
        "hello", " ", "\n", "<", ">", "</", "[Image]", "[Image]\n", "Warmup", "x",
        *(f"<{tag}>" for tag in injected.LEADING_TAGS[:6]),
        *(f"</{tag}>" for tag in injected.LEADING_TAGS[:6]),
        "<user_query>", "</user_query>", "<b>", "</b>", injected.IDE_CONTEXT_PREFIX,
        injected.IDE_REQUEST_HEADING, *injected.INJECTED_PREFIXES[:3],
    ]
)
joined = st.lists(pieces, max_size=12).map("".join)
tags = st.sampled_from(["b", "user_query", "x y", *injected.LEADING_TAGS[:4]])
wrapped = st.builds(lambda tag, inner, rest: f"<{tag}>{inner}</{tag}>{rest}", tags, joined,
                    st.sampled_from(["", " ", "\nhello"]))
texts = st.one_of(joined, wrapped, st.text(max_size=40))


@settings(max_examples=400, deadline=None)
@given(text=texts)
def test_person_text_is_the_rule_as_written(text: str) -> None:
    assert injected.person_text(text) == person_text_reference(text)


@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_a_string_prompt_is_its_one_text_block(text: str) -> None:
    assert claude._typed_prompt(text) == claude._typed_prompt([{"type": "text", "text": text}])


names = st.one_of(
    st.text(st.sampled_from("ab-_.9/é"), max_size=12),
    st.builds(lambda s: f"agent-{s}.jsonl", st.text(st.sampled_from("ab-_9.é"), max_size=8)),
    st.builds(lambda s: f"{s}.jsonl", st.text(st.sampled_from("ab-_9.é/"), max_size=140)),
)


@settings(max_examples=400, deadline=None)
@given(directory=st.sampled_from(["", "/h/p/", "/h/p/s/subagents/", "rel/"]), name=names)
def test_a_file_name_read_once_is_read_as_on_every_line(directory: str, name: str) -> None:
    path = directory + name
    base = os.path.basename(path)
    match = claude._AGENT_FILE.fullmatch(base)
    stem = base[: -len(".jsonl")] if base.endswith(".jsonl") else base
    expected = (match.group(1) if match else None), stem, bool(claude._SAFE_NAME.fullmatch(stem))
    assert claude._file_name(path) == expected


segment = st.sampled_from(["", ".", "a", ".env", ".aws", "id_rsa", "x.pem", "**", "*", "s?",
                           "[ab]", "secrets", ".ssh", "credentials", "é", "a b"])
paths = st.lists(segment, max_size=6).map("/".join)
patterns = st.one_of(
    st.sampled_from(engine.BUILTIN_SENSITIVE_PATHS),
    st.lists(segment, min_size=1, max_size=3).map("/".join),
    st.lists(segment, min_size=1, max_size=3).map(lambda p: "/" + "/".join(p)),
    st.lists(segment, min_size=1, max_size=3).map(lambda p: "~/" + "/".join(p)),
)


@settings(max_examples=600, deadline=None)
@given(path=paths, pattern=patterns)
def test_a_pattern_told_apart_once_matches_as_its_glob(path: str, pattern: str) -> None:
    segs = engine._segments(path)
    if not segs:
        return
    assert engine._segments_match(segs, pattern) == engine._segments_match_glob(segs, pattern)


def test_the_builtin_sensitive_paths_mostly_skip_the_glob() -> None:
    kinds = [engine._pattern_kind(p)[0] for p in engine.BUILTIN_SENSITIVE_PATHS]
    assert kinds.count(engine._GLOB) == 3  # .env.*, *.pem, *.key


def first_line_reference(text: str, limit: int = 120) -> str:
    for line in text[: common.TITLE_SCAN_CHARS].splitlines():
        stripped = line.strip()
        if stripped:
            return stripped[:limit]
    return ""


line_parts = st.sampled_from(["a", " ", "\n", "\r", "\r\n", "\x0b", "\x1c", "\u2028", "\x85",
                              "word", "  \t", "é"])


@settings(max_examples=500, deadline=None)
@given(
    before=st.integers(0, 48),
    blank=st.sampled_from(["\n", " \n", "\r\n", "\t\r", "\u2028"]),
    parts=st.lists(line_parts, max_size=20).map("".join),
    limit=st.integers(1, 200),
)
def test_a_long_texts_first_line_is_found_in_its_first_look(
    before: int, blank: str, parts: str, limit: int
) -> None:
    """Blank lines up to about the first look's end, then the first line, with line
    breaks of every kind around that end."""
    lead = blank * ((common.FIRST_LOOK_CHARS - before) // len(blank))
    for text in (lead + parts + "tail\nmore", lead + parts, "x" * 2000 + parts):
        assert common.first_line(text, limit) == first_line_reference(text, limit)


@settings(max_examples=200, deadline=None)
@given(rank=st.one_of(st.none(), st.integers(-2, 4), st.floats(0, 3), st.text(max_size=2),
                      st.booleans()))
def test_a_prompt_titles_as_before_whatever_the_rank_kept(rank: object) -> None:
    """The title's rank is read before the first line is looked for: the same title
    (or none) as _title alone gives, whatever an older state kept there."""
    stem = "0b8a6a2e-0000-4000-8000-000000000001"
    path = f"/h/.claude/projects/-p/{stem}.jsonl"
    obj = {"type": "user", "sessionId": stem, "uuid": "u1",
           "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p",
           "message": {"role": "user", "content": "a prompt\nsecond line"}}
    state = claude.ADAPTER.initial_state(path)
    state["title_rank"] = rank
    titles = [r.title for r in claude.ADAPTER.parse(obj, 0, path, state)
              if isinstance(r, SessionFacts) and r.title]
    assert titles == ([] if claude._int(rank) else ["a prompt"])
