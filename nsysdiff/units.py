"""Human-readable numbers, shared by every text-like renderer."""

from __future__ import annotations


def ns(value: float | None) -> str:
    """A duration in the largest unit that keeps it >= 1: ``1.20 ms``, ``877.38 ms``."""
    if value is None:
        return "-"
    v = float(value)
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:.3f} s"
    if a >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if a >= 1e3:
        return f"{v / 1e3:.2f} us"
    return f"{v:.0f} ns"


def plural(n: int, word: str) -> str:
    """``1 run``, ``2 runs``, ``3 families``: a count with its noun, never ``run(s)``."""
    return f"{n:,} {word if n == 1 else many(word)}"


def many(word: str) -> str:
    """A noun (or a phrase ending in one) made plural by the English rules the reports'
    nouns need: ``family`` families, ``H2D copy`` copies, ``launch`` launches, ``key`` keys."""
    if word.endswith("y") and word[-2:-1] not in ("", "a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def si(value: float) -> str:
    """A large count to three significant digits: ``10M``, ``40.2k``, ``7.5G``."""
    v = float(value)
    for suffix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{suffix}"
    return f"{v:.0f}"


def nbytes(value: float | None) -> str:
    if value is None:
        return "-"
    v = float(value)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.2f} {unit}"
    return f"{v:.0f} B"


def ratio(value: float | None) -> str:
    if value is None:
        return "-"
    if 0 < value < 0.005:
        # Two decimals would print a shrink to 0.4% as 0.00x, which reads as "gone".
        return "<0.01x"
    return f"{value:.2f}x"


def pvalue(value: float) -> str:
    """A p-value in two significant digits; one that underflowed is below the smallest
    double a test reports, never a printed zero."""
    if value <= 0:
        return "<1e-300"
    return f"{value:.1e}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def signed_ns(value: float) -> str:
    return ("+" if value > 0 else "") + ns(value) if value else "0"


def shorten(name: str, width: int = 60) -> str:
    """Keep the start and the end of a long kernel name: both tend to carry meaning."""
    if len(name) <= width:
        return name
    head = (width - 1) * 2 // 3
    tail = width - 1 - head
    return name[:head] + "…" + name[-tail:]
