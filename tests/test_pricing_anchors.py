"""The exact anchors of issue 27: for sessions of the corpus chosen by hand, the cost
computed here from the raw records with genai-prices' own ``calc_price`` equals, to the
nano-dollar, the sum of our prices of the adapters' usage events for the same files.

* Claude e2e4f7f7 (Claude Code 2.1.92: 1-hour cache writes on 87 of its 89 usage lines),
  which ccusage prices at $4.0860;
* Claude d3ad4cdc (1.0.17, 5-minute writes), $2.0327 by ccusage;
* Claude f84b640b with its sub-agent's file (ccusage reads the main file only:
  8,685,321 input tokens where the session has 8,762,403);
* a request past 200K input (the corpus has none): a fixture written here, streamed as
  Claude Code writes it, one line per content block;
* Codex 019d021f (0.105.0: cached input inside input_tokens, a model switch from
  gpt-5.2-codex to gpt-5.4), and a 0.34 rollout with no model: unpriced, and says so;
* Gemini 50228c11 (thoughts apart from output, two models).

The expected side reads the raw records its own way (Claude: per message id the largest
value of each counter over its lines; Codex: each changed token_count's
last_token_usage; Gemini: each message's tokens) and prices each request with the
library; the tested side is the adapters (tests/adapter_lines.py) then ``normalize``
and ``Pricer``."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from genai_prices import Usage, calc_price

from agentsrc_daemon.adapters import ADAPTERS
from agentsrc_daemon.events import USAGE, Event
from agentsrc_daemon.pricing import cost, export, table
from agentsrc_daemon.pricing.price import Pricer
from agentsrc_daemon.pricing.usage import normalize, parse_ts

from adapter_lines import parse_lines_with, read_lines
from corpus import corpus_files, corpus_home
from harness import DaemonProcess, copy_tree

PRICER = Pricer(table.loads(export.bundled_table()))
CENT = Decimal("0.0001")


def library(usage: Usage, model: str, provider: str, ts: str) -> Decimal:
    when = parse_ts(ts)
    assert when is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calc_price(usage, model, provider_id=provider, genai_request_timestamp=when).total_price


def usage_events(adapter: str, paths: list[Path]) -> list[Event]:
    """The adapter's usage events for these files, each key once (the store inserts a
    key once, whichever file holds it)."""
    seen: dict[str, Event] = {}
    for path in paths:
        if path.suffix == ".json":  # a document, with the per-file state ingest keeps
            state = ADAPTERS[adapter].initial_state(str(path))
            records = ADAPTERS[adapter].parse_document(orjson.loads(path.read_bytes()), str(path), state)
        else:
            records, _ = parse_lines_with(ADAPTERS[adapter], path, read_lines(path))
        for record in records:
            if isinstance(record, Event) and record.kind == USAGE:
                seen.setdefault(record.key, record)
    return list(seen.values())


def ours(events: list[Event]) -> cost.Cost:
    return cost.total(PRICER.price(normalize(e.adapter, e.data, e.ts)).cost for e in events)


# -- Claude ---------------------------------------------------------------------------


def claude_lines(paths: list[Path], session: str) -> Iterator[dict[str, Any]]:
    for path in paths:
        for line in path.read_bytes().splitlines():
            obj = json.loads(line) if line.strip() else None
            if isinstance(obj, dict) and obj.get("sessionId") == session:
                yield obj


def claude_expected(paths: list[Path], session: str) -> tuple[Decimal, int]:
    """Per message id, the largest value of each usage counter over the lines that
    repeat it (a streamed message's lines are snapshots), priced at its first line's
    time. Returns the dollars and the uncached input tokens."""
    messages: dict[str, dict[str, Any]] = {}
    for obj in claude_lines(paths, session):
        message = obj.get("message")
        if obj.get("type") != "assistant" or not isinstance(message, dict):
            continue
        raw = message.get("usage")
        if not isinstance(raw, dict) or message.get("model") == "<synthetic>":
            continue
        counts = {
            "in": raw.get("input_tokens", 0),
            "out": raw.get("output_tokens", 0),
            "read": raw.get("cache_read_input_tokens", 0),
            "write": raw.get("cache_creation_input_tokens", 0),
            "hour": (raw.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0),
        }
        key = message.get("id") or obj["uuid"]  # a message without an id: its line alone
        seen = messages.setdefault(key, {"model": message["model"], "ts": obj["timestamp"]})
        for name, n in counts.items():
            seen[name] = max(seen.get(name, 0), n)
    total = Decimal(0)
    for m in messages.values():
        usage = Usage(input_tokens=m["in"] + m["read"] + m["write"], cache_read_tokens=m["read"],
                      cache_write_tokens=m["write"], cache_write_1h_tokens=m["hour"],
                      output_tokens=m["out"])
        total += library(usage, m["model"], "anthropic", m["ts"])
    return total, sum(m["in"] for m in messages.values())


def claude_files() -> list[Path]:
    return corpus_files(".claude/projects/**/*.jsonl", read_only=True)


def claude_session(session: str) -> list[Event]:
    events = usage_events("claude-code", claude_files())
    return [e for e in events if e.session_id == f"claude-code:{session}"]


@pytest.mark.parametrize(("session", "ccusage", "one_hour"), [
    ("e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06", Decimal("4.0860"), True),
    ("d3ad4cdc-5657-435d-98fa-0035d53e383d", Decimal("2.0327"), False),
])
def test_claude_sessions_as_the_library_and_ccusage_price_them(
    session: str, ccusage: Decimal, one_hour: bool
) -> None:
    expected, _ = claude_expected(claude_files(), session)
    events = claude_session(session)
    got = ours(events)
    assert got.kind == "estimated" and got.usd == expected
    assert got.usd.quantize(CENT) == ccusage  # type: ignore[union-attr]
    assert any(e.data.get("cache_creation_1h_tokens") for e in events) is one_hour


def test_a_claude_session_with_its_sub_agent() -> None:
    session = "f84b640b-c091-44bf-9464-71a557d19a1d"
    expected, uncached = claude_expected(claude_files(), session)
    events = claude_session(session)
    got = ours(events)
    assert got.kind == "estimated" and got.usd == expected
    assert uncached == sum(e.data["input_tokens"] for e in events) == 8_762_403
    main = [e for e in events if e.subagent_id is None]
    assert sum(e.data["input_tokens"] for e in main) == 8_685_321  # what ccusage counts
    assert got.usd.quantize(CENT) == Decimal("26.7487")  # type: ignore[union-attr]


def _assistant(uuid: str, message: str, ts: str, usage: dict[str, Any]) -> bytes:
    line = {"type": "assistant", "uuid": uuid, "sessionId": "fixture-200k", "timestamp": ts,
            "message": {"id": message, "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                        "content": [{"type": "text", "text": uuid}], "usage": usage}}
    return orjson.dumps(line) + b"\n"


def test_a_request_past_200k_input(tmp_path: Path) -> None:
    """A fixture: the corpus has no request past 200K input. A message streamed over two
    lines (output 10, then 900) with 250,000 input tokens, then one under the tier."""
    big = {"input_tokens": 5_000, "cache_read_input_tokens": 200_000,
           "cache_creation_input_tokens": 45_000,
           "cache_creation": {"ephemeral_5m_input_tokens": 25_000, "ephemeral_1h_input_tokens": 20_000}}
    path = tmp_path / "fixture-200k.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        _assistant("u1", "msg_big", "2025-10-01T10:00:00Z", big | {"output_tokens": 10})
        + _assistant("u2", "msg_big", "2025-10-01T10:00:05Z", big | {"output_tokens": 900})
        + _assistant("u3", "msg_small", "2025-10-01T10:01:00Z",
                     {"input_tokens": 7, "cache_read_input_tokens": 150_000, "output_tokens": 300})
    )
    expected, _ = claude_expected([path], "fixture-200k")
    events = usage_events("claude-code", [path])
    assert len(events) == 3  # the big message's first line, its increase, the small one
    assert ours(events).usd == expected
    # every token of the big request at the tier: twice the input, 1.5 times the output
    tiered = (5_000 * 6 + 200_000 * Decimal("0.6") + 25_000 * Decimal("7.5") + 20_000 * 12
              + 900 * Decimal("22.5") + 7 * 3 + 150_000 * Decimal("0.3") + 300 * 15) / 1_000_000
    assert expected == tiered == Decimal("0.647271")


# -- Codex ----------------------------------------------------------------------------


def codex_file(uuid: str) -> Path:
    (path,) = corpus_files(f".codex/sessions/**/rollout-*{uuid}.jsonl")
    return path


def codex_expected(path: Path) -> tuple[Decimal, int]:
    """Each token_count whose cumulative total changed is one request, its
    last_token_usage (input with the cached part in it, output with the reasoning),
    priced at the model of the last turn_context before it."""
    model, previous, total, cached = None, None, Decimal(0), 0
    for line in path.read_bytes().splitlines():
        obj = json.loads(line)
        payload = obj.get("payload") or {}
        if obj.get("type") == "turn_context":
            model = payload.get("model")
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if not info or info.get("total_token_usage") == previous:
            continue
        previous, last = info["total_token_usage"], info["last_token_usage"]
        usage = Usage(input_tokens=last["input_tokens"], cache_read_tokens=last["cached_input_tokens"],
                      output_tokens=last["output_tokens"])
        total += library(usage, model, "openai", obj["timestamp"])
        cached += last["cached_input_tokens"]
    return total, cached


def test_a_codex_session_with_cached_input_and_a_model_switch() -> None:
    path = codex_file("019d021f-1244-77d2-b5aa-ba1d70f11e87")
    expected, cached = codex_expected(path)
    events = usage_events("codex", [path])
    assert {e.data["model"] for e in events} == {"gpt-5.2-codex", "gpt-5.4"}
    assert sum(e.data["cache_read_tokens"] for e in events) == cached == 20_439_552
    got = ours(events)
    assert got.kind == "estimated" and got.usd == expected
    assert got.usd.quantize(CENT) == Decimal("10.9972")  # type: ignore[union-attr]


def test_a_codex_rollout_without_a_model_is_unpriced_and_says_so() -> None:
    path = codex_file("97b66f6c-a160-40e0-bd0f-1fdcbbb9498b")  # 0.34.0: no turn_context
    events = usage_events("codex", [path])
    got = ours(events).to_json()
    tokens = sum(e.data["input_tokens"] + e.data["output_tokens"] for e in events)
    assert got == {"usd": None, "kind": "unpriced", "unpriced_tokens": tokens,
                   "reason": "no model recorded"}
    assert tokens > 50_000_000


# -- Gemini ---------------------------------------------------------------------------


def test_a_gemini_session_with_two_models() -> None:
    (path,) = corpus_files(".gemini/tmp/*/chats/session-*-50228c11.json")
    expected = Decimal(0)
    for message in json.loads(path.read_bytes())["messages"]:
        tokens = message.get("tokens")
        if not tokens:
            continue
        usage = Usage(input_tokens=tokens["input"] + tokens.get("tool", 0),
                      cache_read_tokens=tokens["cached"],
                      output_tokens=tokens["output"] + tokens.get("thoughts", 0))
        expected += library(usage, message["model"], "google", message["timestamp"])
    events = usage_events("gemini", [path])
    assert {e.data["model"] for e in events} == {"gemini-2.5-pro", "gemini-2.5-flash"}
    assert any(e.data["reasoning_tokens"] for e in events)
    got = ours(events)
    assert got.kind == "estimated" and got.usd == expected
    assert got.usd.quantize(CENT) == Decimal("0.4390")  # type: ignore[union-attr]



# -- through the daemon ---------------------------------------------------------------


@pytest.fixture(scope="module")
def daemon_on_corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProcess]:
    """The real daemon on a copy of the corpus, with the 200K fixture beside it."""
    home = tmp_path_factory.mktemp("anchors") / "home"
    copy_tree(corpus_home(), home)
    fixture = home / ".claude" / "projects" / "-tmp-fixture" / "fixture-200k.jsonl"
    fixture.parent.mkdir(parents=True)
    test_a_request_past_200k_input(fixture.parent)  # writes fixture-200k.jsonl there
    d = DaemonProcess(home)
    try:
        d.start()
        d.wait_live()
        yield d
    finally:
        d.cleanup()


def _micro(usd: Decimal) -> float:
    return cost.usd_float(usd)


@pytest.mark.slow
def test_the_daemon_shows_the_anchors_dollars(daemon_on_corpus: DaemonProcess) -> None:
    """The sessions priced above from their raw records, as the real daemon answers them
    (sessions.get and usage.report by session), to the micro-dollar."""
    d = daemon_on_corpus
    anchors = {
        "claude-code:e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06":
            claude_expected(claude_files(), "e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06")[0],
        "claude-code:d3ad4cdc-5657-435d-98fa-0035d53e383d":
            claude_expected(claude_files(), "d3ad4cdc-5657-435d-98fa-0035d53e383d")[0],
        "claude-code:f84b640b-c091-44bf-9464-71a557d19a1d":
            claude_expected(claude_files(), "f84b640b-c091-44bf-9464-71a557d19a1d")[0],
        "claude-code:fixture-200k": Decimal("0.647271"),
        "codex:019d021f-1244-77d2-b5aa-ba1d70f11e87":
            codex_expected(codex_file("019d021f-1244-77d2-b5aa-ba1d70f11e87"))[0],
    }
    (gemini,) = corpus_files(".gemini/tmp/*/chats/session-*-50228c11.json")
    gemini_id = next(s["id"] for s in d.call("sessions.list", {"agent": "gemini", "limit": 100})["sessions"]
                     if s["id"].startswith("gemini:50228c11"))
    anchors[gemini_id] = Decimal(0)
    for message in json.loads(gemini.read_bytes())["messages"]:
        tokens = message.get("tokens")
        if tokens:
            usage = Usage(input_tokens=tokens["input"] + tokens.get("tool", 0),
                          cache_read_tokens=tokens["cached"],
                          output_tokens=tokens["output"] + tokens.get("thoughts", 0))
            anchors[gemini_id] += library(usage, message["model"], "google", message["timestamp"])
    report = {r["session"]: r for r in d.call("usage.report", {"by": "session", "limit": 1000})["rows"]}
    for session, expected in anchors.items():
        shown = d.call("sessions.get", {"id": session})["session"]["cost"]
        assert shown == {"usd": _micro(expected), "kind": "estimated"}, session
        assert report[session]["cost"] == shown, session
    # To the cent, as ccusage shows them.
    assert _micro(anchors["claude-code:e2e4f7f7-0e2a-443b-a3ca-f6f7956cbc06"]) == 4.086012
    assert round(_micro(anchors["claude-code:d3ad4cdc-5657-435d-98fa-0035d53e383d"]), 4) == 2.0327
    assert round(_micro(anchors["claude-code:f84b640b-c091-44bf-9464-71a557d19a1d"]), 4) == 26.7487
    assert round(_micro(anchors["codex:019d021f-1244-77d2-b5aa-ba1d70f11e87"]), 4) == 10.9972
    # The 0.34 rollout without a model: unpriced, with its tokens, and why.
    unpriced = d.call("sessions.get", {"id": "97b66f6c-a160-40e0-bd0f-1fdcbbb9498b"})["session"]
    tokens = sum(e.data["input_tokens"] + e.data["output_tokens"]
                 for e in usage_events("codex", [codex_file("97b66f6c-a160-40e0-bd0f-1fdcbbb9498b")]))
    assert unpriced["cost"] == {"usd": None, "kind": "unpriced", "unpriced_tokens": tokens,
                                "reason": "no model recorded"}
