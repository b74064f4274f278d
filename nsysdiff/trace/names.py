"""Names as the reader hands them on: decoded and cut at NAME_LIMIT, NVTX range names folded
at PyTorch's per-call suffixes (in SQL and in Python, to the same key), launch-shape suffixes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

# PyTorch's per-call suffixes make every range name unique; cutting them in SQL lets
# GROUP BY merge a million "aten::mm, seq = N, op_id = M" rows into one.
_NVTX_SUFFIXES = (", seq = ", ", op_id = ", ", sizes = ", ", stashed seq = ", ", input_op_ids = ")


def fold_sql(expr: str) -> str:
    """SQL that cuts the range name ``expr`` at its first per-call suffix.

    Every suffix starts with ", ", so the cut is at the first ", " exactly when a suffix
    starts there: when the first occurrence of some suffix is at that position. That
    costs one search per suffix tried, stopping at the first that matches, where the
    leftmost of all five suffixes costs five searches of the whole name and their
    minimum (0.8 s less per 4.8M PyTorch ranges). A name whose first ", " starts no
    suffix (rare) takes the leftmost of all five.
    """
    far = 1 << 30
    first = f"instr({expr}, ', ')"
    cut = f"substr({expr}, 1, {first} - 1)"
    whens = " ".join(f"WHEN instr({expr}, '{p}') THEN {cut}" for p in _NVTX_SUFFIXES)
    cuts = ", ".join(f"coalesce(nullif(instr({expr}, '{p}'), 0), {far})" for p in _NVTX_SUFFIXES)
    return f"CASE {first} WHEN 0 THEN {expr} {whens} ELSE substr({expr}, 1, min({cuts}) - 1) END"


# Longest name kept whole. Real demangled C++ names reach a few KiB; a name of megabytes
# is an attack on every regex and table that meets it (categories, families, rules).
NAME_LIMIT = 65_536


def name_text(value: object) -> str:
    """A name as the reader hands it on: text (a BLOB decoded), at most ~NAME_LIMIT characters.

    A longer name keeps its start and a digest of the whole, so that two long names that
    differ only past the limit stay two names.
    """
    if isinstance(value, bytes):
        if value.isascii() and len(value) > NAME_LIMIT:
            # A crafted name of megabytes: cut without decoding it all (one byte, one character).
            return _cut(value[:NAME_LIMIT].decode("ascii"), len(value), value)
        value = value.decode("utf-8", "replace")
    text = "" if value is None else str(value)
    if len(text) <= NAME_LIMIT:
        return text
    return _cut(text[:NAME_LIMIT], len(text), text.encode("utf-8", "surrogatepass"))


def _cut(head: str, length: int, utf8: bytes) -> str:
    """A long name's start ``head``, how many characters were cut from its ``length``, and
    the digest of all its ``utf8`` bytes."""
    digest = hashlib.sha256(utf8).hexdigest()[:16]
    return f"{head}…[{length - NAME_LIMIT:,} more characters cut; sha256 {digest}]"


# fold_sql's cut, on UTF-8 bytes: the suffixes are ASCII, so a match in the bytes is a
# match in the text at a character boundary. One linear pass, whatever the text.
# (Each starts with ", ": written as one prefix, the search skips to its occurrences.)
_SUFFIX_BYTES = re.compile(b", (?:" + b"|".join(re.escape(p.encode()[2:]) for p in _NVTX_SUFFIXES) + b")")
LONG_NAME = "nsysdiff_long_name"


def long_name(raw: bytes) -> str:
    """The key of a range name of more than NAME_LIMIT bytes: folded as :func:`fold_sql`
    folds, then cut as :func:`name_text` cuts. This is the final name: the readers of
    keys take it as it is (:func:`key_name`)."""
    m = _SUFFIX_BYTES.search(raw)
    return name_text(raw if m is None else raw[: m.start()])


def key_sql(expr: str) -> str:
    """The key of the range name ``expr``: what :func:`fold_sql` makes of it.

    A name of more than NAME_LIMIT bytes (a crafted file: megabytes per range) goes to
    :func:`long_name` instead, which reads it once more: folded in SQL, it would be read
    six times, searched five times and stored in the keyed table at full length, per row.
    Real names pay one ``length`` call (5% of the NVTX pass; a subquery that computed the
    name once, as a co-routine, cost 30% more on them than the repeated reads it saves).
    The two ways give the same key for any name the limit keeps whole.
    """
    return (
        f"CASE WHEN length(CAST({expr} AS BLOB)) > {NAME_LIMIT} THEN {LONG_NAME}(CAST({expr} AS BLOB)) "
        f"ELSE {fold_sql(expr)} END"
    )


def key_name(value: object) -> str:
    """A key made by :func:`key_sql` as text: decoded when a BLOB, never cut again."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


# Above this many keys, testing a name against each costs more than folding it.
_PREFILTER_KEYS = 8


def key_prefilter(expr: str, keys: Sequence[str]) -> tuple[str, list[str]]:
    """SQL that holds for every name ``expr`` whose key (:func:`key_sql`) is among
    ``keys``, and for few others, with its parameters: a name's key is the name itself
    or the part before a suffix, which starts with ", ". Comparing the name with a few
    strings costs less than folding it, so only the likely names are folded.
    """
    if not keys or len(keys) > _PREFILTER_KEYS:
        return "1", []
    short = [k for k in keys if len(k) <= NAME_LIMIT]
    # "k" itself, or "k, ..." (between "k, " and "k,!": "!" follows " " in every encoding).
    terms = [f"({expr} = ? OR ({expr} >= ? AND {expr} < ?))"] * len(short)
    if len(short) < len(keys):  # a cut name: the whole name is past the limit too
        terms.append(f"length(CAST({expr} AS BLOB)) > {NAME_LIMIT}")
    return "(" + " OR ".join(terms) + ")", [p for k in short for p in (k, k + ", ", k + ",!")]


# A launch's shape, as gpukernsum groups launches.
SHAPE_COLS = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")


def suffix(grid: tuple[int, ...], block: tuple[int, ...]) -> str:
    """What ``--by name+launch`` appends to a kernel's name."""
    return f" [grid {','.join(map(str, grid))}, block {','.join(map(str, block))}]"


def shape_suffix(shape: str) -> str:
    """:func:`suffix` of a shape key written by the kernel scan (``''``: no shape)."""
    if not shape:
        return ""
    v = shape.split(",")
    return suffix(tuple(int(x) for x in v[:3]), tuple(int(x) for x in v[3:]))


# How demanglers of different nsys versions spell one template argument: nsys 2021.2
# writes ``3u`` and ``true``, 2021.3 ``(unsigned int)3`` and ``(bool)1``.
_LITERAL_SUFFIX = {
    "unsigned int": "u",
    "int": "",
    "unsigned long": "ul",
    "long": "l",
    "unsigned long long": "ull",
    "long long": "ll",
    "unsigned short": "",
    "short": "",
    "unsigned char": "",
    "char": "",
    "signed char": "",
}
_CAST = re.compile(
    r"\((unsigned (?:int|long long|long|short|char)|signed char|long long|int|long|short|char|bool)\)(-?\d+)"
)
_SPACE_BEFORE_POINTER = re.compile(r"\s+([*&]+)")


def _literal(m: re.Match[str]) -> str:
    kind, value = m.group(1), m.group(2)
    if kind == "bool":
        return "false" if value == "0" else "true"
    return value + _LITERAL_SUFFIX[kind]


def spelling(demangled: str) -> str:
    """``demangled`` with template arguments spelled one way, whatever the demangler:
    casts of integer literals to their suffixes (``(unsigned int)3`` -> ``3u``), ``(bool)1``
    -> ``true``, no space before ``*`` and ``&``."""
    return _SPACE_BEFORE_POINTER.sub(r"\1", _CAST.sub(_literal, demangled))


def without_parameters(name: str) -> str:
    """``name`` with its trailing parameter list reduced to their number (``f<3u>(T3 *,
    int)`` -> ``f<3u>/2``): demanglers name a parameter by its template parameter (``T3``)
    or by its type (``__half*``), so only the count is compared, the last resort of a
    match; a kernel generated with another argument list stays another kernel."""
    if not name.endswith(")"):
        return name
    depth, commas = 0, 0
    for i in range(len(name) - 1, -1, -1):
        c = name[i]
        depth += {")": 1, "(": -1, ">": 1, "<": -1}.get(c, 0)
        if c == "," and depth == 1:
            commas += 1
        if depth == 0 and c == "(":
            inner = name[i + 1 : -1].strip()
            return f"{name[:i].rstrip()}/{commas + 1 if inner else 0}"
    return name
