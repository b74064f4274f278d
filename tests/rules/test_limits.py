"""The limits the budget kinds share: bounds, breaches within float rounding, how they read."""

from __future__ import annotations

import pytest

from nsysdiff.rules import budget, limits, step_budget
from nsysdiff.rules.limits import TOLERANCE, Limit, LimitKind, Quantity
from nsysdiff.rules.model import OptionError


def test_a_value_at_its_limit_is_within_it() -> None:
    for kind, base, at in [
        (LimitKind.MAX_RATIO, 3.0, 3.0 * 1.1),
        (LimitKind.MAX_INCREASE, 3.0, 3.0 + 1.1),
        (LimitKind.MAX_VALUE, 3.0, 1.1),
        (LimitKind.MAX_SHARE, 0.0, 1.1),
    ]:
        lim = Limit(kind, 1.1)
        assert lim.bound(base) == pytest.approx(at)
        assert not lim.breached(base, at)
        assert lim.breached(base, at * (1 + 10 * TOLERANCE) + 10 * TOLERANCE)


def test_a_trace_diffed_with_itself_never_breaches_a_ratio_of_one() -> None:
    assert not Limit(LimitKind.MAX_RATIO, 1.0).breached(0.1 + 0.2, 0.3)


def test_a_ratio_to_nothing_is_breached_by_any_value() -> None:
    lim = Limit(LimitKind.MAX_RATIO, 2.0)
    assert lim.breached(0.0, 1.0)
    assert not lim.breached(0.0, 0.0)
    assert lim.allowed_change(0.0) is None


def test_an_increase_of_the_step_is_a_share_of_the_time_per_step() -> None:
    lim = Limit(LimitKind.MAX_INCREASE_OF_STEP, 0.05)
    assert lim.bound(1_000.0, step_ns=10_000.0) == 1_500.0
    assert lim.breached(1_000.0, 1_600.0, step_ns=10_000.0)
    assert lim.text(Quantity.TIME.fmt, step_ns=10_000.0) == "max_increase_of_step 5.00% (500 ns)"


@pytest.mark.parametrize(
    ("kind", "amount", "value", "observed", "text"),
    [
        (LimitKind.MAX_RATIO, 1.1, 3e6, "1.50x", "max_ratio 1.10x"),
        (LimitKind.MAX_INCREASE, 1e6, 1.5e6, "-500.00 us", "max_increase 1.00 ms"),
        (LimitKind.MAX_VALUE, 1e6, 3e6, "3.00 ms", "max_value 1.00 ms"),
    ],
)
def test_how_a_limit_reads(kind: LimitKind, amount: float, value: float, observed: str, text: str) -> None:
    lim = Limit(kind, amount)
    assert lim.observed(2e6, value, Quantity.TIME.fmt) == observed
    assert lim.text(Quantity.TIME.fmt) == text


def test_every_quantity_parses_formats_and_has_a_unit() -> None:
    for q in Quantity:
        assert q.unit
        assert q.fmt(2.0)
    assert Quantity.TIME.parse("5ms") == 5e6
    assert Quantity.SHARE.parse("5%") == 0.05
    assert Quantity.STEP_COUNT.fmt(2.5) == "2.5"


def test_a_limit_in_the_metric_unit_is_parsed_as_the_metric() -> None:
    given = frozenset({"max_increase"})
    (lim,) = limits.build({"max_increase": "5ms"}, given, budget.LIMITS, Quantity.TIME, "total_time")
    assert lim == Limit(LimitKind.MAX_INCREASE, 5e6)
    with pytest.raises(OptionError, match=r"\(the unit of metric 'bytes'\)"):
        limits.build({"max_increase": "5ms"}, given, budget.LIMITS, Quantity.SIZE, "bytes")


def test_each_kind_names_its_limits() -> None:
    assert {k.value for k in budget.LIMITS} <= {o.name for o in budget.OPTIONS}
    assert {k.value for k in step_budget.LIMITS} <= {o.name for o in step_budget.OPTIONS}
    assert set(budget.METRICS) == {m.value for m in budget.Metric}


def test_a_value_just_over_its_limit_is_not_printed_equal_to_it() -> None:
    ratio = Limit(LimitKind.MAX_RATIO, 1.02)
    assert ratio.breached(100.0, 102.4)
    assert (ratio.observed(100.0, 102.4, str), ratio.text(str)) == ("1.024x", "max_ratio 1.02x")
    assert ratio.observed(100.0, 150.0, str) == "1.50x"  # two decimals where they tell them apart
    assert ratio.observed(100.0, 102.0, str) == "1.02x"  # at the limit, not over it
    assert Limit(LimitKind.MAX_RATIO, 1.1).observed(1.0, 1.1000004, str) == "1.1000004x"
    share = Limit(LimitKind.MAX_SHARE, 0.25)
    assert share.observed(0.0, 0.25004, str) == "25.004%" and share.text(str) == "max_share 25.00%"
