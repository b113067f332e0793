"""A cost in dollars and where it comes from, and how costs add.

Every surface shows a cost the same way, ``"cost": {"usd": 12.34, "kind": "estimated"}``:

* ``estimated``: we priced the tokens with the price table (or a ``[prices]`` override);
* ``reported``: the agent recorded what the request cost (OpenCode, Crush, Cline, Amp,
  Pi), and that figure is the one shown;
* ``unpriced``: the model is not in the table, or no model was recorded: the tokens
  are known, the dollars are not. Never $0: ``usd`` is null and ``unpriced_tokens``
  says how many tokens are missing from the figure;
* ``mixed``: a total of several kinds; ``usd`` sums the priced parts, and
  ``unpriced_tokens`` still says what is left out.

A ``Cost`` also counts the requests it covers, so the empty total (no request) adds to
anything without changing its kind. Dollars are ``Decimal`` (the table's prices are
decimal strings, and every request is priced exactly); the store keeps whole
nano-dollars (``nano_usd``), integers that add exactly whatever the order, which
triggers that move a session's usage from one owner to another rely on."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

ESTIMATED = "estimated"
REPORTED = "reported"
UNPRICED = "unpriced"
MIXED = "mixed"
KINDS = (ESTIMATED, REPORTED, UNPRICED, MIXED)

NANO = Decimal("1e-9")

# Why a request is unpriced (``Cost.reason``).
NO_MODEL = "no model recorded"
UNKNOWN_MODEL = "model not in the price table"


@dataclass(frozen=True, slots=True)
class Cost:
    usd: Decimal | None  # None only when nothing in it is priced (kind unpriced)
    kind: str
    unpriced_tokens: int = 0
    requests: int = 1  # how many requests it covers: 0 is the empty total
    reason: str | None = None  # why unpriced, when every part says the same

    def __add__(self, other: Cost) -> Cost:
        if other.requests == 0:
            return self
        if self.requests == 0:
            return other
        usd = _add_usd(self.usd, other.usd)
        kind = self.kind if self.kind == other.kind else MIXED
        reason = self.reason if self.reason == other.reason else None
        return Cost(
            usd,
            kind,
            self.unpriced_tokens + other.unpriced_tokens,
            self.requests + other.requests,
            reason,
        )

    @property
    def nano_usd(self) -> int | None:
        """Whole nano-dollars (half to even), as the store keeps them; None unpriced."""
        return None if self.usd is None else to_nano(self.usd)

    def to_json(self) -> dict[str, Any]:
        """The shape every surface shows: ``{"usd": 12.34, "kind": "estimated"}``, with
        ``unpriced_tokens`` (and the ``reason`` when there is one) when some tokens
        could not be priced. ``usd`` is rounded to the micro-dollar."""
        out: dict[str, Any] = {"usd": None if self.usd is None else usd_float(self.usd)}
        out["kind"] = self.kind
        if self.unpriced_tokens or self.kind == UNPRICED:
            out["unpriced_tokens"] = self.unpriced_tokens
            if self.reason:
                out["reason"] = self.reason
        return out


NOTHING = Cost(Decimal(0), ESTIMATED, requests=0)


def estimated(usd: Decimal) -> Cost:
    return Cost(usd, ESTIMATED)


def reported(usd: Decimal) -> Cost:
    return Cost(usd, REPORTED)


def unpriced(tokens: int, reason: str) -> Cost:
    return Cost(None, UNPRICED, unpriced_tokens=tokens, reason=reason)


def total(costs: Iterable[Cost]) -> Cost:
    """The sum of several costs: one kind if they share it, else ``mixed``; the empty
    total is $0 over no request."""
    out = NOTHING
    for cost in costs:
        out = out + cost
    return out


def to_nano(usd: Decimal) -> int:
    return int(usd.quantize(NANO, rounding=ROUND_HALF_EVEN).scaleb(9))


def from_nano(nano: int) -> Decimal:
    return Decimal(nano).scaleb(-9)


def usd_float(usd: Decimal) -> float:
    return float(usd.quantize(Decimal("1e-6"), rounding=ROUND_HALF_EVEN))


def from_json(obj: Any) -> Cost:
    """A cost read back from its JSON shape (a client of the socket, a test)."""
    if not isinstance(obj, dict) or obj.get("kind") not in KINDS:
        raise ValueError("a cost is an object with a kind of " + ", ".join(KINDS))
    usd = obj.get("usd")
    tokens = obj.get("unpriced_tokens", 0)
    if not isinstance(tokens, int) or tokens < 0:
        raise ValueError("unpriced_tokens must be a count")
    value = None if usd is None else Decimal(str(usd))
    return Cost(value, obj["kind"], tokens, reason=obj.get("reason"))


def _add_usd(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b
