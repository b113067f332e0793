"""The Amp adapter: the corpus's thread and a fixture thread (made up in the corpus
thread's shapes, with what it lacks: a shell command, edits, a refused tool, an answer
still streaming, a side request), counted exactly against tests/raw_counts_qwen_amp_pi.py;
its rewrites, its costs, and properties. Nothing of the corpus is printed verbatim."""

from __future__ import annotations

import copy
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest
from adapter_counts import adapter_counts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raw_counts_qwen_amp_pi import amp_counts

from agentsrc_daemon.adapters.amp import ADAPTER, credits_cost
from agentsrc_daemon.adapters.injected import first_person_text
from agentsrc_daemon.events import (
    COMPACTION,
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
)
from agentsrc_daemon.pricing import export, table
from agentsrc_daemon.pricing.price import Pricer
from agentsrc_daemon.pricing.usage import normalize

from corpus import corpus_home
from raw_counts import USAGE_KEYS, Counts
from raw_texts import amp as raw_user_texts

THREAD = Path(__file__).parent / "fixtures" / "amp" / "threads" / "T-5e5a0a00-0000-4000-8000-000000000001.json"
CORPUS_THREAD = ".local/share/amp/threads/T-16c2227a-e98f-4969-998b-aaa50a930b05.json"


class S(NamedTuple):
    prompts: int
    briefs: int
    messages: int
    tool_calls: int
    commands: dict[int | None, int]
    edits: dict[str, int]
    usage: tuple[int, ...]  # USAGE_KEYS in order
    cost: Decimal  # dollars the thread recorded (its credits are cents)


def summary(c: Counts, cost: Decimal) -> S:
    return S(c.prompts, c.briefs, c.messages, c.tool_calls, dict(Counter(c.commands)),
             dict(Counter(op for _, op in c.edits)), tuple(c.usage[k] for k in USAGE_KEYS), cost)


# The corpus thread, read by hand: 3 typed messages, 3 answers with text, 2 read_web_page
# calls, 5 answers billed plus 1 title generation in its ledger (627 input tokens: 590
# + 9 + 9 + 5 + 9 + 5), credits 4.561790.
EXPECTED = {
    "corpus": S(3, 0, 3, 2, {}, {}, (627, 567, 76593, 3696, 0, 81483), Decimal("0.04561790")),
    "fixture": S(2, 0, 2, 5, {1: 1}, {"update": 1, "write": 1}, (9635, 1050, 54900, 2600, 0, 68185),
                 Decimal("0.0637692")),
}


def path_of(name: str) -> Path:
    return corpus_home() / CORPUS_THREAD if name == "corpus" else THREAD


def parse(path: Path | str, doc: Any = None, state: dict[str, Any] | None = None) -> tuple[list[Record], dict[str, Any]]:
    path = str(path)
    state = ADAPTER.initial_state(path) if state is None else state
    doc = orjson.loads(Path(path).read_bytes()) if doc is None else doc
    return ADAPTER.parse_document(doc, path, state), state


def events(records: list[Record], kind: str | None = None) -> list[Event]:
    return [r for r in records if isinstance(r, Event) and (kind is None or r.kind == kind)]


def facts(records: list[Record]) -> list[SessionFacts]:
    return [r for r in records if isinstance(r, SessionFacts)]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_counts_against_the_raw_records(name: str) -> None:
    path = path_of(name)
    raw, raw_cost = amp_counts(path)
    assert summary(raw, raw_cost) == EXPECTED[name]
    records, state = parse(path)
    assert adapter_counts(records) == (raw, raw_cost)
    assert not [r for r in records if isinstance(r, Drift)]
    assert len(orjson.dumps(state)) < 16 * 1024


def test_corpus_thread_facts_times_and_title() -> None:
    path = path_of("corpus")
    records, _ = parse(path)
    thread = "amp:T-16c2227a-e98f-4969-998b-aaa50a930b05"
    assert {e.session_id for e in events(records)} == {thread}
    last = facts(records)[-1]
    assert (last.cwd, last.model, last.version, last.originator, last.started_at) == (
        "/home/runner/workspace", "claude-sonnet-4-5-20250929", "0.0.1761595317-gdb0f30", "CLI",
        "2025-10-27T20:18:26.663Z")
    # The thread's own title (Amp generated it); no prompt title before it.
    assert [f.title for f in facts(records) if f.title] == ["Greeting and initial interaction"]
    assert first_person_text(raw_user_texts(path)) is not None  # its prompts are typed
    kinds = Counter(e.kind for e in events(records))
    assert (kinds[TURN_START], kinds[TURN_END], kinds[REASONING]) == (3, 2, 3)
    # Answers take the time of the ledger event that billed them; results their call's.
    answers = {e.key.rsplit(":", 1)[1]: e.ts for e in events(records, MESSAGE)}
    assert answers == {"1": "2025-10-27T20:20:13.854Z", "5": "2025-10-27T20:20:33.699Z",
                       "9": "2025-10-27T20:20:55.242Z"}
    calls = {e.call_id: e.ts for e in events(records, TOOL_CALL)}
    assert calls == {e.call_id: e.ts for e in events(records, TOOL_RESULT)}
    assert all(e.ts for e in events(records))


def test_corpus_credits_are_cents_of_the_list_price() -> None:
    """Every request of the corpus thread: its credits / 100 (our reported cost) equal
    genai-prices' estimate of its tokens at Anthropic's list prices, to the dollar's last
    digit: Amp passes model costs through without markup (docs/formats.md, Amp)."""
    records, _ = parse(path_of("corpus"))
    pricer = Pricer(table.loads(export.bundled_table()))
    usage = events(records, USAGE)
    assert len(usage) == 6
    for event in usage:
        priced = pricer.price(normalize("amp", event.data, event.ts))
        assert priced.cost.kind == "reported" and priced.estimate.kind == "estimated"
        assert priced.cost.usd == priced.estimate.usd == Decimal(str(event.data["credits"])) / 100


def test_fixture_records() -> None:
    records, _ = parse(THREAD)
    results = {e.tool: e.data for e in events(records, TOOL_RESULT)}
    assert results["Bash"]["exit_code"] == 1 and results["Bash"]["is_error"] is False
    assert results["Grep"]["is_error"] is True  # refused by the person
    assert all(v["exit_code"] is None for k, v in results.items() if k != "Bash")
    usage = events(records, USAGE)
    # Message 7 has no usage yet: its ledger event stands for it (revision 1); the side
    # requests (title generation, the oracle) are keyed by their ledger ids.
    assert sorted((e.key.split(":", 2)[2], e.revision, e.data.get("operation")) for e in usage) == [
        ("1:usage", 2, None), ("3:usage", 2, None), ("5:usage", 2, None), ("7:usage", 1, None),
        ("9:usage", 2, None), ("ledger:5e5a0a00-1ed9-4000-8000-000000000000", 0, "title-generation"),
        ("ledger:5e5a0a00-1ed9-4000-8000-0000000000a0", 0, "oracle")]
    assert len(events(records, COMPACTION)) == 1
    # The answer still streaming is not read yet; the prompt before it is.
    assert [e.data["text"] for e in events(records, PROMPT)] == [
        "Add a /health endpoint to the server", "Now run the tests again"]
    assert [e.key.rsplit(":", 1)[1] for e in events(records, MESSAGE)] == ["1", "9"]
    assert {t.cwd for t in records if isinstance(t, TurnFacts) and t.status == "open"} == {"/home/dev/app"}


def test_a_rewrite_emits_only_what_changed() -> None:
    doc = orjson.loads(THREAD.read_bytes())
    first, state = parse(THREAD, copy.deepcopy(doc))
    assert events(parse(THREAD, copy.deepcopy(doc), state)[0]) == []
    # Amp rewrites the thread: message 7 gets its usage, the streaming answer finishes
    # with its own, and the ledger bills it.
    doc["v"] += 3
    doc["messages"][7]["usage"] = {"model": "claude-sonnet-4-5-20250929", "inputTokens": 7, "outputTokens": 110,
                                   "cacheCreationInputTokens": 150, "cacheReadInputTokens": 14400, "credits": 0.6}
    doc["messages"][12] = {"role": "assistant", "messageId": 12, "content": [{"type": "text", "text": "Running the tests: all pass."}],
                           "state": {"type": "complete", "stopReason": "end_turn"},
                           "usage": {"model": "claude-sonnet-4-5-20250929", "inputTokens": 3, "outputTokens": 9,
                                     "cacheCreationInputTokens": 0, "cacheReadInputTokens": 15000, "credits": 0.4644}}
    doc["usageLedger"]["events"].append({"id": "5e5a0a00-1ed9-4000-8000-00000000000c", "timestamp": "2026-01-15T10:01:05.000Z",
                                         "model": "claude-sonnet-4-5-20250929", "credits": 0.4644,
                                         "tokens": {"input": 3, "output": 9}, "operationType": "inference",
                                         "fromMessageId": 11, "toMessageId": 12})
    more = events(parse(THREAD, copy.deepcopy(doc), state)[0])
    assert sorted((e.kind, e.key.split(":", 2)[2], e.revision) for e in more) == [
        (MESSAGE, "12", 0), (USAGE, "12:usage", 2), (USAGE, "7:usage", 2)]
    message_7 = next(e for e in more if e.key.endswith(":7:usage"))
    assert (message_7.data["cache_read_tokens"], message_7.data["cost"]) == (14400, 0.006)
    assert next(e for e in more if e.kind == MESSAGE).ts == "2026-01-15T10:01:05.000Z"
    # A lost state re-emits everything under the very same keys.
    fresh = events(parse(THREAD, copy.deepcopy(doc))[0])
    assert {e.key for e in fresh} == {e.key for e in events(first)} | {e.key for e in more}


def test_drift_for_what_is_not_understood() -> None:
    doc = {"id": "T-x", "messages": [
        {"role": "system", "messageId": 0, "content": []},
        {"role": "user", "messageId": 1, "content": [{"type": "video"}, {"type": "text", "text": "hi"}]},
        {"role": "assistant", "messageId": 2, "content": [{"type": "server_tool_use"}], "state": {"type": "complete"}},
    ], "env": {"initial": {"platform": {"clientVersion": "0.0.1"}}}}
    records, _ = parse("/h/.local/share/amp/threads/T-x.json", doc)
    assert [(d.version, d.record_type) for d in records if isinstance(d, Drift)] == [
        ("0.0.1", "message/system"), ("0.0.1", "user/video"), ("0.0.1", "assistant/server_tool_use")]
    assert parse("/h/t.json", {"messages": []})[0] == [Drift("amp", "unknown", "thread/<no id>")]


def test_credits_cost() -> None:
    assert credits_cost(0.9333) == 0.009333 and credits_cost(0) == 0.0
    assert credits_cost(-1) is None and credits_cost(True) is None and credits_cost("1") is None


json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=8)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
blocks = st.lists(st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "thinking", "tool_use", "tool_result", "summary"]) | json_values},
    optional={"text": json_values, "id": st.sampled_from(["t1", "t2"]) | json_values, "name": json_values,
              "input": json_values, "toolUseID": st.sampled_from(["t1", "t2"]) | json_values,
              "run": json_values | st.fixed_dictionaries({"status": json_values, "result": json_values})}),
    max_size=3)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "info"]) | json_values,
     "messageId": st.integers(0, 4) | json_values},
    optional={"content": blocks | json_values, "state": json_values, "usage": json_values, "meta": json_values})
threads = st.fixed_dictionaries(
    {"id": st.just("T-1") | json_values},
    optional={"messages": st.lists(messages, max_size=5) | json_values, "title": json_values,
              "created": json_values, "env": json_values,
              "usageLedger": json_values | st.fixed_dictionaries({"events": st.lists(json_values, max_size=3)})})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(threads | json_values, min_size=1, max_size=3))
def test_documents_never_raise_and_re_reading_adds_nothing(docs: list[Any]) -> None:
    path = str(THREAD)
    state = ADAPTER.initial_state(path)
    for doc in docs:
        out = ADAPTER.parse_document(copy.deepcopy(doc), path, state)
        assert all(isinstance(r, Event | SessionFacts | TurnFacts | Drift) for r in out)
        orjson.dumps(state)
    for doc in docs:
        assert events(ADAPTER.parse_document(copy.deepcopy(doc), path, state)) == []


def test_record_kind_for_the_fidelity_tally() -> None:
    # One record per thread read, under the client version the thread names.
    doc = orjson.loads(THREAD.read_bytes())
    _, state = parse(THREAD)
    assert ADAPTER.record_kind(doc, state) == ("0.0.1768400000-gabc1234", "thread", False)
    assert ADAPTER.record_kind([], ADAPTER.initial_state(str(THREAD))) == ("unknown", "<not an object>", False)
