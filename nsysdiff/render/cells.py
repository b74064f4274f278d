"""What goes into one cell of a report: Markdown-escaped text, a JSON-safe number.

Shared by every renderer that writes tables, so no format borrows from another.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

from nsysdiff.safe import neutral

# Underscores open emphasis only at a word boundary; intraword ones stay readable.
_BOUNDARY_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
_MD_ENTITIES = {
    "|": "&#124;",
    "`": "&#96;",
    "*": "&#42;",
    "[": "&#91;",
    "]": "&#93;",
    "\\": "&#92;",
    "~": "&#126;",
    "@": "&#64;",  # no @mentions from a kernel name in a PR comment
}
_MD_TABLE = str.maketrans(_MD_ENTITIES)


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell (and anywhere in inline Markdown)."""
    flat = " ".join(text.splitlines()) if ("\n" in text or "\r" in text) else text
    escaped = html.escape(flat, quote=True).translate(_MD_TABLE)
    return _BOUNDARY_UNDERSCORE.sub("&#95;", escaped)


def attr(text: str) -> str:
    """Text safe in a double-quoted HTML attribute inside a table cell."""
    flat = " ".join(text.splitlines())
    return html.escape(flat, quote=True).replace("|", "&#124;").replace("`", "&#96;")


def finite(obj: Any, key: str = "") -> Any:
    """``obj`` with every NaN or infinity replaced by ``None``, no ``-0.0``, and every
    duration (a key ending in ``_ns``) rounded to the nanosecond: a per-step average or a
    difference of sums is a float, and ``-6139773464.000001`` claims a precision no trace
    has."""
    if isinstance(obj, float):
        if not math.isfinite(obj):
            return None
        if key.endswith("_ns"):
            return round(obj)
        return obj + 0.0  # -0.0 + 0.0 is 0.0
    if isinstance(obj, dict):
        return {k: finite(v, k if isinstance(k, str) else "") for k, v in obj.items()}
    if isinstance(obj, neutral.LazyRows):
        return obj  # steps: integers only, made as they are written
    if isinstance(obj, list):
        return [finite(v, key) for v in obj]
    return obj
