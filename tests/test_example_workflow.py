"""The example workflow (examples/github/nsys-regression.yml) run end to end on this
machine: the default branch's job saves the baseline, a pull request's job saves the
candidate, and the CPU job diffs them through the action's own script, exactly as the
file says, with real H100 captures standing in for `nsys profile`.

GitHub's side is played by a few lines each: an artifact is a folder, a download copies
it, `uses: nsysdiff/nsysdiff@...` runs action.yml's steps with the `with:` inputs. Only
the install step (a pip install from git, which needs the network) and the profiler are
not run: the installed nsysdiff and a shared trace take their places. Also checked here:
the version policy the example relies on (CHANGELOG.md, pyproject, fingerprint format).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import real_trace, run_cli

import nsysdiff
from nsysdiff.fingerprint import FORMAT_VERSION, noise, runset

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "github" / "nsys-regression.yml"
ACTION = ROOT / "action.yml"
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]  # GitHub's `shell: bash`


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _version() -> str:
    m = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), flags=re.M)
    assert m is not None
    return m[1]


# --- the version a pinned workflow relies on ------------------------------------------


def test_version_follows_the_fingerprint_format() -> None:
    version = _version()
    assert nsysdiff.__version__ == version
    # The major is the fingerprint format's; run sets and noise profiles carry their own.
    assert int(version.split(".")[0]) == FORMAT_VERSION
    assert runset.RUN_SET_VERSION == noise.PROFILE_VERSION == 1


def test_changelog_names_the_current_release() -> None:
    """A release commit's version heads the CHANGELOG; between releases the version says
    so (``2.2.0.dev0``) and the CHANGELOG starts with what is not released yet."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    releases = [h for h in headings if re.fullmatch(r"\d+\.\d+\.\d+", h)]
    version = _version()
    dev = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)\.dev\d+", version)
    if dev is None:
        assert re.fullmatch(r"\d+\.\d+\.\d+", version) and headings[0] == releases[0] == version
        return
    assert headings[0] == "Unreleased" and releases, headings
    assert tuple(map(int, releases[0].split("."))) < tuple(map(int, dev.groups())), (releases[0], version)


# Every file that pins nsysdiff for a user to copy, and how a pin reads in them.
PINNING = ["README.md", "action.yml", *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
PINNING += sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "examples" / "github").iterdir())
_PIN = re.compile(r"(?:nsysdiff/nsysdiff@|NSYSDIFF_REF:\s*)([^\s\"'`)]+)\"?(?:\s+# v(\d+\.\d+\.\d+))?")


def _pins() -> list[tuple[str, str, str | None]]:
    return [(name, m[1], m[2]) for name in PINNING for m in _PIN.finditer((ROOT / name).read_text(encoding="utf-8"))]


def test_every_pin_is_a_full_commit_sha_with_its_release() -> None:
    """A tag made in one clone is not in CI's fresh clone; a commit SHA is in every one."""
    pins = _pins()
    assert {name for name, _, _ in pins} >= {"README.md", "examples/github/nsys-regression.yml"}, pins
    for name, ref, _ in pins:
        assert re.fullmatch(r"[0-9a-f]{40}", ref), (name, ref)
    assert len({ref for _, ref, _ in pins}) == 1, pins
    assert any(release for _, _, release in pins), "a pin names the release it is"


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_every_pinned_commit_resolves_to_its_release() -> None:
    """Each pinned SHA is a commit of this repository's history whose pyproject.toml carries
    the version its comment names: what a copied workflow installs from a clean clone."""
    if shutil.which("git") is None or _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    if _git("rev-parse", "--is-shallow-repository").stdout.strip() != "false":
        pytest.skip("a shallow clone holds no older commit")
    for name, ref, release in _pins():
        assert _git("cat-file", "-e", f"{ref}^{{commit}}").returncode == 0, f"{name}: {ref} is no commit here"
        assert _git("merge-base", "--is-ancestor", ref, "HEAD").returncode == 0, (
            f"{name}: {ref} is not in HEAD's history"
        )
        carried = re.search(r'^version = "([^"]+)"$', _git("show", f"{ref}:pyproject.toml").stdout, flags=re.M)
        assert carried is not None and re.fullmatch(r"\d+\.\d+\.\d+", carried[1]), (name, ref, carried)
        assert release in (None, carried[1]), f"{name}: {ref} carries {carried[1]}, its comment says v{release}"


def test_version_option_names_the_format() -> None:
    code, out, _ = run_cli("--version")
    assert code == 0
    assert out.strip() == f"nsysdiff {_version()} (fingerprint format {FORMAT_VERSION})"


# --- what the example says --------------------------------------------------------------


def _steps(job: str) -> list[dict[str, Any]]:
    return list(_load(EXAMPLE)["jobs"][job]["steps"])


def test_the_example_pins_one_release_for_both_jobs() -> None:
    env = _load(EXAMPLE)["env"]
    assert re.fullmatch(r"[0-9a-f]{40}", env["NSYSDIFF_REF"]), env["NSYSDIFF_REF"]  # a release commit
    uses = [s["uses"] for s in _steps("diff") if str(s.get("uses", "")).startswith("nsysdiff/")]
    assert uses == [f"nsysdiff/nsysdiff@{env['NSYSDIFF_REF']}"]
    text = EXAMPLE.read_text(encoding="utf-8")
    assert "pip install nsysdiff" not in text  # not on any index
    assert 'pip install "git+$NSYSDIFF_GIT@$NSYSDIFF_REF"' in text


def test_the_example_judges_time_per_decode_step() -> None:
    env = _load(EXAMPLE)["env"]
    assert "--per decode_step" in env["NSYSDIFF_SCOPE"]
    diff = next(s for s in _steps("diff") if str(s.get("uses", "")).startswith("nsysdiff/"))
    # batch-invariance compares batch sizes (bs1 against bsN), not main against a PR.
    assert diff["with"]["rules"].split() == ["tpot"]


# --- the jobs, simulated ------------------------------------------------------------------


@dataclass
class Runner:
    """One workflow run's job on this machine: a workspace, the artifacts of the run (and
    of earlier runs, for the baseline), the event and the trace the profiler would write."""

    tmp: Path
    event: str
    trace: Path | None = None
    artifacts: Path = field(init=False)
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    status: int | None = None

    def __post_init__(self) -> None:
        self.artifacts = self.tmp / "artifacts"
        self.artifacts.mkdir(exist_ok=True)

    def env(self, step: dict[str, Any], work: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "CI")}
        env.update({k: str(v) for k, v in (_load(EXAMPLE).get("env") or {}).items()})
        env.update({k: str(v) for k, v in (step.get("env") or {}).items()})
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env.update(
            GITHUB_ACTIONS="true",
            RUNNER_TEMP=str(work / "_temp"),
            GITHUB_OUTPUT=str(work / "_output"),
            GITHUB_STEP_SUMMARY=str(work / "_summary"),
        )
        return env

    def condition(self, text: str | None) -> bool:
        """The few expressions the example's `if:` keys use, evaluated by substitution."""
        if text is None:
            return True
        same_repo = "github.event.pull_request.head.repo.full_name == github.repository"
        expr = " ".join(str(text).split()).replace(same_repo, "True").replace("always()", "True")
        expr = expr.replace("github.event_name", repr(self.event)).replace("&&", "and").replace("||", "or")
        expr = re.sub(
            r"steps\.(\w+)\.outputs\.([\w-]+)", lambda m: repr(self.outputs.get(m[1], {}).get(m[2], "")), expr
        )
        assert re.fullmatch(r"[\w\s'=!().,/-]*", expr), expr  # nothing but what is substituted above
        return bool(eval(expr, {"__builtins__": {}}))

    def run_job(self, name: str) -> None:
        work = self.tmp / name
        (work / "_temp").mkdir(parents=True, exist_ok=True)
        job = _load(EXAMPLE)["jobs"][name]
        assert self.condition(job.get("if")), f"{name} does not run on {self.event}"
        for step in job["steps"]:
            if self.condition(step.get("if")):
                self.step(step, work)

    def step(self, step: dict[str, Any], work: Path) -> None:
        uses, run, given = str(step.get("uses", "")), step.get("run"), step.get("with") or {}
        if uses.startswith("actions/checkout@"):
            return
        if uses.startswith("actions/upload-artifact@"):
            dest = self.artifacts / given["name"]
            dest.mkdir(parents=True, exist_ok=True)
            for line in str(given["path"]).split("\n"):
                line = self.expand(line.strip())
                if line:
                    src = (work / line) if not Path(line).is_absolute() else Path(line)
                    shutil.copy(src, dest / src.name)
            return
        if uses.startswith(("actions/download-artifact@", "dawidd6/action-download-artifact@")):
            shutil.copytree(self.artifacts / given["name"], work / given["path"], dirs_exist_ok=True)
            return
        if uses.startswith("nsysdiff/nsysdiff@"):
            self.action(step, work)
            return
        assert run is not None, step
        if "pip install" in run:
            assert "git+" in run  # needs the network: the nsysdiff of this checkout stands in
            return
        if run.startswith("nsys profile"):
            assert "-o run --export=sqlite" in run and self.trace is not None
            shutil.copy(self.trace, work / "run.sqlite")
            return
        p = subprocess.run(
            [*BASH, "-c", run],
            cwd=work,
            env=self.env(step, work),
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        assert p.returncode == 0, f"{step.get('name')}: {p.stdout}{p.stderr}"

    def expand(self, text: str) -> str:
        return re.sub(
            r"\$\{\{\s*steps\.(\w+)\.outputs\.([\w-]+)\s*\}\}", lambda m: self.outputs.get(m[1], {}).get(m[2], ""), text
        )

    def action(self, step: dict[str, Any], work: Path) -> None:
        """action.yml's own steps after its install: its inputs with their defaults, the
        `with:` values of the example, and the installed nsysdiff."""
        action = _load(ACTION)
        inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
        inputs.update({k: str(v) for k, v in step["with"].items()})
        outputs: dict[str, str] = {}
        for s in action["runs"]["steps"]:
            if s.get("id") in ("python", "install"):
                continue
            if str(s.get("uses", "")).startswith("actions/upload-artifact@"):
                # The HTML report, kept as its own artifact when the diff step wrote one.
                html = outputs.get("report-html", "")
                if html:
                    name = re.sub(r"\$\{\{.*?\}\}", "", str(s["with"]["name"]))
                    (self.artifacts / name).mkdir(parents=True, exist_ok=True)
                    shutil.copy(work / html if not Path(html).is_absolute() else html, self.artifacts / name)
                continue
            if s.get("if", "").startswith("inputs.comment == 'true'") and inputs.get("comment") != "true":
                continue
            env = self.env(s, work)
            (work / "_output").write_text("", encoding="utf-8")
            for key, value in (s.get("env") or {}).items():
                m = re.fullmatch(r"\$\{\{\s*(inputs|steps\.diff\.outputs)\.([\w-]+)\s*\}\}", str(value))
                if m:
                    env[key] = inputs[m[2]] if m[1] == "inputs" else outputs.get(m[2], "")
            env["NSYSDIFF_BIN"] = str(Path(sys.executable).parent)
            p = subprocess.run(
                [*BASH, "-c", s["run"]], cwd=work, env=env, capture_output=True, text=True, check=False, timeout=600
            )
            for line in (work / "_output").read_text(encoding="utf-8").splitlines():
                key, _, value = line.partition("=")
                outputs[key] = value
            if s.get("id") != "diff":
                self.status = p.returncode
        self.outputs[str(step["id"])] = outputs


def _baseline(tmp: Path, trace: str = "h100/llm_bs16") -> Runner:
    main = Runner(tmp, "push", real_trace(trace))
    main.run_job("profile")
    return main


def test_the_default_branch_saves_a_per_step_baseline(tmp_path: Path) -> None:
    main = _baseline(tmp_path)
    saved = main.artifacts / "nsys-baseline" / "fingerprint.json"
    text = saved.read_text(encoding="utf-8")
    assert '"per": "decode_step"' in text and '"steps": 32' in text
    assert not (main.artifacts / "nsys-candidate").exists()
    assert not main.condition(_load(EXAMPLE)["jobs"]["diff"]["if"])  # no diff on a push


# The regressions a pull request brings, planted in copies of the baseline's capture:
# an `.item()` per decode step (one more D2H copy and sync each step, kernels untouched),
# the lm_head GEMM forced to fp32 (+90 us of GPU time per step, host time unchanged), and
# a slower RMSNorm (one more elementwise kernel and 2 MB D2D copy after each norm).
PLANTS = ("item", "fp32_head", "slow_norm")


def _planted(tmp: Path, plant: str) -> Path:
    import planted_steps

    make = getattr(planted_steps, plant)
    return Path(make(real_trace("h100/llm_bs16"), tmp / f"pr_{plant}.sqlite"))


def _pull_request(tmp: Path, trace: Path) -> tuple[Runner, dict[str, str]]:
    pr = Runner(tmp, "pull_request", trace)
    pr.run_job("profile")
    assert (pr.artifacts / "nsys-candidate" / "fingerprint.json").is_file()
    pr.run_job("diff")
    return pr, pr.outputs["nsysdiff"]


# Repeats of one build both ways (the host time per step moved 1.23x between them), and
# torch.compile (an intended change, 0.51x per step): the check stays green, as copied.
@pytest.mark.parametrize(
    ("base", "candidate"),
    [
        ("h100/llm_bs16", "h100/llm_bs16_r2"),
        ("h100/llm_bs16_r2", "h100/llm_bs16"),
        ("h100/llm_bs16", "h100/llm_bs16_compile"),
    ],
)
def test_a_pull_request_without_a_regression_passes(tmp_path: Path, base: str, candidate: str) -> None:
    _baseline(tmp_path, base)
    pr, out = _pull_request(tmp_path, real_trace(candidate))
    assert (out["exit-code"], out["verdict"]) == ("0", "pass")
    assert pr.status == 0
    kept = pr.artifacts / "nsysdiff-report"
    assert sorted(p.name for p in kept.iterdir()) == ["nsysdiff-report.json", "nsysdiff-report.md"]
    assert "decode_step" in (kept / "nsysdiff-report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("plant", PLANTS)
def test_a_pull_request_with_a_regression_fails(tmp_path: Path, plant: str) -> None:
    _baseline(tmp_path)
    pr, out = _pull_request(tmp_path, _planted(tmp_path, plant))
    assert (out["exit-code"], out["verdict"]) == ("1", "fail")
    assert pr.status == 1  # the step, and so the check, fails exactly on a regression


def test_the_action_lists_every_format() -> None:
    from nsysdiff.render import Format

    described = _load(ACTION)["inputs"]["format"]["description"]
    # The HTML report is a file (the `html` input), never printed to the log.
    assert all(f.value in described for f in Format if f is not Format.html), described
    assert "html" in _load(ACTION)["inputs"]
