"""Anthropic's 5-hour plan windows ("blocks") over timed requests: which block each
request falls in, what a block cost, how fast it is spending, and where it will end.

The rules (those of Claude's plan limits, and of ccusage's ``blocks``):

* a block starts at the hour (UTC, floored) of the first request after the previous
  block, and lasts 5 hours;
* a request at or past its block's end starts a new block (ccusage also starts one
  after a quiet gap of 5 hours, which, since a block starts at or before its first
  request, always lands past the block's end: one rule is enough);
* a block is active while ``now`` is before its end and less than 5 hours after its
  last request;
* its burn rate is its dollars over the time from its first request to its last (none
  before two requests a minute apart); the projection adds that rate over the time left.

Pure: times are aware datetimes (naive ones are taken as UTC), costs ``pricing.cost``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from .cost import NOTHING, Cost

BLOCK = timedelta(hours=5)
MIN_SPAN = timedelta(minutes=1)  # a burn rate over less is noise
HOUR = Decimal(3600)


@dataclass(frozen=True, slots=True)
class Block:
    start: datetime
    first: datetime  # the block's first request
    last: datetime  # its latest request
    cost: Cost
    tokens: int

    @property
    def end(self) -> datetime:
        return self.start + BLOCK

    def active(self, now: datetime) -> bool:
        now = _utc(now)
        return now < self.end and now - self.last < BLOCK

    def left(self, now: datetime) -> timedelta:
        """Time until the block ends (zero once it has)."""
        return max(self.end - _utc(now), timedelta(0))

    def burn_usd_per_hour(self) -> Decimal | None:
        span = self.last - self.first
        if self.cost.usd is None or span < MIN_SPAN:
            return None
        return self.cost.usd * HOUR / Decimal(span.total_seconds())

    def projected_usd(self, now: datetime) -> Decimal | None:
        """What the block will have cost at its end at the current burn rate (None when
        no rate can be told or the block is no longer active)."""
        rate = self.burn_usd_per_hour()
        if rate is None or self.cost.usd is None or not self.active(now):
            return None
        return self.cost.usd + rate * Decimal(self.left(now).total_seconds()) / HOUR


def block_start(ts: datetime) -> datetime:
    """The hour a block starting with a request at ``ts`` starts at."""
    return _utc(ts).replace(minute=0, second=0, microsecond=0)


def blocks(requests: Iterable[tuple[datetime, Cost, int]]) -> list[Block]:
    """The blocks of timed requests (time, cost, tokens), in time order whatever order
    they come in."""
    out: list[Block] = []
    for ts, cost, tokens in sorted(((_utc(t), c, n) for t, c, n in requests), key=lambda r: r[0]):
        current = out[-1] if out else None
        if current is None or ts >= current.end:
            out.append(Block(block_start(ts), ts, ts, NOTHING + cost, tokens))
        else:
            out[-1] = Block(current.start, current.first, ts, current.cost + cost, current.tokens + tokens)
    return out


def current_block(found: list[Block], now: datetime) -> Block | None:
    """The active block at ``now``, if any (the last one, when it still is)."""
    return found[-1] if found and found[-1].active(now) else None


def _utc(ts: datetime) -> datetime:
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
