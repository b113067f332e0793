"""The 5-hour blocks: exact examples (starts on the hour, a gap closes a block, burn rate
and projection) and Hypothesis properties over any requests (each request in exactly
one block, blocks in order and apart, sums kept)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsrc_daemon.pricing import cost
from agentsrc_daemon.pricing.blocks import BLOCK, block_start, blocks, current_block

T0 = datetime(2026, 12, 6, 9, 47, 12, tzinfo=UTC)


def req(minutes: float, usd: str = "1", tokens: int = 100) -> tuple[datetime, cost.Cost, int]:
    return T0 + timedelta(minutes=minutes), cost.estimated(Decimal(usd)), tokens


def test_a_block_starts_on_the_hour_and_lasts_five() -> None:
    found = blocks([req(0), req(60), req(4 * 60 + 12.7)])  # 13:59:54: still inside
    assert len(found) == 1
    (b,) = found
    assert (b.start, b.end) == (datetime(2026, 12, 6, 9, tzinfo=UTC), datetime(2026, 12, 6, 14, tzinfo=UTC))
    assert (b.cost.usd, b.cost.requests, b.tokens) == (Decimal(3), 3, 300)
    nxt = blocks([req(0), req(4 * 60 + 13)])  # 14:00:12: past the end, a new block at 14:00
    assert [x.start.hour for x in nxt] == [9, 14]


def test_a_quiet_gap_of_five_hours_starts_a_new_block() -> None:
    """ccusage's gap rule: 5 quiet hours after a block's last request always land past
    its end (it starts at or before its first request)."""
    found = blocks([req(0), req(10), req(10 + 5 * 60)])
    assert [(b.start.hour, b.cost.requests) for b in found] == [(9, 2), (14, 1)]


def test_burn_rate_projection_and_time_left() -> None:
    found = blocks([req(0, "2.00"), req(30, "1.00"), req(90, "3.00")])
    (b,) = found
    assert b.burn_usd_per_hour() == Decimal(4)  # $6 over the 1.5 hours between first and last
    now = T0 + timedelta(minutes=103, seconds=48)  # 11:31:00
    assert b.left(now) == timedelta(hours=2, minutes=29)
    assert b.projected_usd(now) == Decimal(6) + Decimal(4) * Decimal(2 * 3600 + 29 * 60) / 3600
    assert current_block(found, now) is b
    later = b.end + timedelta(seconds=1)
    assert current_block(found, later) is None and b.projected_usd(later) is None
    assert b.left(later) == timedelta(0)
    # one request, or requests within a minute: no rate yet
    assert blocks([req(0), req(0.5)])[0].burn_usd_per_hour() is None


def test_an_unpriced_request_makes_the_block_mixed_not_free() -> None:
    (b,) = blocks([req(0), (T0 + timedelta(minutes=5), cost.unpriced(500, cost.NO_MODEL), 500)])
    assert b.cost.to_json() == {"usd": 1.0, "kind": "mixed", "unpriced_tokens": 500}
    (only,) = blocks([(T0, cost.unpriced(5, cost.NO_MODEL), 5), (T0 + timedelta(hours=1), cost.unpriced(5, cost.NO_MODEL), 5)])
    assert only.cost.usd is None and only.burn_usd_per_hour() is None


def test_times_in_other_zones_and_naive_times_are_utc() -> None:
    paris = timezone(timedelta(hours=1))
    assert block_start(datetime(2026, 12, 6, 10, 47, tzinfo=paris)) == datetime(2026, 12, 6, 9, tzinfo=UTC)
    assert block_start(datetime(2026, 12, 6, 9, 47)) == datetime(2026, 12, 6, 9, tzinfo=UTC)


times = st.lists(
    st.tuples(st.integers(0, 3 * 24 * 3600), st.integers(0, 10_000), st.integers(0, 5_000)),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(times)
def test_every_request_in_exactly_one_block(items: list[tuple[int, int, int]]) -> None:
    requests = [(T0 + timedelta(seconds=s), cost.estimated(Decimal(c) / 100), n) for s, c, n in items]
    found = blocks(requests)
    assert sum(b.cost.requests for b in found) == len(requests)
    assert sum((b.cost.usd or Decimal(0) for b in found), Decimal(0)) == sum(
        (c.usd or Decimal(0) for _, c, _ in requests), Decimal(0))
    assert sum(b.tokens for b in found) == sum(n for _, _, n in requests)
    for b in found:
        assert b.start == block_start(b.first) <= b.first <= b.last < b.end == b.start + BLOCK
        inside = [r for r in requests if b.start <= r[0] < b.end and b.first <= r[0] <= b.last]
        assert len(inside) == b.cost.requests
    for before, after in zip(found, found[1:], strict=False):
        assert after.first >= before.end  # and so 5 quiet hours always start a new one
        assert after.start >= before.end  # blocks never overlap
