"""The limits of the rule kinds that bound one metric (``budget`` and ``step``).

A limit is a kind (:class:`LimitKind`) and an amount, as the rule file gives it. From a
base value it yields the largest candidate value within it (:meth:`Limit.bound`); a
candidate value breaches it when what the limit measures (the ratio, the increase or the
value itself) exceeds its allowance by more than :data:`TOLERANCE`. A metric's values are
one :class:`Quantity`: how a rule file writes them, how findings print them, their unit.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nsysdiff.rules import options as opt
from nsysdiff.rules import units
from nsysdiff.rules.model import OptionError

# Float rounding, relative and (near zero) absolute: a value this close to what a limit
# allows is within it, so a trace diffed with itself never breaches `max_ratio: 1x`.
TOLERANCE = 1e-9


def exceeds(value: float, allowed: float) -> bool:
    """Whether ``value`` is over ``allowed`` by more than float rounding."""
    return value > allowed * (1 + TOLERANCE) + TOLERANCE


class Quantity(enum.Enum):
    """What a metric's values are."""

    TIME = "time"  # nanoseconds
    COUNT = "count"  # calls or operations
    STEP_COUNT = "count per step"  # a mean over steps, printed to two decimals
    SIZE = "size"  # bytes
    SHARE = "share"  # a fraction of the side's kernel time
    RATIO = "ratio"

    def parse(self, value: Any) -> float:
        """A limit in this quantity as the rule file writes it: ``5ms``, ``64MB``, ``5%``."""
        return _PARSERS[self](value)

    def fmt(self, value: float) -> str:
        return _FORMATS[self](value)

    @property
    def unit(self) -> str:
        """The unit of a value in a finding's numbers."""
        return _UNITS[self]


def _fmt_step_count(value: float) -> str:
    """``3``, ``2.5``, ``0.25``: a count per step as the steps table prints it."""
    return f"{value:,.2f}".rstrip("0").rstrip(".")


_PARSERS: dict[Quantity, Callable[[Any], float]] = {
    Quantity.TIME: opt.time,
    Quantity.COUNT: opt.count,
    Quantity.STEP_COUNT: opt.count,
    Quantity.SIZE: opt.size,
    Quantity.SHARE: opt.percent,
    Quantity.RATIO: opt.ratio,
}
_FORMATS: dict[Quantity, Callable[[float], str]] = {
    Quantity.TIME: units.fmt_time,
    Quantity.COUNT: units.fmt_count,
    Quantity.STEP_COUNT: _fmt_step_count,
    Quantity.SIZE: units.fmt_size,
    Quantity.SHARE: units.fmt_percent,
    Quantity.RATIO: units.fmt_ratio,
}
_UNITS = {
    Quantity.TIME: "ns",
    Quantity.COUNT: "calls",
    Quantity.STEP_COUNT: "calls",
    Quantity.SIZE: "bytes",
    Quantity.SHARE: "fraction",
    Quantity.RATIO: "ratio",
}


class LimitKind(str, enum.Enum):
    """The limits a rule may set, by their option names."""

    MAX_RATIO = "max_ratio"  # candidate / base
    MAX_INCREASE = "max_increase"  # candidate - base, in the metric's quantity
    MAX_VALUE = "max_value"  # the candidate value, in the metric's quantity
    MAX_SHARE = "max_share"  # budget: the selection's share of the candidate's kernel time
    MAX_NOISE_WIDTHS = "max_noise_widths"  # budget: growth in noise widths of a profile
    MAX_INCREASE_OF_STEP = "max_increase_of_step"  # step: candidate - base, a share of the time per step

    @property
    def in_metric_unit(self) -> bool:
        """Whether the amount is in the metric's quantity, parsed once the metric is known."""
        return self in (LimitKind.MAX_INCREASE, LimitKind.MAX_VALUE)


@dataclass(frozen=True, slots=True)
class Limit:
    """One limit of a rule: its kind and its amount (a ratio for max_ratio, a fraction for
    max_share and max_increase_of_step, a number of widths for max_noise_widths, else a
    value in the metric's quantity)."""

    kind: LimitKind
    amount: float

    def allowance(self, step_ns: float = 0.0) -> float:
        """What the limit allows of what it measures; ``step_ns`` is the base time per step."""
        if self.kind is LimitKind.MAX_INCREASE_OF_STEP:
            return self.amount * step_ns
        return self.amount

    def bound(self, base: float, step_ns: float = 0.0) -> float:
        """The largest candidate value within the limit, from the base value."""
        if self.kind is LimitKind.MAX_RATIO:
            return base * self.amount
        if self.kind in (LimitKind.MAX_INCREASE, LimitKind.MAX_INCREASE_OF_STEP):
            return base + self.allowance(step_ns)
        return self.amount

    def measure(self, base: float, value: float) -> float:
        """What the limit measures of a candidate value: the ratio to a (positive) base
        value, the increase over it, or the value itself."""
        if self.kind is LimitKind.MAX_RATIO:
            return value / base
        if self.kind in (LimitKind.MAX_INCREASE, LimitKind.MAX_INCREASE_OF_STEP):
            return value - base
        return value

    def breached(self, base: float, value: float, step_ns: float = 0.0) -> bool:
        """Whether ``value`` breaches the limit, judged on what the limit measures (a ratio
        to nothing is breached by any value)."""
        if self.kind is LimitKind.MAX_RATIO and base <= 0:
            return exceeds(value, 0.0)
        return exceeds(self.measure(base, value), self.allowance(step_ns))

    def allowed_change(self, base: float | None, step_ns: float = 0.0) -> float | None:
        """The change the limit allows, as a log ratio from the base value (for the noise
        test); None where the base value or the bound is missing or not positive."""
        if base is None or base <= 0:
            return None
        if self.kind is LimitKind.MAX_RATIO:
            return math.log(self.amount)
        bound = self.bound(base, step_ns)
        return math.log(bound / base) if bound > 0 else None

    def observed(self, base: float, value: float, fmt: Callable[[float], str]) -> str:
        """How the candidate value reads against this limit: a ratio, a signed change, a value."""
        if self.kind is LimitKind.MAX_RATIO and base > 0:
            return units.ratio_beside(value / base, self.amount)
        if self.kind is LimitKind.MAX_SHARE:
            return units.percent_beside(value, self.amount)
        if self.kind is LimitKind.MAX_VALUE:
            return fmt(value)
        return f"{'+' if value >= base else '-'}{fmt(abs(value - base))}"

    def text(self, fmt: Callable[[float], str], step_ns: float = 0.0) -> str:
        """How the limit reads in a finding: ``max_ratio 1.10x``, ``max_increase 1.00 ms``."""
        if self.kind is LimitKind.MAX_RATIO:
            return f"{self.kind.value} {units.fmt_ratio(self.amount)}"
        if self.kind is LimitKind.MAX_SHARE:
            return f"{self.kind.value} {units.fmt_percent(self.amount)}"
        if self.kind is LimitKind.MAX_INCREASE_OF_STEP:
            allowed = units.fmt_time(self.allowance(step_ns))
            return f"{self.kind.value} {units.fmt_percent(self.amount)} ({allowed})"
        if self.kind is LimitKind.MAX_NOISE_WIDTHS:
            return f"{self.kind.value} {self.amount:g}"
        return f"{self.kind.value} {fmt(self.amount)}"


def require(given: frozenset[str], kinds: Iterable[LimitKind], rule: str) -> None:
    """A rule of these kinds needs at least one limit."""
    names = [k.value for k in kinds]
    if not any(name in given for name in names):
        raise OptionError(None, f"{rule} needs a limit: one of {', '.join(names)}")


def build(
    values: Mapping[str, Any], given: frozenset[str], kinds: Iterable[LimitKind], quantity: Quantity, metric: str
) -> tuple[Limit, ...]:
    """The limits given, in the order of ``kinds``; amounts in the metric's unit are parsed
    as ``quantity`` (their option parsers only checked their shape)."""
    out = []
    for kind in kinds:
        if kind.value not in given:
            continue
        amount = values[kind.value]
        if kind.in_metric_unit:
            try:
                amount = quantity.parse(amount)
            except ValueError as e:
                raise OptionError(kind.value, f"{e} (the unit of metric {metric!r})") from None
        out.append(Limit(kind, amount))
    return tuple(out)


def find(limits: Iterable[Limit], kind: LimitKind) -> Limit | None:
    """The limit of ``kind`` among ``limits``, if set."""
    return next((lim for lim in limits if lim.kind is kind), None)
