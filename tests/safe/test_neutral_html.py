"""The last guard on a whole HTML document (a name in it is escaped by the templates:
tests/render/test_page.py)."""

from __future__ import annotations

import html as stdlib_html

import pytest

from nsysdiff.safe import neutral


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("::error::x", "&#58;:error::x"),
        ("  \t::warning::x", "  &#x9;::warning::x"),  # the tab a reference: the line starts with "&"
        ("\u3000\u00a0::notice::x", "\u3000\u00a0&#58;:notice::x"),  # any Unicode whitespace first
        ("a ##[error] b", "a ##&#91;error] b"),
        ("a::b", "a::b"),  # not at the start: not a command
    ],
)
def test_html_document_leaves_no_command_line(line: str, expected: str) -> None:
    out = neutral.html_document(f"<p>\n{line}\n</p>")
    assert out == f"<p>\n{expected}\n</p>"
    # A browser reads the same text back.
    assert stdlib_html.unescape(expected) == line


def test_html_document_control_characters_become_references() -> None:
    # HTML can't carry C0 controls at all; names never bring them (neutral.text comes first).
    assert neutral.html_document("a\x1bb\rc\x7f") == "a&#x1b;b&#xd;c&#x7f;"


def test_cap_markdown_names_its_limit() -> None:
    out = neutral.cap_markdown("line\n" * 1000, 1000, limit_name="GitHub's 65,536-character comment limit")
    assert len(out.encode()) <= 1000 and "to stay within GitHub's 65,536-character comment limit" in out
