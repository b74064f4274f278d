"""Quantities with units in rule files: times, sizes, ratios, percentages, counts.

Every parser takes the value YAML produced (a str, int, float or bool) and returns a plain
number, or raises :class:`ValueError` with the message the user sees after
``key 'KEY': ``. Sizes are decimal (1 KB = 1000 B), like ``nsys stats``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from nsysdiff import units as _render

# Findings print quantities the way every report does.
fmt_time = _render.ns
fmt_size = _render.nbytes
fmt_ratio = _render.ratio

TIME_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
SIZE_UNITS = {"B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9}

_NUMBER = r"(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_QUANTITY = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>[A-Za-zµ%]*)\s*$")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite, non-negative number, else None: every
    quantity here is a size, a time, a count, a ratio or a share, and a NaN limit would
    pass every value while a negative one would fail a trace diffed with itself."""
    try:
        num = float(value)
    except (OverflowError, ValueError):  # a 400-digit integer
        return None
    return num if math.isfinite(num) and num >= 0 else None


def _split(value: Any) -> tuple[float, str] | None:
    if _is_number(value):
        num = finite(value)
        return None if num is None else (num, "")
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value)
    if not m:
        return None
    num = finite(m.group("num"))
    return None if num is None else (num, m.group("unit"))


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text):,} characters)"


def _scaled(
    value: Any, scales: Mapping[str, float], what: str, ok: Callable[[float, str], bool] | None = None
) -> float:
    """``value``'s number times the scale of its unit, when the unit is one of ``scales``
    (and ``ok`` accepts the pair); else the error that it is not ``what``."""
    q = _split(value)
    if q is not None and q[1] in scales and (ok is None or ok(*q)):
        return q[0] * scales[q[1]]
    raise ValueError(f"{_show(value)} is not {what}")


def parse_time(value: Any) -> float:
    """``5ms`` -> 5e6 (nanoseconds). A bare ``0`` is allowed; other numbers need a unit."""
    return _scaled(
        value,
        {**TIME_UNITS, "": 1.0},
        "a time (a number with ns, us, ms or s, e.g. '1.5ms')",
        lambda num, unit: unit != "" or num == 0,
    )


def parse_size(value: Any) -> float:
    """``64MB`` -> 64e6 (bytes, decimal units). A bare number is bytes."""
    return _scaled(value, {"": 1.0, **SIZE_UNITS}, "a size (a number with B, KB, MB or GB, e.g. '64MB')")


def parse_ratio(value: Any) -> float:
    """``1.10x`` (or a bare ``1.1``) -> 1.1. Must be positive."""
    return _scaled(
        value, {"": 1.0, "x": 1.0}, "a ratio (a positive number with x, e.g. '1.10x')", lambda num, _: num > 0
    )


def parse_percent(value: Any) -> float:
    """``5%`` -> 0.05. The ``%`` is required: a bare 0.1 could mean 10% or 0.1%."""
    return _scaled(value, {"%": 1.0}, "a percentage (a number with %, e.g. '5%')") / 100.0


def parse_count(value: Any) -> float:
    """A plain non-negative number of calls or operations."""
    num = finite(value) if _is_number(value) else None
    if num is not None:
        return num
    raise ValueError(f"{_show(value)} is not a count (a non-negative number, e.g. 100)")


def fmt_signed_time(ns: float) -> str:
    """``+1.20 ms``, ``-3.00 us``, ``0 ns``: a change of time as findings print it."""
    return ("+" if ns > 0 else "") + fmt_time(ns)


def fmt_percent(f: float) -> str:
    return f"{100 * f:.2f}%"


def beside(value: float, limit: float, fmt: Callable[[float], str], digits: Callable[[float, int], str]) -> str:
    """``value`` as ``fmt`` prints it, or with as many more digits (``digits(v, n)``) as
    it takes to differ from ``limit`` printed alike: a ratio of 1.024 over a limit of 1.02
    reads ``1.024x vs limit max_ratio 1.02x``, never ``1.02x vs limit max_ratio 1.02x``."""
    shown = fmt(value)
    if value == limit or shown != fmt(limit):
        return shown
    for n in range(3, 10):
        if digits(value, n) != digits(limit, n):
            return digits(value, n)
    return shown


def ratio_beside(value: float, limit: float) -> str:
    return beside(value, limit, fmt_ratio, lambda v, n: f"{v:.{n}f}x")


def percent_beside(value: float, limit: float) -> str:
    return beside(value, limit, fmt_percent, lambda v, n: f"{100 * v:.{n}f}%")


def fmt_count(c: float) -> str:
    """``8,955``, or ``12.5`` for a per-step average: as the report's tables print counts."""
    return f"{c:,.0f}" if float(c).is_integer() else f"{c:,.1f}"
