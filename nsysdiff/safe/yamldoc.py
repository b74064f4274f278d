"""Read an untrusted YAML file (a rule file or a ``--phases`` file) within fixed limits.

Rule files come from other people's jobs, so a file must fail fast and in one line,
whatever it holds: the size is capped before the text is decoded, control characters
are refused with their line and column, and nesting depth and node count are checked on
PyYAML's event stream (an iterative parser) before the recursive composer runs, so a
5,000-deep document or a "billion laughs" of aliases is refused instead of exhausting
the stack or the memory.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from nsysdiff.errors import NsysdiffError

MAX_BYTES = 1_000_000  # the shipped packs are a few KB; 1 MB is generous and reads instantly
MAX_DEPTH = 32  # mappings and lists within each other
MAX_NODES = 100_000  # scalars, lists and mappings, with every alias expanded

# YAML 1.1's printable set (what PyYAML's reader accepts), less the BOM it also allows;
# anything else is a control character that has no business in a rule file.
# libyaml's parser when PyYAML has it: the same events and nodes, several times faster.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
# The longest number literal accepted: a limit or a count needs a handful of digits, and a
# 5,000-digit integer would pass Python's digit limit to int() or overflow float().
MAX_NUMBER_CHARS = 24


def _without_timestamps(cls: type[yaml.SafeLoader]) -> type[yaml.SafeLoader]:
    """``cls`` resolving no plain scalar as a date: ``2026-02-30`` stays the string it is
    (a date that does not exist would make the constructor fail), and anything that means a
    date is validated by the code that reads it."""
    resolvers = {
        first: [(tag, regexp) for tag, regexp in entries if tag != _TIMESTAMP]
        for first, entries in cls.yaml_implicit_resolvers.items()
    }
    constructors = {tag: c for tag, c in cls.yaml_constructors.items() if tag != _TIMESTAMP}
    return type(
        f"Plain{cls.__name__}", (cls,), {"yaml_implicit_resolvers": resolvers, "yaml_constructors": constructors}
    )


_LOADER = _without_timestamps(_LOADER)
_PYTHON_LOADER = _without_timestamps(yaml.SafeLoader)
# The tags a document may carry (explicitly or resolved): plain mappings, lists, strings,
# numbers, booleans and null; never a date, never a Python object.
TAGS = frozenset(_PYTHON_LOADER.yaml_constructors) - {None}


def constructor() -> yaml.SafeLoader:
    """A loader that builds Python values from nodes :func:`compose` returned."""
    return _PYTHON_LOADER("")


_NOT_PRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def read_text(path: Path, label: str, error: type[NsysdiffError]) -> str:
    """The file's text, refused when it is too large, not a regular file, or not UTF-8."""
    if not path.is_file():  # a FIFO would block the read forever
        raise error(f"{label}: no such file" if not path.exists() else f"{label}: not a regular file")
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as e:
        raise error(f"{label}: can't be read ({e.strerror})") from None
    if len(data) > MAX_BYTES:
        raise error(f"{label}: larger than {MAX_BYTES:,} bytes, the limit for a YAML file here")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        # The position, never the bytes: the file may not be ours to echo.
        line = data[: e.start].count(b"\n") + 1
        raise error(f"{label}:{line}: not UTF-8 text (byte {e.start})") from None


def compose(text: str, label: str, error: type[NsysdiffError]) -> Node | None:
    """The document's node tree (None for an empty document), or ``error`` in one line."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise error(f"{label}: larger than {MAX_BYTES:,} bytes, the limit for a YAML file here")
    bad = _NOT_PRINTABLE.search(text.lstrip("\ufeff"))
    if bad is not None:
        offset = bad.start() + (len(text) - len(text.lstrip("\ufeff")))
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        raise error(
            f"{label}:{line}: control character U+{ord(bad.group()):04X} at column {column} "
            "is not allowed in a YAML file"
        )
    try:
        _check_shape(text, label, error)
        node = _compose(text, _LOADER)
    except yaml.MarkedYAMLError as e:
        raise error(_syntax_error(e, text, label)) from None
    except yaml.YAMLError as e:
        raise error(f"{label}:1: YAML syntax error: {' '.join(str(e).split())}") from None
    if node is not None and _expanded_size(node, {}) > MAX_NODES:
        raise error(f"{label}: more than {MAX_NODES:,} values once aliases are expanded")
    if node is not None:
        _check_numbers(node, label, error, set())
    return node


def _check_numbers(node: Node, label: str, error: type[NsysdiffError], seen: set[int]) -> None:
    """Every number literal short enough to be a value nsysdiff can use (see MAX_NUMBER_CHARS)."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, ScalarNode):
        if node.tag in (_INT, _FLOAT) and len(str(node.value)) > MAX_NUMBER_CHARS:
            line = node.start_mark.line + 1 if node.start_mark else 1
            raise error(
                f"{label}:{line}: a number of {len(str(node.value)):,} characters; numbers here have at "
                f"most {MAX_NUMBER_CHARS}"
            )
    elif isinstance(node, SequenceNode):
        for child in node.value:
            _check_numbers(child, label, error, seen)
    elif isinstance(node, MappingNode):
        for k, v in node.value:
            _check_numbers(k, label, error, seen)
            _check_numbers(v, label, error, seen)


def _compose(text: str, loader_class: type[yaml.SafeLoader]) -> Node | None:
    loader = loader_class(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def _syntax_error(e: yaml.MarkedYAMLError, text: str, label: str) -> str:
    mark = e.problem_mark or e.context_mark
    line = mark.line + 1 if mark else 1
    if "nesting depth" in (e.problem or ""):  # libyaml's own limit, deeper than ours
        return f"{label}:{line}: nested more than {MAX_DEPTH} levels deep"
    if hasattr(yaml, "CSafeLoader"):
        # libyaml words its errors differently from PyYAML; the pure-Python parser stops at
        # the same place and says what it expected and found, the wording the docs show.
        try:
            _compose(text, _PYTHON_LOADER)
        except yaml.MarkedYAMLError as python_error:
            e = python_error
            mark = e.problem_mark or e.context_mark
            line = mark.line + 1 if mark else line
        except (yaml.YAMLError, RecursionError):
            pass
    problem = " ".join((e.problem or e.context or "unreadable YAML").split())
    return f"{label}:{line}: YAML syntax error: {problem}"


def _check_shape(text: str, label: str, error: type[NsysdiffError]) -> None:
    depth = nodes = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark else 1
                raise error(f"{label}:{line}: nested more than {MAX_DEPTH} levels deep")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if nodes > MAX_NODES:
                raise error(f"{label}: more than {MAX_NODES:,} values")


def _expanded_size(node: Node, memo: dict[int, int]) -> int:
    """Nodes counted as often as aliases repeat them, memoised so that the count is cheap."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a recursive alias counts once instead of looping
    size = 1
    if isinstance(node, SequenceNode):
        size += sum(_expanded_size(n, memo) for n in node.value)
    elif isinstance(node, MappingNode):
        size += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    memo[key] = min(size, MAX_NODES + 1)
    return memo[key]


def load_plain(path: Path, label: str, error: type[NsysdiffError]) -> object:
    """A small YAML file as plain Python data (safe constructors only), within the limits."""
    text = read_text(path, label, error)
    node = compose(text, label, error)
    if node is None:
        return None
    loader = constructor()
    try:
        return loader.construct_document(node)
    except (yaml.YAMLError, ValueError, OverflowError) as e:
        raise error(f"{label}: can't read the YAML ({' '.join(str(e).split())})") from None
    finally:
        loader.dispose()
