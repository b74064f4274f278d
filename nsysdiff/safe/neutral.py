"""Neutralise untrusted strings for the place they are written to.

Every kernel, NVTX, GPU, metadata or file name comes from a trace, a fingerprint or a
rule file that another job may have produced. Written as they are, such strings could
end a line and start a GitHub workflow command, drive the terminal with escape sequences
(colours, cursor moves, OSC-8 links, window titles), be read by rich as markup, or make a
step summary too large for GitHub. One function per destination:

* :func:`text`: one visible line for a terminal or a log. Control characters (C0, DEL,
  C1, line and paragraph separators, bidirectional overrides) become ``\\xNN`` /
  ``\\uNNNN`` escapes, so a newline can't start a line and ESC can't reach the terminal;
  ``##[`` (the runner's legacy command prefix, recognised anywhere in a line) becomes
  ``#\\x23[``; over ``limit`` characters the middle is cut and the cut is said.
* :func:`rich_text`: the same, as a :class:`rich.text.Text`, never parsed as markup.
* :func:`lines`: the last guard on a whole text document: no line that GitHub's runner
  would parse as a command (``::`` after leading blanks, ``##[`` anywhere), no control
  character but the newline.
* :func:`json_document`: a serialised JSON document with the same guarantees, losslessly
  (``\\uXXXX`` escapes decode to the original string).
* :func:`xml`: text for an XML 1.0 document (JUnit).
* :func:`html_document`: the last guard on a whole HTML document, which may be printed to
  a log too. A name in it is :func:`text`, then escaped by the pages' templates, which
  escape every value they write (``render/page.py``).
* :func:`csv_cell`: a CSV cell a spreadsheet shows as text: a cell starting with ``=``,
  ``+``, ``-`` or ``@`` would be read as a formula, so it gets a leading apostrophe, the
  OWASP advice (a tab or carriage return is already an escape).
* :func:`cap_markdown`: a Markdown document cut to GitHub's step-summary limit, its open
  blocks closed, with a line saying what was cut.
* :func:`scrub`: apply one of these to every string inside a report's frozen dataclasses,
  so a renderer can treat what it is given as safe.

Backslashes in names are kept as they are: an escape in the output is therefore not
proof that the name held a control character, only that it may have.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import types
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rich.text import Text

T = TypeVar("T")

NAME_LIMIT = 4096  # characters of one untrusted string kept in a report
# GitHub rejects a step summary over 1 MiB; leave room for what other steps append.
MARKDOWN_LIMIT = 1_000_000

# The bidirectional marks, overrides and isolates, and the Arabic letter mark: they reorder
# what a reader sees.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# C0 controls, DEL and C1 controls, NEL, the line and paragraph separators, and _BIDI.
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
_CONTROL_NOT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]")
# What json.dumps leaves raw inside strings (it escapes C0 itself; \n is structure).
_JSON_RAW = re.compile(f"[\x7f-\x9f\u2028\u2029{_BIDI}]")
_LEGACY = "##["
_LEGACY_SAFE = "#\\x23["
# Every character GitHub's runner trims before it looks for "::" (.NET's String.Trim:
# char.IsWhiteSpace, i.e. the Zs, Zl and Zp categories and the C0/C1 blanks), every
# character Python's str.isspace() accepts, and the zero-width ones older .NET trimmed
# (U+180E, U+200B, U+FEFF). A line that starts with any run of them, then "::", is a
# command to the runner. tests/safe/test_neutral.py checks the set against Unicode.
BLANKS = "\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u180e\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff"
_BLANKS_NOT_NEWLINE = BLANKS.replace("\n", "")
_COMMAND_LINE = re.compile(f"^([{_BLANKS_NOT_NEWLINE}]*):(?=:)", re.MULTILINE)
_LEADING_BLANKS = re.compile(f"^[{BLANKS}]*")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_XML_RAW = re.compile(f"[\r\x7f-\x9f\u2028\u2029{_BIDI}]")


def is_command(line: str) -> bool:
    """Whether GitHub's runner would parse ``line`` as a workflow command: ``::`` once every
    leading Unicode blank is trimmed (``ActionCommand.TryParseV2``), or ``##[`` anywhere
    (the legacy form). The fuzzer and the tests count injected lines with this."""
    return _LEADING_BLANKS.sub("", line).startswith("::") or _LEGACY in line


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def cut(s: str, limit: int = NAME_LIMIT) -> str:
    """``s`` shortened to about ``limit`` characters, its start and end kept, the cut said."""
    if len(s) <= limit:
        return s
    keep = max(limit - 40, 2)
    head, tail = keep * 2 // 3, keep - keep * 2 // 3
    return f"{s[:head]}…[{len(s) - head - tail:,} characters cut]…{s[len(s) - tail :]}"


def text(s: str, limit: int = NAME_LIMIT) -> str:
    """One visible, inert line for a terminal or a log."""
    out = cut(s, limit)
    if _CONTROL.search(out):
        out = _CONTROL.sub(_escape, out)
    return out.replace(_LEGACY, _LEGACY_SAFE)


def rich_text(s: str, style: str = "") -> Text:
    """:func:`text` as a rich renderable: printed as it is, never read as markup."""
    from rich.text import Text  # only the renderers that use rich pay for it

    return Text(text(s), style=style)


def lines(document: str) -> str:
    """A whole text document with no command line and no control character but ``\\n``."""
    out = _CONTROL_NOT_NEWLINE.sub(_escape, document).replace(_LEGACY, _LEGACY_SAFE)
    return _COMMAND_LINE.sub(lambda m: m.group(1) + "\\x3a", out)


def json_document(document: str) -> str:
    """A serialised JSON document made inert, losslessly: ``json.loads`` gives the same data.

    ``json.dumps`` escapes C0 controls but keeps DEL, C1 and the Unicode separators raw,
    and a string may hold ``##[``; both become ``\\uXXXX`` escapes (only ever inside
    strings, where the characters can occur).
    """
    out = _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", document)
    return out.replace(_LEGACY, "##\\u005b")


class LazyRows(list):  # type: ignore[type-arg]
    """A list the JSON encoder walks without holding it: ``convert`` makes each item as
    the encoder reaches it. For :func:`json_stream` only (its pure-Python encoder iterates
    a list; the C encoder, and anything indexing the list, would see it empty)."""

    def __init__(self, items: Sequence[Any], convert: Callable[[Any], Any]) -> None:
        super().__init__()
        self._items = items
        self._convert = convert

    def __iter__(self) -> Iterator[Any]:
        return (self._convert(x) for x in self._items)

    def __len__(self) -> int:
        return len(self._items)


_CHUNK = 1 << 20


def json_stream(data: Any, *, allow_nan: bool = True) -> str:
    """``json_document(json.dumps(data, indent=1))`` without the encoder's list of every
    piece (several hundred bytes a number: 700 MB for a fingerprint of 85,000 steps). The
    pieces are made inert a megabyte at a time; the last two characters wait for the next
    megabyte, so a ``##[`` split between two is still seen whole."""
    out: list[str] = []
    buf: list[str] = []
    size = 0
    carry = ""
    for piece in json.JSONEncoder(indent=1, allow_nan=allow_nan).iterencode(data):
        buf.append(piece)
        size += len(piece)
        if size >= _CHUNK:
            text = carry + "".join(buf)
            out.append(json_document(text[:-2]))
            carry, buf, size = text[-2:], [], 0
    out.append(json_document(carry + "".join(buf)))
    return "".join(out)


# Tab and carriage return, the other two OWASP lists, never reach a cell: text() has
# already made them visible escapes.
_FORMULA_START = ("=", "+", "-", "@")


def csv_cell(s: str) -> str:
    """An untrusted string for a CSV cell: one line (:func:`text`), never a formula."""
    # A cell may start a row, so a "::" after leading blanks is a command line there too.
    s = _COMMAND_LINE.sub(lambda m: m.group(1) + "\\x3a", text(s))
    return "'" + s if s.startswith(_FORMULA_START) else s


def xml(s: str) -> str:
    """Text for an XML 1.0 document: what XML 1.0 can't carry becomes U+FFFD."""
    return _NOT_XML.sub("\ufffd", s)


def xml_document(document: str) -> str:
    """A serialised XML document made inert in a log, losslessly: ``##[``, a ``::`` that
    starts a line, CR, DEL, C1 controls and the Unicode separators and bidirectional
    controls become character references (attribute values never span lines)."""
    out = _XML_RAW.sub(lambda m: f"&#x{ord(m.group()):x};", document).replace(_LEGACY, "##&#91;")
    return _COMMAND_LINE.sub(lambda m: m.group(1) + "&#58;", out)


# Any Unicode whitespace but the newline: GitHub's runner strips it all before a line's ``::``.
_HTML_COMMAND_LINE = re.compile(r"^([^\S\n]*):(?=:)", re.MULTILINE)


def html_document(document: str) -> str:
    """A whole HTML document made inert in a log (``--format html`` to stdout): control
    characters but the newline, ``##[`` and a line-leading ``::`` become character
    references. A browser reads ``##[`` and ``::`` back as they were; control characters,
    which HTML can't carry, never come from a name (:func:`text` made them escapes)."""
    out = _CONTROL_NOT_NEWLINE.sub(lambda m: f"&#x{ord(m.group()):x};", document).replace(_LEGACY, "##&#91;")
    return _HTML_COMMAND_LINE.sub(lambda m: m.group(1) + "&#58;", out)


def cap_markdown(
    document: str, limit: int = MARKDOWN_LIMIT, limit_name: str = "GitHub's 1 MiB step-summary limit"
) -> str:
    """``document`` within ``limit`` bytes of UTF-8: cut at a line, open code fences and
    ``<details>`` closed, and a last line saying how much was left out."""
    data = document.encode("utf-8")
    if len(data) <= limit:
        return document
    room = limit - 400  # the closing tags and the note
    head = data[:room].decode("utf-8", errors="ignore")
    head = head[: head.rfind("\n") + 1] if "\n" in head else ""
    kept = head.splitlines()
    tail: list[str] = []
    if sum(1 for line in kept if line.startswith("```")) % 2:
        tail.append("```")
    opened = sum(line.count("<details>") for line in kept)
    closed = sum(line.count("</details>") for line in kept)
    tail += ["", "</details>"] * max(opened - closed, 0)
    cut_bytes = len(data) - len(head.encode("utf-8"))
    tail += [
        "",
        f"> [!NOTE]\n> Report cut at {len(head.encode('utf-8')):,} of {len(data):,} bytes "
        f"({cut_bytes:,} left out) to stay within {limit_name}; "
        "the JSON report (`--format json`) has everything.",
    ]
    return head + "\n".join(tail) + "\n"


def scrub(value: T, clean: Callable[[str], str]) -> T:
    """``value`` with ``clean`` applied to every string in it: through frozen dataclasses,
    tuples, lists and mappings; enums and numbers untouched. Unchanged parts are shared."""
    return _scrub(value, clean, {})  # type: ignore[no-any-return]


def _scrub(value: Any, clean: Callable[[str], str], memo: dict[int, Any]) -> Any:
    if isinstance(value, enum.Enum) or value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        cleaned = clean(value)
        return value if cleaned == value else cleaned
    key = id(value)
    if key in memo:
        return memo[key]
    out: Any = value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            if not f.init:
                continue
            old = getattr(value, f.name)
            new = _scrub(old, clean, memo)
            if new is not old:
                changes[f.name] = new
        if changes:
            out = dataclasses.replace(value, **changes)
    elif isinstance(value, (tuple, list)):
        items = [_scrub(v, clean, memo) for v in value]
        if any(a is not b for a, b in zip(items, value, strict=True)):
            out = type(value)(items) if isinstance(value, list) or type(value) is tuple else value
    elif isinstance(value, (dict, types.MappingProxyType)):
        pairs = {_scrub(k, clean, memo): _scrub(v, clean, memo) for k, v in value.items()}
        if any(k not in value or value[k] is not v for k, v in pairs.items()):
            out = types.MappingProxyType(pairs) if isinstance(value, types.MappingProxyType) else pairs
    memo[key] = out
    return out
