"""The exported price table against genai-prices itself: every model of the library's
bundled data is found and priced here as the library finds and prices it, to the last
decimal, at several times (its historic prices) and for any usage (Hypothesis).

The library is imported here (a test process); the daemon never imports it."""

from __future__ import annotations

import random
import warnings
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from genai_prices import Usage, calc_price
from genai_prices.data import providers as LIBRARY_PROVIDERS
from genai_prices.data_snapshot import get_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.pricing import export, table
from agentsrc_daemon.pricing.price import Pricer, charge
from agentsrc_daemon.pricing.usage import RequestUsage

TIMES = (
    datetime(2024, 3, 1, tzinfo=UTC),
    datetime(2025, 6, 15, 3, 30, tzinfo=UTC),  # night in UTC: DeepSeek's off-peak hours
    datetime(2025, 11, 1, 12, tzinfo=UTC),
    datetime(2026, 11, 20, 20, tzinfo=UTC),
)
MODELS = [(p.id, m.id) for p in LIBRARY_PROVIDERS for m in p.models]
_BUNDLED = table.loads(export.bundled_table())


@pytest.fixture(scope="module")
def bundled() -> table.PriceTable:
    return _BUNDLED


def library_price(usage: RequestUsage, ref: str, provider: str | None, ts: datetime) -> Decimal | None:
    """What genai-prices charges for this usage (its Usage counts input with the cache,
    as OpenAI does), or None when it finds no such model."""
    lib_usage = Usage(
        input_tokens=usage.prompt_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cache_write_1h_tokens=usage.cache_write_1h_tokens,
        output_tokens=usage.output_tokens,
        output_reasoning_tokens=usage.reasoning_tokens,
    )
    context = {"speed": usage.speed} if usage.speed else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = calc_price(
                lib_usage, ref, provider_id=provider, genai_request_timestamp=ts, price_context=context
            )
    except LookupError:
        return None
    return result.total_price


def ours(t: table.PriceTable, usage: RequestUsage, ref: str, provider: str | None, ts: datetime) -> Decimal | None:
    found = t.find(ref, provider)
    if found is None:
        return None
    context = {"speed": usage.speed} if usage.speed else None
    return charge(found.prices_at(ts, context), usage)


def test_the_export_keeps_every_provider_and_model(bundled: table.PriceTable) -> None:
    assert [p["id"] for p in bundled.providers] == [p.id for p in LIBRARY_PROVIDERS]
    assert sum(len(p["models"]) for p in bundled.providers) == len(MODELS) > 2000
    assert bundled.source == {"library": "genai-prices", "version": export.library_version(), "data": "bundled"}


def test_a_models_prices_stay_json_until_it_is_found() -> None:
    """The bound on the table's memory: a model's prices and variants are kept as JSON
    bytes until it is found (1.5 MB of the 3.6 MB parsed), its match clause parsed."""
    t = table.loads(export.bundled_table())  # its own: the fixture's is found in already
    models = [m for p in t.providers for m in p["models"]]
    assert all(isinstance(m["prices"], bytes) and isinstance(m["match"], dict) for m in models)
    assert sum(isinstance(m.get("variants"), bytes) for m in models) > 50
    found = t.find("claude-sonnet-4-5", "anthropic")
    assert found is not None and found.prices and found.variants


def test_every_model_is_priced_as_the_library_prices_it(bundled: table.PriceTable) -> None:
    rng = random.Random(27)
    compared = 0
    for provider, model in MODELS:
        for ts in TIMES:
            counts = [rng.randrange(0, 300_000) for _ in range(6)]
            usage = RequestUsage(model, ts, *counts[:5], reasoning_tokens=min(counts[5], counts[4]))
            expected = library_price(usage, model, provider, ts)
            assert ours(bundled, usage, model, provider, ts) == expected, (provider, model, ts)
            compared += expected is not None
    assert compared > 6000  # a few library ids are not matched by their own clauses


def test_models_are_found_as_the_library_finds_them(bundled: table.PriceTable) -> None:
    """Names as agents record them, with and without the agent's provider: the same
    provider and model, or not found by both."""
    snapshot = get_snapshot()
    names = [
        "claude-sonnet-4-5-20250929", "claude-sonnet-4-20250514", "claude-opus-4-6",
        "deepseek-v4-flash", "claude-haiku-4-5-20251001", "deepseek-v4-pro", "sonnet",
        "<synthetic>", "gpt-5-codex", "gpt-5.4", "gpt-5", "gpt-5.2-codex", "gpt-5.1-codex-max",
        "gpt-5.6-sol", "ollama_chat/qwen2.5-coder:14b", "gemini-3-flash-preview",
        "gemini-3.1-pro-preview", "gemini-2.5-pro", "claude-sonnet-4.6", "gpt-5-mini",
        "moonshotai/kimi-k2.6", "deepseek-reasoner", "claude-3-5-haiku-20241022",
        "x-ai/grok-code-fast-1", "anthropic/claude-sonnet-4.5", "gpt-4o", "qwen/qwen3-coder:free",
        "gemini/gemini-2.5-pro-exp-03-25", "openai/qwen3:32b", "coder-model", "gpt-5.2-20251211",
    ]
    for name in names:
        for provider in ("anthropic", "openai", "google", "github-copilot", "litellm", None, "nope"):
            try:
                lib_provider, lib_model = snapshot.find_provider_model(name, None, provider, None)
                expected: tuple[str, str] | None = (lib_provider.id, lib_model.id)
            except LookupError:
                expected = None
            found = bundled.find(name, provider)
            assert (None if found is None else (found.provider, found.id)) == expected, (name, provider)


_USAGE = st.tuples(*(st.integers(0, 1_500_000) for _ in range(6)))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(MODELS),
    _USAGE,
    st.datetimes(datetime(2023, 1, 1), datetime(2027, 12, 31)),
    st.sampled_from([None, "fast", "standard"]),
)
def test_any_usage_at_any_time_as_the_library(
    model: tuple[str, str], counts: tuple[int, ...], when: datetime, speed: str | None
) -> None:
    provider, name = model
    ts = when.replace(tzinfo=UTC)
    usage = RequestUsage(name, ts, *counts[:5], reasoning_tokens=min(counts[5], counts[4]), speed=speed)
    assert ours(_BUNDLED, usage, name, provider, ts) == library_price(usage, name, provider, ts)


def test_the_price_in_force_at_the_request_time(bundled: table.PriceTable) -> None:
    """A model whose price changed is priced at the price of the day before and after
    the change, each as the library gives it."""
    changed = [
        (p.id, m.id, c.constraint.start_date)
        for p in LIBRARY_PROVIDERS
        for m in p.models
        if isinstance(m.prices, list)
        for c in m.prices
        if c.constraint is not None and hasattr(c.constraint, "start_date")
    ]
    assert len(changed) > 20
    usage = RequestUsage("m", None, 1_000, 2_000, 300, 0, 4_000)
    differ = 0
    for provider, name, start in changed:
        before = datetime(start.year, start.month, start.day, tzinfo=UTC) - timedelta(seconds=1)
        after = before + timedelta(seconds=1)
        prices = [ours(bundled, usage, name, provider, ts) for ts in (before, after)]
        assert prices == [library_price(usage, name, provider, ts) for ts in (before, after)]
        differ += prices[0] != prices[1]
    assert differ > 10


def test_a_pricer_without_a_table_prices_nothing() -> None:
    cost = Pricer(None).price(RequestUsage("gpt-5", None, 10, output_tokens=5))
    assert cost.cost.to_json() == {
        "usd": None, "kind": "unpriced", "unpriced_tokens": 15, "reason": "no price table"
    }


def test_a_damaged_table_is_refused() -> None:
    for raw, message in (
        (b"{", "not JSON"),
        (b'{"format": 99}', "format 1"),
        (b'{"format": 1, "providers": [{"id": "x"}]}', "providers must be"),
    ):
        with pytest.raises(ValueError, match=message):
            table.loads(raw)


def test_time_of_day_prices_apply_at_the_same_instants(bundled: table.PriceTable) -> None:
    """Off-peak prices are a daily interval of time (DeepSeek's wraps past midnight):
    priced every half hour of a day, as the library prices them, and they differ."""
    timed = [
        (p.id, m.id)
        for p in LIBRARY_PROVIDERS
        for m in p.models
        if isinstance(m.prices, list)
        and any(c.constraint is not None and hasattr(c.constraint, "start_time") for c in m.prices)
    ]
    assert timed, "the bundled data has time-of-day prices"
    usage = RequestUsage("m", None, 100_000, 50_000, 0, 0, 20_000)
    for provider, name in timed:
        day = [datetime(2026, 3, 2, tzinfo=UTC) + timedelta(minutes=30 * k) for k in range(48)]
        prices = [ours(bundled, usage, name, provider, ts) for ts in day]
        assert prices == [library_price(usage, name, provider, ts) for ts in day], name
        assert len(set(prices)) == 2, name
