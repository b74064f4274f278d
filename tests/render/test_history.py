"""``history changes`` as text and the dashboard's index, on a scan made by hand: what a
structural change is called, the kind beside every key, no padding, no empty column."""

from __future__ import annotations

import numpy as np

from nsysdiff.history import changes
from nsysdiff.history.changes import Changes, Step, Structural
from nsysdiff.history.dashboard import Dashboard
from nsysdiff.render import history, history_html

NAME = "unrolled_elementwise_kernel"
SHA = "0040c0ffee" + "0" * 30


def _step(kind: str) -> Step:
    return Step(
        kind=kind,
        key=NAME,
        index=40,
        commit=SHA,
        before_commit="0039" + "0" * 36,
        before_ns=5_000_000.0,
        after_ns=5_400_000.0,
        ratio=1.08,
        ci_low=1.07,
        ci_high=1.09,
        p_value=1e-9,
        before_runs=120,
        after_runs=60,
        returns_to=None,
        label=NAME,
    )


def _changes() -> Changes:
    return Changes(
        store="main.sqlite",
        ref="main",
        identity=("NVIDIA H100", "whole", "none"),
        commits=tuple(f"{i:04d}" + "0" * 36 for i in range(60)),
        runs=180,
        keys=40,
        structural=2,
        steps=(_step("kernel"), _step("family")),
        drifts=(),
        max_pvalue=1e-5,
        window=30,
        structures=(
            Structural("copy", "DtoD", "appeared", SHA, 20),
            Structural("kernel", "void gone_kernel<1>()", "gone", "0050" + "0" * 36, 50, label="gone_kernel"),
        ),
    )


def test_structural_changes_are_named_with_their_commit() -> None:
    text = history.render_changes(_changes(), 80)
    assert "2 keys not in every run (structural changes) were not scanned:" in text
    assert "    appeared at 0040c0ffee00: copies DtoD\n" in text
    assert "    gone at 005000000000: kernel gone_kernel\n" in text


def test_each_key_has_its_kind_and_no_line_ends_in_spaces() -> None:
    for width in (80, 140):
        text = history.render_changes(_changes(), width)
        rows = [line for line in text.splitlines() if line.startswith(NAME)]
        assert [row.split()[1] for row in rows] == ["family", "kernel"] or [row.split()[1] for row in rows] == [
            "kernel",
            "family",
        ], text
        assert not any(line != line.rstrip() for line in text.splitlines()), text


def test_the_index_names_structural_changes_and_has_no_empty_column() -> None:
    index = history_html.pages(Dashboard("main.sqlite", "main", _changes(), ()))["index.html"]
    section = index[index.index("<h2>Structural changes (2)") :]
    assert "appeared" in section and "DtoD" in section and "0040c0ffee" in section and "gone_kernel" in section
    steps = index[index.index("<h2>Change points") : index.index("</table>", index.index("<h2>Change points"))]
    assert "<th></th>" not in steps.replace(" ", "") and "returns" not in steps


def test_a_key_is_named_by_how_it_changed() -> None:
    keys = [("copy", "DtoD"), ("kernel", "gone"), ("kernel", "flaky"), ("kernel", "some_runs")]
    # 4 commits of 2 runs each; columns as keys.
    present = np.array(
        [
            [False, True, True, True],
            [False, True, False, False],
            [False, True, True, True],
            [False, True, True, False],
            [True, False, False, True],
            [True, False, False, True],
            [True, False, True, True],
            [True, False, True, True],
        ]
    )
    commit_of = np.repeat(np.arange(4), 2)
    found = changes.structural(keys, present, commit_of, ("c0", "c1", "c2", "c3"), np.arange(4))
    assert [(x.key, x.change, x.commit, x.commits) for x in found] == [
        ("DtoD", "appeared", "c2", 2),
        ("gone", "gone", "c2", 2),
        ("flaky", "intermittent", None, 3),
        ("some_runs", "intermittent", None, 4),
    ]
