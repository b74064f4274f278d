"""What the docs say about themselves and the command holds: links land on a heading,
every workflow pins the same action ref, and help names every output format."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_cli

from nsysdiff.render import _BY_SUFFIX

ROOT = Path(__file__).resolve().parent.parent
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # a '#' in a code block is no heading
    return {_anchor(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_link_to_a_section_lands_on_a_heading(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    for target, anchor in re.findall(r"\]\(([\w./-]*\.md)#([\w-]+)\)", text):
        path = (doc.parent / target).resolve()
        assert path.exists(), f"{doc.name}: {target} does not exist"
        assert anchor in _anchors(path), f"{doc.name}: {target}#{anchor} names no heading there"


def test_every_example_pins_the_action_ref_the_readme_pins() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    refs = set(re.findall(r"uses: nsysdiff/nsysdiff@([\w.]+)", readme))
    assert len(refs) == 1, refs
    for path in [*ROOT.glob("docs/*.md"), *ROOT.glob("examples/github/*")]:
        used = set(re.findall(r"nsysdiff/nsysdiff@([\w.]+)", path.read_text(encoding="utf-8")))
        assert used <= refs, f"{path.name} pins {used - refs}, the README {refs}"


def test_diff_help_names_every_output_format() -> None:
    out = run_cli("diff", "--help", env={"COLUMNS": "200"}).stdout
    said = " ".join(out.split())
    for fmt in set(_BY_SUFFIX.values()):
        suffixes = [s for s, f in _BY_SUFFIX.items() if f is fmt]
        assert any(s in said for s in suffixes), (fmt, suffixes)


def test_what_the_docs_say_the_test_extra_holds_is_what_it_holds() -> None:
    import tomllib

    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["test"]
    has_otava = any(req.startswith("apache-otava") for req in test_extra)
    text = " ".join((ROOT / "docs" / "history.md").read_text(encoding="utf-8").split())
    assert ("the test extra includes it" in text) == has_otava
    assert ("the test extra leaves it out" in text) == (not has_otava)


def test_diff_help_names_auto_steps() -> None:
    out = " ".join(run_cli("diff", "--help", env={"COLUMNS": "200"}).stdout.split())
    per = out.split("--per RANGE ", 1)[1].split(" --", 1)[0]
    assert "auto" in per, per
