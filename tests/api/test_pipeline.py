"""``api.diff`` is the pipeline of ``nsysdiff diff``: the notebook's report and the
command's exit code and bytes are one verdict, on real pairs and the bundled ones."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from conftest import real_trace, run_cli

import nsysdiff.api as nd
from nsysdiff.errors import ExitCode
from nsysdiff.render import Format, render

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


# (base runs, candidate runs, packs): bundled pairs always run; real ones skip when absent.
CASES = {
    "h100-batch-invariance": (["h100/bs1.sqlite"], ["h100/bs16.sqlite"], ["batch-invariance"]),
    "cascade-default": (["cascade/bs1.sqlite"], ["cascade/bs16.sqlite"], ["default"]),
    "cascade-unjudged": (["cascade/bs1.sqlite"], ["cascade/bs16.sqlite"], None),
    "ci-repeat-tpot": (["ci/main_r2.json"], ["ci/main.json"], ["tpot"]),
    "ci-pr-tpot": (["ci/main.json"], ["ci/pr.json"], ["tpot"]),
    "ci-two-base-runs-tpot": (["ci/main.json", "ci/main_r2.json"], ["ci/pr_item.json"], ["tpot"]),
    "h100-self-default": (["h100/bs1.sqlite"], ["h100/bs1.sqlite"], ["default"]),
    "real-llm-tpot": (["real:h100/llm_bs1"], ["real:h100/llm_bs16"], ["tpot"]),
    "real-llm-repeat-default": (["real:h100/llm_bs16_r2"], ["real:h100/llm_bs16"], ["default"]),
    "real-compile-batch-invariance": (
        ["real:h100/llm_bs1_compile"],
        ["real:h100/llm_bs16_compile"],
        ["batch-invariance"],
    ),
}


def _path(name: str) -> Path:
    return real_trace(name[5:]) if name.startswith("real:") else EXAMPLES / name


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_api_report_is_the_commands(case: str) -> None:
    base_names, cand_names, packs = CASES[case]
    base, cand = [_path(n) for n in base_names], [_path(n) for n in cand_names]
    rules = ["--no-rules"] if packs is None else [a for p in packs for a in ("--rules", p)]
    sides = [*map(str, base), *map(str, cand)]
    if len(base) > 1:
        sides = ["--base", *map(str, base), "--candidate", *map(str, cand)]
    code, out, _ = run_cli("diff", *sides, *rules, "--format", "json", "--quiet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the command's warnings go to stderr, the API's are Python's
        report = nd.diff(base if len(base) > 1 else base[0], cand if len(cand) > 1 else cand[0], packs)
    assert int(report.exit_code) == code
    assert render(report, Format.json) == out


def test_the_tpot_verdict_of_the_api_is_the_commands_on_the_real_pair() -> None:
    # The step range of the pack reaches the reads: check(compare(load(a), load(b))) judges
    # whole traces, and used to give another verdict than the command.
    a, b = real_trace("h100/llm_bs1"), real_trace("h100/llm_bs16")
    code, _, _ = run_cli("diff", a, b, "--rules", "tpot", "--quiet")
    assert nd.diff(a, b, "tpot").exit_code == code


def test_one_pack_name_is_one_pack() -> None:
    d = nd.compare(nd.load(EXAMPLES / "cascade" / "bs1.sqlite"), nd.load(EXAMPLES / "cascade" / "bs16.sqlite"))
    one, listed = nd.check(d, "batch-invariance"), nd.check(d, ["batch-invariance"])
    assert one.exit_code == listed.exit_code == ExitCode.REGRESSION
    assert one.findings == listed.findings and one.packs == listed.packs


def test_warnings_reach_the_caller() -> None:
    heard: list[str] = []
    empty = EXAMPLES / "ci" / "empty-rules.yaml"
    report = nd.diff(EXAMPLES / "ci" / "main.json", EXAMPLES / "ci" / "pr.json", empty, warn=heard.append)
    assert report.exit_code == ExitCode.INCONCLUSIVE
    assert len(heard) == 1 and "no rule to judge with" in heard[0]
    with pytest.warns(UserWarning, match="no rule to judge with"):
        nd.diff(EXAMPLES / "ci" / "main.json", EXAMPLES / "ci" / "pr.json", empty)


def test_loaded_sides_are_diffed_as_given() -> None:
    a, b = nd.load(EXAMPLES / "cascade" / "bs1.sqlite"), nd.load(EXAMPLES / "cascade" / "bs16.sqlite")
    from_paths = nd.diff(EXAMPLES / "cascade" / "bs1.sqlite", EXAMPLES / "cascade" / "bs16.sqlite")
    assert render(nd.diff(a, b), Format.json) == render(from_paths, Format.json)


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: nd.compare("a.sqlite", "b.sqlite"), "base: pass a Fingerprint (nsysdiff.api.load)"),
        (lambda: nd.check("a diff", ["default"]), "diff: pass a Diff (nsysdiff.api.compare)"),
        (lambda: nd.diff(42, "b.sqlite"), "base: pass a path, a list of run paths"),
        (lambda: nd.diff("a.sqlite", "b.sqlite", 7), "rules: pass a pack name"),
        (
            lambda: nd.diff("a.sqlite", "b.sqlite", options={"strict": True}),
            "options: pass an nsysdiff.api.DiffOptions",
        ),
    ],
)
def test_wrong_argument_types_say_what_to_pass(call: object, says: str) -> None:
    with pytest.raises(TypeError, match=says.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        call()  # type: ignore[operator]


def test_all_lists_the_public_api_and_nothing_else() -> None:
    assert {"diff", "DiffOptions", "load", "load_runs", "compare", "check", "judge"} <= set(nd.__all__)
    assert all(hasattr(nd, name) for name in nd.__all__)
    assert not {"Callable", "ThreadPoolExecutor", "dataclasses", "annotations"} & set(dir(nd))


def test_a_pair_without_the_step_range_is_read_once_per_side(tmp_path: Path) -> None:
    """The tpot pack's range on neither side: each trace is read per steps found without
    a marker while it is open, not whole first and then again per those steps."""
    from stepspec import eager

    base, _ = eager(tmp_path / "base.sqlite", 12, marker=False)
    cand, _ = eager(tmp_path / "cand.sqlite", 12, marker=False)
    heard: list[tuple[str, str]] = []
    report = nd.diff(base, cand, "tpot", progress=lambda side, what: heard.append((side, what)))
    assert report.diff.base.scope.per == report.diff.candidate.scope.per == "auto"
    for side in ("base", "candidate"):
        reads = [what for s, what in heard if s == side]
        assert reads.count("scoping (steps found without a marker)") == 1, reads
        assert "kernels" not in reads, reads  # no whole read before it


def test_a_side_with_auto_steps_is_not_read_again_when_the_other_has_the_range(tmp_path: Path) -> None:
    """The range on the base only: both are judged per steps found without a marker; the
    candidate found them while it was open, so only the base is read again."""
    from stepspec import eager

    base, _ = eager(tmp_path / "base.sqlite", 12)
    cand, _ = eager(tmp_path / "cand.sqlite", 12, marker=False)
    heard: list[tuple[str, str]] = []
    report = nd.diff(base, cand, "tpot", progress=lambda side, what: heard.append((side, what)))
    assert report.diff.base.scope.per == report.diff.candidate.scope.per == "auto"
    assert [w for s, w in heard if s == "candidate" and w.startswith("scoping")] == [
        "scoping (steps found without a marker)"
    ]
    assert [w for s, w in heard if s == "base" and w.startswith("scoping")] == [
        "scoping (kernels, NVTX ranges, launches)"
    ] * 2
