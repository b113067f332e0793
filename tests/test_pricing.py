"""One request priced: exact dollars from the library's own prices (read from its
objects here and multiplied by hand, not through our code), the 200K tier's boundary,
1-hour against 5-minute cache writes, the kinds of cost and how they add, the agents'
usage in one shape, ``[prices]`` overrides and the fingerprint; Hypothesis properties
(monotonic in every token count, additive, never negative, an unknown model never $0)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from genai_prices.data_snapshot import get_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.errors import ConfigError
from agentsrc_daemon.pricing import cost, export, overrides, table
from agentsrc_daemon.pricing.price import Pricer
from agentsrc_daemon.pricing.usage import CONVENTIONS, RequestUsage, normalize

TABLE = table.loads(export.bundled_table())
PRICER = Pricer(TABLE)
WHEN = datetime(2025, 11, 3, 14, 0, tzinfo=UTC)
M = Decimal(1_000_000)


def library_rates(model: str, provider: str, ts: datetime = WHEN) -> dict[str, Any]:
    """The library's prices for a model at a time, from its own objects."""
    _, info = get_snapshot().find_provider_model(model, None, provider, None)
    return dict(vars(info.get_prices(ts)))


def base(rates: dict[str, Any], key: str) -> Decimal:
    """A price below any tier."""
    value = rates[key]
    return value.base if hasattr(value, "base") else value


def usd(request: RequestUsage) -> Decimal | None:
    return PRICER.price(request).cost.usd


# -- exact values ---------------------------------------------------------------------


def test_a_claude_request_to_the_nano_dollar() -> None:
    rates = library_rates("claude-sonnet-4-5", "anthropic")
    request = RequestUsage("claude-sonnet-4-5-20250929", WHEN, input_tokens=1_234,
                           cache_read_tokens=45_678, cache_write_5m_tokens=3_210,
                           cache_write_1h_tokens=987, output_tokens=654)
    expected = (
        1_234 * rates["input_mtok"].base
        + 45_678 * rates["cache_read_mtok"].base
        + 3_210 * rates["cache_write_mtok"].base
        + 987 * rates["cache_write_1h_mtok"].base
        + 654 * rates["output_mtok"].base
    ) / M
    priced = PRICER.price(request)
    assert priced.cost == cost.Cost(expected, "estimated")
    assert (priced.model, priced.provider) == ("claude-sonnet-4-5", "anthropic")
    assert expected == Decimal("0.0451749")  # 3, 0.30, 3.75, 6 and 15 dollars per million


def test_one_hour_cache_writes_cost_their_own_rate() -> None:
    rates = library_rates("claude-opus-4-6", "anthropic")
    five = RequestUsage("claude-opus-4-6", WHEN, 10, 0, 100_000, 0, 500)
    hour = RequestUsage("claude-opus-4-6", WHEN, 10, 0, 0, 100_000, 500)
    one_hour, five_minutes = base(rates, "cache_write_1h_mtok"), base(rates, "cache_write_mtok")
    difference = 100_000 * (one_hour - five_minutes) / M
    assert usd(hour) - usd(five) == difference > 0  # type: ignore[operator]
    # 1-hour writes are twice the input rate, 5-minute writes 1.25 times
    assert one_hour == 2 * base(rates, "input_mtok")
    assert five_minutes == Decimal("1.25") * base(rates, "input_mtok")


def test_the_200k_tier_prices_the_whole_request_past_it() -> None:
    rates = library_rates("claude-sonnet-4-5", "anthropic")
    base = {k: v.base for k, v in rates.items() if hasattr(v, "base")}
    high = {k: v.tiers[0].price for k, v in rates.items() if hasattr(v, "base")}
    assert {v.tiers[0].start for v in rates.values() if hasattr(v, "base")} == {200_000}

    def request(uncached: int) -> RequestUsage:  # 150,000 cache reads + 30,000 writes
        return RequestUsage("claude-sonnet-4-5", WHEN, uncached, 150_000, 30_000, 0, 2_000)

    def by_hand(r: RequestUsage, p: dict[str, Decimal]) -> Decimal:
        return (r.input_tokens * p["input_mtok"] + r.cache_read_tokens * p["cache_read_mtok"]
                + r.cache_write_tokens * p["cache_write_mtok"] + r.output_tokens * p["output_mtok"]) / M

    at = request(20_000)  # exactly 200,000 input tokens: not past the tier
    past = request(20_001)
    assert at.prompt_tokens == 200_000 and usd(at) == by_hand(at, base)
    assert usd(past) == by_hand(past, high)
    assert usd(past) > usd(at) * Decimal("1.9")  # type: ignore[operator]
    # A streamed message's later increase (its output only) is a part of a request past
    # the tier: priced at the tier, as the rest of its request.
    increase = normalize("claude-code", {"output_tokens": 40, "request_input_tokens": 200_001,
                                         "model": "claude-sonnet-4-5"}, "2025-11-03T14:00:00Z")
    assert usd(increase) == 40 * high["output_mtok"] / M
    # A sum of several requests (Copilot's shutdown totals) is never tiered.
    summed = RequestUsage("claude-sonnet-4-5", WHEN, 1_000_000, 0, 0, 0, 1_000, whole=False)
    assert usd(summed) == (1_000_000 * base["input_mtok"] + 1_000 * base["output_mtok"]) / M


def test_a_codex_request_with_cached_input() -> None:
    """Codex counts its cached input inside input_tokens and its reasoning inside
    output_tokens: normalized, then priced at OpenAI's rates for gpt-5."""
    data = {"input_tokens": 10_000, "cache_read_tokens": 8_000, "cache_creation_tokens": 0,
            "output_tokens": 700, "reasoning_tokens": 500, "total_tokens": 10_700,
            "model": "gpt-5-codex"}
    request = normalize("codex", data, "2025-11-03T14:00:00Z")
    assert (request.input_tokens, request.cache_read_tokens, request.output_tokens,
            request.reasoning_tokens, request.provider) == (2_000, 8_000, 700, 500, "openai")
    rates = library_rates("gpt-5-codex", "openai")
    expected = (2_000 * rates["input_mtok"] + 8_000 * rates["cache_read_mtok"]
                + 700 * rates["output_mtok"]) / M
    assert usd(request) == expected == Decimal("0.01050")


def test_a_gemini_request_bills_its_thoughts_as_output() -> None:
    data = {"input_tokens": 50_000, "cache_read_tokens": 20_000, "cache_creation_tokens": 0,
            "output_tokens": 300, "reasoning_tokens": 900, "model": "gemini-2.5-pro"}
    request = normalize("gemini", data, "2025-11-03T14:00:00Z")
    assert (request.input_tokens, request.cache_read_tokens, request.output_tokens,
            request.reasoning_tokens) == (30_000, 20_000, 1_200, 900)
    rates = library_rates("gemini-2.5-pro", "google")
    expected = (30_000 * rates["input_mtok"].base + 20_000 * rates["cache_read_mtok"].base
                + 1_200 * rates["output_mtok"].base) / M
    assert usd(request) == expected


# -- kinds ----------------------------------------------------------------------------


def test_unknown_and_missing_models_are_unpriced_with_their_tokens() -> None:
    unknown = PRICER.price(RequestUsage("qwen2.5-coder:14b", WHEN, 1_000, output_tokens=20))
    assert unknown.cost.to_json() == {"usd": None, "kind": "unpriced", "unpriced_tokens": 1_020,
                                      "reason": "model not in the price table"}
    none = PRICER.price(normalize("codex", {"input_tokens": 5, "output_tokens": 2}, None))
    assert none.cost.to_json() == {"usd": None, "kind": "unpriced", "unpriced_tokens": 7,
                                   "reason": "no model recorded"}
    # A request of no token costs nothing, whatever its model (Claude's <synthetic>).
    assert PRICER.price(RequestUsage("<synthetic>", WHEN)).cost == cost.Cost(Decimal(0), "estimated")


def test_an_agents_own_cost_is_shown_as_reported_beside_ours() -> None:
    data = {"input_tokens": 1_000, "output_tokens": 100, "cache_read_tokens": 0,
            "cache_creation_tokens": 0, "reasoning_tokens": 0, "model": "kimi-k2.6",
            "cost": 0.0012}
    priced = PRICER.price(normalize("opencode", data, "2026-06-01T00:00:00Z"))
    assert priced.cost == cost.Cost(Decimal("0.0012"), "reported")
    rates = library_rates("kimi-k2.6", "moonshotai")
    assert priced.estimate == cost.Cost((1_000 * rates["input_mtok"] + 100 * rates["output_mtok"]) / M,
                                        "estimated")
    # An unknown model's reported cost is still shown; ours says unpriced.
    data["model"] = "my-local-model"
    local = PRICER.price(normalize("opencode", data, None))
    assert (local.cost.kind, local.estimate.kind) == ("reported", "unpriced")


def test_costs_add_by_kind() -> None:
    e, r = cost.estimated(Decimal("1.5")), cost.reported(Decimal("0.25"))
    u = cost.unpriced(400, cost.UNKNOWN_MODEL)
    assert (e + e).to_json() == {"usd": 3.0, "kind": "estimated"}
    assert cost.total([e, r]).to_json() == {"usd": 1.75, "kind": "mixed"}
    assert cost.total([e, u, u]).to_json() == {"usd": 1.5, "kind": "mixed", "unpriced_tokens": 800}
    assert cost.total([u, u]).to_json() == {"usd": None, "kind": "unpriced", "unpriced_tokens": 800,
                                            "reason": "model not in the price table"}
    assert cost.total([u, cost.unpriced(1, cost.NO_MODEL)]).reason is None
    assert cost.total([]).to_json() == {"usd": 0.0, "kind": "estimated"}
    assert cost.total([]) + u == u and u + cost.total([]) == u
    assert cost.total([e, r, u]).requests == 3
    assert cost.estimated(Decimal("0.0000000015")).nano_usd == 2  # half to even
    assert cost.estimated(Decimal("0.0000000025")).nano_usd == 2
    assert cost.from_nano(12_340_000_000) == Decimal("12.34")
    assert cost.from_json({"usd": 12.34, "kind": "estimated"}) == cost.estimated(Decimal("12.34"))
    with pytest.raises(ValueError):
        cost.from_json({"usd": 1, "kind": "cheap"})


# -- normalization --------------------------------------------------------------------

# Per agent: our usage event's data -> (uncached input, cache read, 5-minute writes,
# 1-hour writes, billed output, of it reasoning), provider.
NORMALIZED = [
    ("claude-code", {"input_tokens": 3, "cache_read_tokens": 900, "cache_creation_tokens": 500,
                     "cache_creation_1h_tokens": 400, "output_tokens": 80, "reasoning_tokens": 0},
     (3, 900, 100, 400, 80, 0), "anthropic"),
    ("codex", {"input_tokens": 1_000, "cache_read_tokens": 600, "output_tokens": 90,
               "reasoning_tokens": 40}, (400, 600, 0, 0, 90, 40), "openai"),
    ("gemini", {"input_tokens": 1_000, "cache_read_tokens": 600, "output_tokens": 90,
                "reasoning_tokens": 40}, (400, 600, 0, 0, 130, 40), "google"),
    ("copilot", {"input_tokens": 441_514, "cache_read_tokens": 400_526,
                 "cache_creation_tokens": 40_074, "output_tokens": 4_199, "reasoning_tokens": 499},
     (914, 400_526, 40_074, 0, 4_199, 499), "github-copilot"),
    ("opencode", {"input_tokens": 1_000, "cache_read_tokens": 600, "cache_creation_tokens": 50,
                  "output_tokens": 90, "reasoning_tokens": 40}, (1_000, 600, 50, 0, 130, 40), None),
    ("an-agent-to-come", {"input_tokens": 7, "output_tokens": 3, "cache_read_tokens": 2},
     (7, 2, 0, 0, 3, 0), None),
]


@pytest.mark.parametrize(("adapter", "data", "counts", "provider"), NORMALIZED)
def test_each_agents_counts_in_one_shape(
    adapter: str, data: dict[str, Any], counts: tuple[int, ...], provider: str | None
) -> None:
    r = normalize(adapter, data, "2026-01-02T03:04:05.678Z")
    assert (r.input_tokens, r.cache_read_tokens, r.cache_write_5m_tokens, r.cache_write_1h_tokens,
            r.output_tokens, r.reasoning_tokens) == counts
    assert r.provider == provider
    assert r.ts == datetime(2026, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC)
    assert r.whole is (adapter != "copilot")


def test_normalize_takes_odd_counts_as_nothing() -> None:
    r = normalize("codex", {"input_tokens": 10, "cache_read_tokens": 50, "output_tokens": -3,
                            "reasoning_tokens": "9", "model": "  ", "cost": "nan"}, "yesterday")
    # cache reads above the input that holds them are the whole input, never negative
    assert (r.input_tokens, r.cache_read_tokens, r.output_tokens, r.reasoning_tokens) == (0, 10, 0, 0)
    assert (r.model, r.ts, r.reported_usd) == (None, None, None)
    assert normalize("claude-code", {"input_tokens": 2.6, "output_tokens": True}).input_tokens == 3
    assert normalize("claude-code", {"model": "m", "provider": " Vertex "}).provider == "vertex"
    assert normalize("claude-code", {"speed": "fast"}).speed == "fast"
    assert normalize("claude-code", {"cost": 0}).reported_usd == Decimal(0)
    assert set(CONVENTIONS) >= {"claude-code", "codex", "gemini", "copilot", "opencode", "muse"}


# -- overrides ------------------------------------------------------------------------


def test_overrides_price_before_the_table() -> None:
    section = {
        "models": {
            "claude-opus-4-6": [
                {"input": 4, "output": 20, "cache_read": 0.4, "cache_write": 5},
                {"since": date(2026, 1, 1), "input": 2, "output": 10,
                 "tiers": [{"above": 100_000, "input": 3}]},
            ],
            "ollama_chat/*": {"input": 0, "output": 0},
        },
        "aliases": {"my-proxy-sonnet": "claude-sonnet-4-5",
                    "Moonshotai/Kimi-K2.6": {"model": "kimi-k2.6", "provider": "moonshotai"}},
    }
    pricer = Pricer(TABLE, overrides.parse(section))
    opus = RequestUsage("Claude-Opus-4-6", datetime(2025, 12, 31, 23, tzinfo=UTC), 1_000, 2_000, 300, 0, 50)
    assert pricer.price(opus).cost.usd == (1_000 * 4 + 2_000 * Decimal("0.4") + 300 * 5 + 50 * 20) / M
    assert pricer.price(opus).model == "override"
    later = RequestUsage("claude-opus-4-6", datetime(2026, 1, 1, tzinfo=UTC), 1_000, 2_000, 300, 0, 50)
    # the 2026 entry prices no cache: reads and writes are priced as input
    assert pricer.price(later).cost.usd == ((1_000 + 2_000 + 300) * 2 + 50 * 10) / M
    big = RequestUsage("claude-opus-4-6", datetime(2026, 2, 1, tzinfo=UTC), 100_001, 0, 0, 0, 50)
    assert pricer.price(big).cost.usd == (100_001 * 3 + 50 * 10) / M
    local = RequestUsage("ollama_chat/qwen2.5-coder:14b", WHEN, 5_000, output_tokens=100)
    assert pricer.price(local).cost == cost.Cost(Decimal(0), "estimated")
    proxied = RequestUsage("my-proxy-sonnet", WHEN, 1_000, output_tokens=100, provider="openai")
    assert pricer.price(proxied).cost == PRICER.price(
        RequestUsage("claude-sonnet-4-5", WHEN, 1_000, output_tokens=100)).cost
    kimi = pricer.price(RequestUsage("moonshotai/kimi-k2.6", WHEN, 1_000, output_tokens=100))
    assert (kimi.provider, kimi.model) == ("moonshotai", "kimi-k2.6")


@pytest.mark.parametrize(("section", "message"), [
    ([], "must be a table"),
    ({"model": {}}, "unknown key"),
    ({"models": {"m": {"input": 1}}}, "output is required"),
    ({"models": {"m": {"input": -1, "output": 1}}}, ">= 0"),
    ({"models": {"m": {"input": "1", "output": 1}}}, "must be a number"),
    ({"models": {"m": {"input": 1, "output": 1, "cache": 1}}}, "unknown key"),
    ({"models": {"m": {"input": 1, "output": 1, "since": "2026-01-01"}}}, "since must be a date"),
    ({"models": {"m": [{"input": 1, "output": 1}, {"input": 2, "output": 2}]}}, "same since"),
    ({"models": {"m": {"input": 1, "output": 1}, "M": {"input": 1, "output": 1}}}, "twice"),
    ({"models": {"m": {"input": 1, "output": 1, "tiers": [{"input": 2}]}}}, "above"),
    ({"models": {"m": {"input": 1, "output": 1, "tiers": [{"above": 5, "cache_read": 2}]}}},
     "no base rate"),
    ({"aliases": {"a": ""}}, "must name a model"),
    ({"aliases": {"a": {"model": "b", "region": "eu"}}}, "only model and provider"),
])
def test_bad_overrides_are_refused_with_where(section: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        overrides.parse(section)


def test_the_fingerprint_changes_with_the_table_and_the_overrides() -> None:
    none = overrides.fingerprint(TABLE, overrides.NONE)
    assert none == overrides.fingerprint(table.loads(export.bundled_table()), overrides.parse(None))
    assert len(none) == 16
    one = overrides.parse({"models": {"m": {"input": 1, "output": 2}}})
    assert overrides.fingerprint(TABLE, one) != none
    assert overrides.fingerprint(TABLE, one) == overrides.fingerprint(
        TABLE, overrides.parse({"models": {"M": {"output": 2.0, "input": 1.0}}}))
    assert overrides.fingerprint(None, overrides.NONE) != none
    other = table.PriceTable(TABLE.providers, TABLE.source, "another digest")
    assert overrides.fingerprint(other, overrides.NONE) != none


# -- properties -----------------------------------------------------------------------

PRICED_NAMES = ["claude-sonnet-4-5", "claude-opus-4-6", "claude-haiku-4-5", "gpt-5", "gpt-5.4",
                "gemini-2.5-pro", "gemini-3.1-pro-preview", "deepseek-v4-pro", "kimi-k2.6",
                "claude-sonnet-4.6"]
FIELDS = ("input_tokens", "cache_read_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens",
          "output_tokens")
requests = st.builds(
    RequestUsage,
    model=st.sampled_from(PRICED_NAMES),
    ts=st.datetimes(datetime(2024, 1, 1), datetime(2027, 1, 1), timezones=st.just(UTC)),
    input_tokens=st.integers(0, 600_000),
    cache_read_tokens=st.integers(0, 600_000),
    cache_write_5m_tokens=st.integers(0, 300_000),
    cache_write_1h_tokens=st.integers(0, 300_000),
    output_tokens=st.integers(0, 100_000),
    provider=st.sampled_from([None, "anthropic", "openai", "google"]),
)


@settings(max_examples=300, deadline=None)
@given(requests, st.sampled_from(FIELDS), st.integers(1, 300_000))
def test_more_tokens_never_cost_less(request: RequestUsage, field: str, more: int) -> None:
    bigger = RequestUsage(**{**_fields(request), field: getattr(request, field) + more})
    before, after = usd(request), usd(bigger)
    assert before is not None and after is not None
    assert Decimal(0) <= before <= after


@settings(max_examples=100, deadline=None)
@given(st.lists(requests, max_size=12))
def test_a_total_is_the_sum_of_its_requests(batch: list[RequestUsage]) -> None:
    costs = [PRICER.price(r).cost for r in batch]
    total = cost.total(costs)
    assert total.usd == sum((c.usd for c in costs if c.usd is not None), Decimal(0))
    assert total.requests == len(batch)
    assert total.kind == ("estimated" if all(c.kind == "estimated" for c in costs) else "mixed")


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=30).filter(lambda s: s.strip()), st.integers(1, 10**7))
def test_an_unknown_model_is_never_free(name: str, tokens: int) -> None:
    priced = PRICER.price(RequestUsage("zz-unknown-" + name, WHEN, tokens))
    if priced.model is None:
        assert priced.cost.usd is None and priced.cost.kind == "unpriced"
        assert priced.cost.unpriced_tokens == tokens
    else:  # a name a clause of the table matches after all ("...claude-opus-4...")
        assert priced.cost.usd is not None and priced.cost.usd >= 0


def _fields(request: RequestUsage) -> dict[str, Any]:
    return {name: getattr(request, name) for name in RequestUsage.__slots__}  # type: ignore[attr-defined]
