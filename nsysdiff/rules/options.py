"""Option value parsers shared by the rule kinds, and the options several kinds declare.

Each parser takes what YAML produced and returns a validated value, or raises
``ValueError`` with the text that follows ``key 'KEY': `` in the error message.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping, Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from nsysdiff.rules import units
from nsysdiff.rules.model import Option
from nsysdiff.safe.regex import Regex, RegexError
from nsysdiff.safe.regex import compile as compile_regex

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    D = TypeVar("D", bound=DataclassInstance)
else:
    D = TypeVar("D")


def type_name(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, date):
        return f"a date ({value.isoformat()})"
    return type(value).__name__


def string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type_name(value)}")
    return value


def nonempty_string(value: Any) -> str:
    s = string(value)
    if not s.strip():
        raise ValueError("must not be empty")
    return s


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {type_name(value)}")
    return value


def regex(value: Any) -> Regex:
    """A pattern for RE2 (linear-time matching): no lookaround, no backreferences."""
    if not isinstance(value, str):
        raise ValueError(f"expected a regex string, got {type_name(value)}")
    if not value:
        raise ValueError("the regex is empty (it would match everything; use '.*' to mean that)")
    try:
        return compile_regex(value)
    except RegexError as e:
        # Lookaround and backreferences are the Python features users reach for first.
        hint = " (patterns are RE2: no lookaround, no backreferences)" if e.unsupported else ""
        raise ValueError(f"bad regex {value!r}: {e}{hint}") from None


def regex_list(value: Any) -> tuple[Regex, ...]:
    """One regex or a non-empty list of them."""
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ValueError("expected a regex or a non-empty list of regexes, got an empty list")
    return tuple(regex(v) for v in items)


def choice(choices: Sequence[str]) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"expected one of {', '.join(choices)}; got {type_name(value)}")
        if value not in choices:
            close = difflib.get_close_matches(value, choices, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"{value!r} is not one of {', '.join(choices)}{hint}")
        return value

    return parse


def choice_list(choices: Sequence[str]) -> Callable[[Any], tuple[str, ...]]:
    """One choice or a non-empty list of distinct choices, in the order given."""
    one = choice(choices)

    def parse(value: Any) -> tuple[str, ...]:
        items = value if isinstance(value, list) else [value]
        if not items:
            raise ValueError(f"expected one or more of {', '.join(choices)}; got an empty list")
        out: list[str] = []
        for v in items:
            c = one(v)
            if c in out:
                raise ValueError(f"{c!r} is listed twice")
            out.append(c)
        return tuple(out)

    return parse


def _unit(parse: Callable[[Any], float]) -> Callable[[Any], float]:
    def wrapped(value: Any) -> float:
        if isinstance(value, (list, dict, bool)) or value is None:
            raise ValueError(f"expected a quantity, got {type_name(value)}")
        return parse(value)

    return wrapped


time = _unit(units.parse_time)
size = _unit(units.parse_size)
ratio = _unit(units.parse_ratio)
percent = _unit(units.parse_percent)
count = _unit(units.parse_count)


def number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, got {type_name(value)}")
    num = units.finite(value)
    if num is None and value == value and not isinstance(value, float):  # an int too large for a float
        raise ValueError(f"a number of {len(str(value)):,} digits is too large")
    if num is None and value != value:
        raise ValueError("expected a number, got NaN")
    if num is None or num <= 0:
        raise ValueError(f"must be a positive, finite number, got {value}")
    return num


def iso_date(value: Any) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise ValueError(f"expected a date YYYY-MM-DD, got {type_name(value)}")


def written(name: str, kind: str, parse: Callable[[Any], Any], doc: str, default: str) -> Option:
    """An option whose default is written as a rule file writes it (``1ms``, ``50%``) and read
    by the option's own parser: the value and what the docs say of it are one fact."""
    return Option(name, kind, parse, doc, default=parse(default), default_doc=default)


def time_floor(doc: str, default: str = "0ns") -> Option:
    """The ``min_time`` option: what is under this time is too small to judge."""
    return written("min_time", "time", time, doc, default)


def kernel_filter(doc: str) -> Option:
    """The ``kernel`` option: only the kernels whose short or demangled name matches."""
    return Option("kernel", "regex", regex, doc, default_doc="every kernel")


def choices(name: str, choices: Sequence[str], lead: str, **more: Any) -> Option:
    """An option taking one of ``choices`` or a list of them, its doc ``lead`` followed by the
    choices."""
    return Option(name, "choice list", choice_list(choices), f"{lead}: {', '.join(choices)} (one or a list).", **more)


def taken(cls: type[D], **renamed: str) -> Callable[[Mapping[str, Any], frozenset[str]], D]:
    """A kind's ``build`` when its options object holds the validated values as they are: each
    field the value of the option of its name, or of the option ``renamed`` names for it."""
    names = {f.name: renamed.get(f.name, f.name) for f in dataclasses.fields(cls)}

    def build(values: Mapping[str, Any], given: frozenset[str]) -> D:
        return cls(**{field: values[option] for field, option in names.items()})

    return build
