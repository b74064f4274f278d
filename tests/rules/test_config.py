"""Rule-file validation: one exact message per problem, naming file, line, rule and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsysdiff.errors import ExitCode, FingerprintError, RuleError
from nsysdiff.rules import load_rules
from nsysdiff.rules.config import pack_names

PACKS = "batch-invariance, default, strict, tpot"

BUDGET = "version: 1\nrules:\n  - id: t\n    kind: budget\n    whole: trace\n    max_ratio: 1.1x\n"

# (file text, expected message with {file} for the path)
ERRORS = {
    "unknown key": (
        BUDGET + "    max_ratoi: 1.2x\n",
        "{file}:7: rule 't': key 'max_ratoi': unknown option for kind 'budget' (did you mean 'max_ratio'?)",
    ),
    "unknown key, no close match": (
        BUDGET + "    zzz: 1\n",
        "{file}:7: rule 't': key 'zzz': unknown option for kind 'budget' (known: id, kind, level, "
        "message, "
        "description, kernel, family, category, memcpy, memset, nvtx, sync, whole, metric, "
        "max_ratio, "
        "max_increase, max_value, max_share, max_noise_widths, min_ratio, min_time, min_step_share, each, per)",
    ),
    "unknown top-level key": (
        "version: 1\nrulez: []\n",
        "{file}:2: key 'rulez': unknown top-level key (did you mean 'rules'?)",
    ),
    "unknown kind": (
        "version: 1\nrules:\n  - id: t\n    kind: budgte\n",
        "{file}:4: rule 't': key 'kind': unknown kind 'budgte' (kinds: budget, collective-wait, "
        "danger-zone, invariance, outlier, step, structure, tail)",
    ),
    "duplicate id": (
        "version: 1\nrules:\n  - id: t\n    kind: outlier\n  - id: t\n    kind: outlier\n",
        "{file}:5: rule 't': key 'id': duplicate id (first defined on line 3)",
    ),
    "duplicate key": (
        "version: 1\nrules:\n  - id: t\n    kind: outlier\n    kind: budget\n",
        "{file}:5: rule #1: key 'kind': duplicate key (first on line 4)",
    ),
    "bad regex": (
        "version: 1\nrules:\n  - id: t\n    kind: budget\n    kernel: 'gemm('\n    max_ratio: 1.1x\n",
        "{file}:5: rule 't': key 'kernel': bad regex 'gemm(': missing ): gemm(",
    ),
    "bad regex in a list": (
        "version: 1\nrules:\n  - id: t\n    kind: danger-zone\n    patterns: [ok, '[a-']\n",
        "{file}:5: rule 't': key 'patterns': bad regex '[a-': missing ]: [a-",
    ),
    "bad time unit": (
        BUDGET + "    min_time: 5 mins\n",
        "{file}:7: rule 't': key 'min_time': '5 mins' is not a time (a number with ns, us, ms or s, e.g. '1.5ms')",
    ),
    "bad ratio": (
        "version: 1\nrules:\n  - id: t\n    kind: budget\n    whole: trace\n    max_ratio: 10%\n",
        "{file}:6: rule 't': key 'max_ratio': '10%' is not a ratio (a positive number with x, e.g. '1.10x')",
    ),
    "bare percentage": (
        "version: 1\nrules:\n  - id: t\n    kind: outlier\n    min_share: 0.1\n",
        "{file}:5: rule 't': key 'min_share': 0.1 is not a percentage (a number with %, e.g. '5%')",
    ),
    "size unit for the metric": (
        "version: 1\nrules:\n  - id: t\n    kind: budget\n    memcpy: HtoD\n    metric: bytes\n    max_increase: 5ms\n",
        "{file}:7: rule 't': key 'max_increase': '5ms' is not a size (a number with B, KB, MB or "
        "GB, e.g. '64MB') "
        "(the unit of metric 'bytes')",
    ),
    "wrong type": (
        BUDGET + "    each: yes please\n",
        "{file}:7: rule 't': key 'each': expected true or false, got a string ('yes please')",
    ),
    "wrong type for a list option": (
        "version: 1\nrules:\n  - id: t\n    kind: structure\n    check: {a: 1}\n",
        "{file}:5: rule 't': key 'check': expected one of kernel-set, launch-counts, "
        "variant-drift, "
        "launch-config, memcpy-bytes; got a mapping",
    ),
    "bad level": (
        "version: 1\nrules:\n  - id: t\n    kind: outlier\n    level: fatal\n",
        "{file}:5: rule 't': key 'level': 'fatal' is not one of error, warning, info",
    ),
    "missing required option": (
        "version: 1\nrules:\n  - id: t\n    kind: danger-zone\n    condition: appears\n",
        "{file}:3: rule 't': key 'patterns': missing required option",
    ),
    "missing id": (
        "version: 1\nrules:\n  - kind: outlier\n",
        "{file}:3: rule #1: key 'id': missing required key",
    ),
    "missing kind": (
        "version: 1\nrules:\n  - id: t\n",
        "{file}:3: rule 't': key 'kind': missing required key",
    ),
    "budget without selector": (
        "version: 1\nrules:\n  - id: t\n    kind: budget\n    max_ratio: 1.1x\n",
        "{file}:3: rule 't': a budget needs a selector: one of kernel, family, category, memcpy, "
        "memset, "
        "nvtx, sync, whole",
    ),
    "budget with two selectors": (
        "version: 1\nrules:\n  - id: t\n    kind: budget\n    kernel: a\n    family: b\n    max_ratio: 1.1x\n",
        "{file}:6: rule 't': key 'family': a budget has one selector; this one also has 'kernel'",
    ),
    "budget without limit": (
        "version: 1\nrules:\n  - id: t\n    kind: budget\n    whole: trace\n",
        "{file}:3: rule 't': a budget needs a limit: one of max_ratio, max_increase, max_value, "
        "max_share, max_noise_widths",
    ),
    "metric the selection can't measure": (
        "version: 1\nrules:\n  - id: t\n    kind: budget\n    sync: Sync\n    metric: p50\n    max_ratio: 2x\n",
        "{file}:6: rule 't': key 'metric': 'p50' can't be measured on a sync selection (use total_time, calls, mean)",
    ),
    "unknown category": (
        "version: 1\nrules:\n  - id: t\n    kind: budget\n    category: attn\n    max_ratio: 2x\n",
        "{file}:5: rule 't': key 'category': 'attn' matches no category (categories: torch.compile, "
        "nccl, attention, fft, convolution, gemm.nvjet, gemm.cutlass, gemm.cublas, gemm.other, "
        "normalization, sampling, reduction, memory, elementwise, other)",
    ),
    "YAML syntax error": (
        "version: 1\nrules:\n  - id: t\n    kind: [budget\n",
        "{file}:5: YAML syntax error: expected ',' or ']', but got '<stream end>'",
    ),
    "YAML syntax error, bad indentation": (
        "version: 1\nrules:\n  - id: t\n   kind: budget\n",
        "{file}:4: YAML syntax error: expected <block end>, but found '<block mapping start>'",
    ),
    "empty file": ("", "{file}:1: the file is empty (a rule file is a mapping with 'version: 1')"),
    "not a mapping": (
        "- id: t\n  kind: budget\n",
        "{file}:1: the document must be a mapping (version, rules, ...), not a list",
    ),
    "rule not a mapping": (
        "version: 1\nrules:\n  - just a string\n",
        "{file}:3: rule #1: a rule must be a mapping (id, kind, ...), not a string ('just a string')",
    ),
    "unsupported version": (
        "version: 2\nrules: []\n",
        "{file}:1: key 'version': unsupported version 2 (this nsysdiff reads version 1)",
    ),
    "missing version": (
        "rules: []\n",
        "{file}:1: key 'version': missing required key (add 'version: 1')",
    ),
    "extends unknown pack": (
        "version: 1\nextends: nopack\n",
        "{file}:2: key 'extends': 'nopack' names no shipped pack (" + PACKS + ") and no file",
    ),
    "extends missing file": (
        "version: 1\nextends: [default, ./missing.yaml]\n",
        "{file}:2: key 'extends': './missing.yaml' names no shipped pack (" + PACKS + ") and no file",
    ),
    "waiver without reason": (
        BUDGET + "waivers:\n  - rule: t\n    subject: whole trace\n    expires: 2025-01-01\n",
        "{file}:8: waiver #1: key 'reason': missing required key",
    ),
    "waiver bad date": (
        BUDGET + "waivers:\n  - rule: t\n    subject: x\n    reason: r\n    expires: next week\n",
        "{file}:11: waiver #1: key 'expires': expected a date YYYY-MM-DD, got a string ('next week')",
    ),
    "waiver without subject": (
        BUDGET + "waivers:\n  - rule: t\n    reason: r\n    expires: 2025-01-01\n",
        "{file}:8: waiver #1: key 'subject': give exactly one of 'subject' (exact) or 'subject_regex'",
    ),
    "waiver for an unknown rule": (
        BUDGET + "waivers:\n  - rule: nope\n    subject: x\n    reason: r\n    expires: 2025-01-01\n",
        "{file}:8: waiver for rule 'nope': key 'rule': no rule with this id is loaded",
    ),
    "phase with a bad regex": (
        "version: 1\nphases:\n  decode: ['step(']\n",
        "{file}:3: phases: key 'decode': bad regex 'step(': missing ): step(",
    ),
    "phase not a list": (
        "version: 1\nphases:\n  decode: 3\n",
        "{file}:3: phases: key 'decode': expected a non-empty list of NVTX regexes, got a number (3)",
    ),
    "noise widths under one": (
        BUDGET + "    max_noise_widths: 0.5\n",
        "{file}:7: rule 't': key 'max_noise_widths': 0.5 is under 1: a limit inside one noise width "
        "can't be told from the noise",
    ),
    "noise widths not a number": (
        BUDGET + "    max_noise_widths: 3w\n",
        "{file}:7: rule 't': key 'max_noise_widths': expected a number, got a string ('3w')",
    ),
    "min_ratio without noise widths": (
        BUDGET + "    min_ratio: 1.02x\n",
        "{file}:7: rule 't': key 'min_ratio': goes with max_noise_widths (it gates a noise-relative "
        "limit); for a plain ratio limit use max_ratio",
    ),
    "noise profile outside the directory": (
        "version: 1\nnoise_profile: ../noise.json\n",
        "{file}:2: key 'noise_profile': '../noise.json' is outside the including file's directory: a "
        "noise profile must lie under the rule file's directory",
    ),
    "noise profile absolute": (
        "version: 1\nnoise_profile: /etc/passwd\n",
        "{file}:2: key 'noise_profile': '/etc/passwd' is an absolute path: a noise profile must lie "
        "under the rule file's directory",
    ),
    "noise profile missing": (
        "version: 1\nnoise_profile: noise.json\n",
        "{file}:2: key 'noise_profile': 'noise.json': no such file (make one with `nsysdiff noise RUN... -o FILE`)",
    ),
    "noise profile not a string": (
        "version: 1\nnoise_profile: [a, b]\n",
        "{file}:2: key 'noise_profile': expected a string, got a list",
    ),
    "steps not a mapping": (
        "version: 1\nsteps: decode_step\n",
        "{file}:2: key 'steps': expected a mapping with the key 'range', got a string ('decode_step')",
    ),
    "steps unknown key": ("version: 1\nsteps: {name: x}\n", "{file}:2: steps: key 'name': unknown key (known: range)"),
    "steps without range": (
        "version: 1\nsteps: {}\n",
        "{file}:2: steps: key 'range': missing required key (the NVTX range whose instances are steps)",
    ),
    "steps empty range": (
        "version: 1\nsteps: {range: []}\n",
        "{file}:2: steps: key 'range': expected a range name or a non-empty list of them, got a list",
    ),
    "level typo": (
        "version: 1\nrules:\n  - id: r\n    kind: budget\n    level: eror\n    kernel: gemm\n    metric: total_time\n"
        "    max_ratio: 1.1x\n",
        "{file}:5: rule 'r': key 'level': 'eror' is not one of error, warning, info; did you mean 'error'?",
    ),
    "waiver rule typo": (
        "version: 1\nextends: tpot\nwaivers:\n  - rule: step-gpu-tme\n    subject: x\n    reason: y\n"
        "    expires: 2030-01-01\n",
        "{file}:4: waiver for rule 'step-gpu-tme': key 'rule': no rule with this id is loaded; "
        "did you mean 'step-gpu-time'?",
    ),
    "steps bad regex": (
        "version: 1\nsteps: {range: '(?<=x)y'}\n",
        "{file}:2: steps: key 'range': bad regex '(?<=x)y': invalid perl operator: (?<= "
        "(patterns are RE2: no lookaround, no backreferences)",
    ),
}


@pytest.mark.parametrize("text, expected", ERRORS.values(), ids=list(ERRORS))
def test_validation_message(text: str, expected: str, tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RuleError) as e:
        load_rules([str(path)])
    assert str(e.value) == expected.format(file=path)
    assert e.value.exit_code is ExitCode.BAD_INPUT
    assert "\n" not in str(e.value)


def test_extends_cycle(tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("version: 1\nextends: b.yaml\n", encoding="utf-8")
    b.write_text("version: 1\nrules: []\nextends: [default, a.yaml]\n", encoding="utf-8")
    with pytest.raises(RuleError) as e:
        load_rules([str(a)])
    assert str(e.value) == f"{b}:3: key 'extends': extends cycle: {a} -> {b} -> {a}"


def test_self_extends_is_a_cycle(tmp_path: Path) -> None:
    a = tmp_path / "a.yaml"
    a.write_text("version: 1\nextends: ./a.yaml\n", encoding="utf-8")
    with pytest.raises(RuleError) as e:
        load_rules([str(a)])
    assert str(e.value) == f"{a}:2: key 'extends': extends cycle: {a} -> {a}"


def test_unknown_spec() -> None:
    with pytest.raises(RuleError) as e:
        load_rules(["no-such-pack"])
    assert str(e.value) == f"no-such-pack: no such rule file, and not a shipped pack ({PACKS})"
    with pytest.raises(RuleError) as e:
        load_rules(["stict"])
    assert str(e.value) == f"stict: no such rule file, and not a shipped pack; did you mean 'strict'? ({PACKS})"


@pytest.mark.parametrize(
    "payload",
    [
        "rules: !!python/object/apply:os.system ['echo pwned']\n",
        "rules:\n  - id: !!python/name:os.system ''\n",
        "rules: !!python/object:collections.OrderedDict {}\n",
        "rules: !custom 3\n",
    ],
)
def test_safe_loader_rejects_python_tags(payload: str, tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text("version: 1\n" + payload, encoding="utf-8")
    with pytest.raises(RuleError, match=r"^.*evil\.yaml:\d+: tag '.*' is not allowed: rule files are plain YAML$"):
        load_rules([str(path)])


def test_extends_composes_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "team.yaml"
    path.write_text(
        "version: 1\nextends: default\n"
        "phases:\n  decode: ['^decode', 'step']\n"
        "rules:\n  - id: total-time\n    kind: budget\n    level: warning\n    whole: trace\n    "
        "max_ratio: 1.5x\n"
        "  - id: mine\n    kind: outlier\n",
        encoding="utf-8",
    )
    rs = load_rules([str(path), "default"])  # default again: already loaded, no re-override
    assert rs.sources == (str(path), "default")
    ids = ["total-time", "category-time", "outlier", "improvement", "collective-wait", "tail", "mine"]
    assert [r.id for r in rs.rules] == ids
    total = rs.rule("total-time")
    assert total is not None and total.source == str(path) and total.level.value == "warning"
    assert dict(rs.phases) == {"decode": ("^decode", "step")}
    assert rs.files == ("rules/default.yaml", str(path))


def test_relative_extends_resolve_against_the_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "base.yaml").write_text("version: 1\nrules:\n  - id: b\n    kind: outlier\n", encoding="utf-8")
    (tmp_path / "top.yaml").write_text("version: 1\nextends: sub/base.yaml\n", encoding="utf-8")
    assert [r.id for r in load_rules([str(tmp_path / "top.yaml")]).rules] == ["b"]


def test_ruleset_is_frozen() -> None:
    rs = load_rules(["default"])
    with pytest.raises(AttributeError):
        rs.rules = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        rs.phases["x"] = ("y",)  # type: ignore[index]


@pytest.mark.parametrize("pack", ["default", "tpot", "batch-invariance", "strict"])
def test_shipped_packs_load(pack: str) -> None:
    assert pack in pack_names()
    rs = load_rules([pack])
    assert rs.rules
    assert all(r.description for r in rs.rules), "every shipped rule is documented"


def test_a_noise_profile_that_is_no_profile(tmp_path: Path) -> None:
    """The profile a rule file names is validated with it, before any trace is read."""
    (tmp_path / "noise.json").write_text('{"format": "nsysdiff-fingerprint"}', encoding="utf-8")
    path = tmp_path / "rules.yaml"
    path.write_text("version: 1\nnoise_profile: noise.json\n", encoding="utf-8")
    with pytest.raises(FingerprintError) as e:
        load_rules([str(path)])
    assert str(e.value).startswith(f"{tmp_path / 'noise.json'}: not an nsysdiff noise profile")
    assert e.value.exit_code is ExitCode.BAD_INPUT


def test_a_shipped_pack_names_no_noise_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pack has no directory of its own to read a profile from."""
    from nsysdiff.rules import config

    (tmp_path / "noisy.yaml").write_text("version: 1\nnoise_profile: noise.json\n", encoding="utf-8")
    monkeypatch.setattr(config, "packs_root", lambda: tmp_path)
    with pytest.raises(RuleError) as e:
        load_rules(["noisy"])
    assert str(e.value) == "rules/noisy.yaml:2: key 'noise_profile': a shipped pack can't name a noise profile"


def test_steps_names_the_step_range(tmp_path: Path) -> None:
    assert load_rules(["tpot"]).steps == ("decode_step",)
    assert load_rules(["default"]).steps == ()
    path = tmp_path / "team.yaml"
    path.write_text("version: 1\nextends: tpot\nsteps:\n  range: [step@serving, decode_step]\n", encoding="utf-8")
    assert load_rules([str(path)]).steps == ("step@serving", "decode_step")
