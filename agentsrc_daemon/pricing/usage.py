"""One request's usage in one shape, from what each agent's ``usage`` event holds.

Our adapters keep each agent's counts under the same names (``input_tokens``,
``output_tokens``, ``cache_read_tokens``, ``cache_creation_tokens``,
``reasoning_tokens``; docs/formats.md), but not with the same meaning: the agents
count differently, and the adapters keep what the agent wrote. Pricing needs one
meaning, so ``normalize`` reads an event's data by its agent's ``Convention``:

* whether ``input_tokens`` already holds the cache reads and writes (OpenAI's way:
  Codex, Gemini, Copilot, Qwen Code, Continue) or counts them apart (Anthropic's way:
  Claude Code, OpenCode, Amp, Cline, Roo Code, Kilo Code, Pi);
* whether ``output_tokens`` already holds the reasoning (Codex, Claude Code, Copilot)
  or the reasoning is counted apart and billed as output besides (Gemini's thoughts,
  OpenCode's ``reasoning``);
* which provider the agent sends its requests to, for the table's lookup (a model
  name can be priced differently by several providers);
* whether one event is one request (tiers then apply) or a sum of several (Copilot's
  shutdown totals: priced at the base rates, since no tier can be told).

``RequestUsage`` counts every token once: ``input_tokens`` is the input that was
neither read from nor written to the cache; ``output_tokens`` is every billed output
token, reasoning included (``reasoning_tokens`` says how many of them were reasoning).
An agent that recorded a cost of its own (``data["cost"]``, dollars) has it in
``reported_usd``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any


@dataclass(frozen=True, slots=True)
class Convention:
    input_has_cache: bool  # input_tokens includes the cache reads and writes
    output_has_reasoning: bool  # output_tokens includes reasoning_tokens
    provider: str | None  # genai-prices' provider id the agent's requests go to
    whole_requests: bool = True  # one event is one request


ANTHROPIC_WAY = Convention(input_has_cache=False, output_has_reasoning=True, provider=None)

# Per adapter name (events.AGENTS, and the agents whose adapters come next: their usage
# events must use these names with these meanings, or add their own line here).
CONVENTIONS: dict[str, Convention] = {
    # message.usage: input_tokens without the cache; thinking inside output_tokens.
    "claude-code": Convention(False, True, "anthropic"),
    # token_count: input_tokens holds cached_input_tokens, output_tokens holds
    # reasoning_output_tokens (total_tokens = input + output).
    "codex": Convention(True, True, "openai"),
    # tokens: input (promptTokenCount) holds cached; thoughts are apart from output
    # (total = input + output + thoughts + tool; the adapter adds tool to input).
    "gemini": Convention(True, False, "google"),
    # modelMetrics: inputTokens = uncached + cacheRead + cacheWrite; outputTokens holds
    # reasoningTokens. The shutdown's totals sum a whole session lifetime.
    "copilot": Convention(True, True, "github-copilot", whole_requests=False),
    # step-finish tokens: input without the cache, reasoning apart from output
    # (OpenCode prices reasoning at the output rate besides); records its own cost.
    "opencode": Convention(False, False, None),
    # Muse records no usage today.
    "muse": ANTHROPIC_WAY,
    # Agents read by the next adapters (issues 29, 30): each records a cost itself.
    # Amp's usage: inputTokens without the cache reads and writes; thinking in output.
    "amp": Convention(False, True, "anthropic"),
    "cline": ANTHROPIC_WAY,
    "crush": ANTHROPIC_WAY,
    # Aider's "Tokens: N sent" is litellm's prompt_tokens (cache reads in it) plus the
    # cache writes when the provider reports them apart (aider/coders/base_coder.py);
    # completion_tokens holds the reasoning. It records its cost (the message's).
    "aider": Convention(True, True, None),
    # Pi's usage (pi-ai): input without the cache (OpenAI's cached tokens taken out of
    # it), reasoning inside output; each usage event names its provider.
    "pi": ANTHROPIC_WAY,
    # Qwen Code's api_response telemetry: input holds the cached tokens; the adapter
    # puts the thoughts inside output_tokens for every auth type. Records no cost.
    "qwen": Convention(True, True, None),
    # api_req_started's tokensIn without the cache (Roo Code 3.30+ writes it with the
    # cache: the adapter takes it out); each request's cost recorded.
    "roo-code": ANTHROPIC_WAY,
    "kilo-code": ANTHROPIC_WAY,
    # usage.promptTokens as OpenAI counts it, the cache inside (the adapter adds it to
    # Anthropic's, which leaves it out); completionTokens holds the reasoning.
    "continue": Convention(True, True, None),
    # Cursor's transcripts record no usage.
    "cursor": ANTHROPIC_WAY,
}


@dataclass(frozen=True, slots=True)
class RequestUsage:
    model: str | None
    ts: datetime | None  # when the request was made (UTC); None: unknown
    input_tokens: int = 0  # neither read from nor written to the cache
    cache_read_tokens: int = 0
    cache_write_5m_tokens: int = 0  # Anthropic's 5-minute cache writes (the default)
    cache_write_1h_tokens: int = 0  # 1-hour cache writes
    output_tokens: int = 0  # every billed output token, reasoning included
    reasoning_tokens: int = 0  # how many of output_tokens were reasoning
    provider: str | None = None  # where the agent sent it, when known
    reported_usd: Decimal | None = None  # what the agent recorded it cost
    speed: str | None = None  # Anthropic's usage.speed ("fast" has its own rates)
    whole: bool = True  # one request: tiers apply; False: a sum of several
    # When this is a part of one request (a streamed Claude message's later increase):
    # the whole request's input, cached or not, by which its tier is judged.
    request_input_tokens: int | None = None

    @property
    def cache_write_tokens(self) -> int:
        return self.cache_write_5m_tokens + self.cache_write_1h_tokens

    @property
    def prompt_tokens(self) -> int:
        """Every input token counted here, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def tier_tokens(self) -> int:
        """The input a price tier is judged by: the whole request's (0 for a sum of
        several requests: no tier can be told, the base rates apply)."""
        if not self.whole:
            return 0
        if self.request_input_tokens is not None:
            return max(self.request_input_tokens, self.prompt_tokens)
        return self.prompt_tokens

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens


def normalize(adapter: str, data: dict[str, Any], ts: str | None = None) -> RequestUsage:
    """One ``usage`` event's data (as an adapter emitted it, or as stored) as one
    request's usage. Counts that are missing, negative or not numbers are 0; a part
    larger than the whole it belongs to (cache reads above an input that should hold
    them) is taken as the whole, never as a negative remainder."""
    convention = CONVENTIONS.get(adapter, ANTHROPIC_WAY)
    input_tokens = _count(data.get("input_tokens"))
    output = _count(data.get("output_tokens"))
    reasoning = _count(data.get("reasoning_tokens"))
    cache_read = _count(data.get("cache_read_tokens"))
    cache_write = _count(data.get("cache_creation_tokens"))
    write_1h = min(_count(data.get("cache_creation_1h_tokens")), cache_write)
    if convention.input_has_cache:
        cache_read = min(cache_read, input_tokens)
        cache_write = min(cache_write, input_tokens - cache_read)
        write_1h = min(write_1h, cache_write)
        input_tokens -= cache_read + cache_write
    if convention.output_has_reasoning:
        reasoning = min(reasoning, output)
    else:
        output += reasoning
    model = data.get("model")
    speed = data.get("speed")
    return RequestUsage(
        model=model.strip() or None if isinstance(model, str) else None,
        ts=parse_ts(ts),
        input_tokens=input_tokens,
        cache_read_tokens=cache_read,
        cache_write_5m_tokens=cache_write - write_1h,
        cache_write_1h_tokens=write_1h,
        output_tokens=output,
        reasoning_tokens=reasoning,
        provider=_provider(data, convention),
        reported_usd=_dollars(data.get("cost")),
        speed=speed if isinstance(speed, str) and speed else None,
        whole=convention.whole_requests and not data.get("aggregate"),
        request_input_tokens=_count(data["request_input_tokens"])
        if "request_input_tokens" in data
        else None,
    )


def parse_ts(ts: str | None) -> datetime | None:
    """An event's ISO 8601 time as an aware UTC datetime (naive: UTC); None if absent
    or unreadable."""
    if not ts:
        return None
    try:
        parsed = datetime.fromisoformat(ts.replace("Z", "+00:00") if ts.endswith("Z") else ts)
    except ValueError:
        return None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _provider(data: dict[str, Any], convention: Convention) -> str | None:
    provider = data.get("provider")
    if isinstance(provider, str) and provider.strip():
        return provider.strip().lower()
    return convention.provider


def _count(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and math.isfinite(value):
        return max(round(value), 0)
    return 0


def _dollars(value: Any) -> Decimal | None:
    """An agent's recorded cost: a finite number of dollars, not negative; else None.
    0 is kept: an agent that says a request cost nothing (a free model) means it."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        usd = Decimal(str(value))
    except InvalidOperation:
        return None
    return usd if usd.is_finite() and usd >= 0 else None
