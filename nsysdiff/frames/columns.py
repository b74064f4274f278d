"""One typed column builder for every frame: integer nanoseconds, counts, ratios, text.

Frames follow two conventions (docs/frames.md): times are integer nanoseconds (``Int64``,
rounded to the nanosecond where a per-step figure or an interpolated quantile has a
fraction, as ``--format csv`` rounds them), and a missing value is ``<NA>``, never a NaN
standing in for an absent side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas loads when a frame is made, so importing nsysdiff never pays for it
    import pandas as pd

# The dtypes every column kind gets (documented in docs/frames.md).
NS = "Int64"
COUNT = "Int64"
RATIO = "Float64"
TEXT = "string"
FLAG = "boolean"


def ns(x: float | None) -> int | None:
    """Nanoseconds as an integer: a per-step average or a quantile rounded, as the CSV does."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return round(x) + 0


def ratio(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x) + 0.0


# What each frame takes, and how a caller gets one: the message of a frame given the wrong thing.
_HOW = {
    "Fingerprint": "nd.load(path)",
    "Diff": "nd.compare(base, candidate), or a report's .diff",
    "Report": "nd.diff(base, candidate, rules)",
}


def expect(value: object, kind: type, call: str) -> None:
    """A ``TypeError`` naming what ``call`` takes and how to get one, unless ``value`` is a
    ``kind``: a notebook's ``diff_frame(fingerprint)`` should not end in an AttributeError
    about a field it never named."""
    if isinstance(value, kind):
        return
    got = type(value).__name__
    hint = "; pass report.diff" if got == "Report" and kind.__name__ == "Diff" else ""
    raise TypeError(f"{call} takes a {kind.__name__} ({_HOW.get(kind.__name__, kind.__name__)}), not a {got}{hint}")


def frame(columns: Mapping[str, tuple[str, Sequence[Any]]]) -> pd.DataFrame:
    """A DataFrame of ``name -> (dtype, values)``, columns in the order given."""
    try:
        import pandas as pd
    except ImportError as e:  # the extra is optional: say how to get it, not just what is missing
        raise ImportError('nsysdiff\'s DataFrame views need pandas: pip install "nsysdiff[pandas]"') from e
    return pd.DataFrame({name: pd.array(list(values), dtype=dtype) for name, (dtype, values) in columns.items()})
