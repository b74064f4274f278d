"""`nsysdiff rules explain` at the terminal's width: every paragraph wrapped once (not the
source's lines wrapped again), tables with their continuation under the meaning, and the
regex syntax named as it is (RE2)."""

from __future__ import annotations

import pytest

from nsysdiff.render import layout
from nsysdiff.rules import KINDS, SECTIONS
from nsysdiff.rules.catalog import explain, pack_names

NAMES = [*KINDS, *SECTIONS, *pack_names(), "gemm-per-call"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("width", [40, 80, 120])
def test_explained_at_the_width(name: str, width: int) -> None:
    text = explain(name, width)
    assert all(len(line) <= width for line in text.splitlines()), text
    assert layout.fit(text, width) == text  # nothing left for the safety net to wrap


@pytest.mark.parametrize("name", [*KINDS, *SECTIONS])
def test_paragraphs_are_wrapped_once(name: str) -> None:
    """Wrapping the source's 88-column lines again at 80 left a short tail after every
    line; a paragraph wrapped once has a short line only at its end."""
    for paragraph in explain(name, 80).split("\n\n"):
        lines = paragraph.splitlines()
        if any(line.startswith(" ") for line in lines):
            continue  # options and tables: their own layout
        assert all(len(line) > 60 for line in lines[:-1]), paragraph


def test_selectors_are_re2() -> None:
    text = explain("budget", 80)
    assert "Python regex" not in text
    assert "RE2" in " ".join(text.split()) and "no lookaround" in " ".join(text.split())
