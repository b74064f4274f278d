"""The words every text-like report shares: the verdict line, counts and plurals, the scale,
the attribution and the phrases that name a change (text, Markdown, GitHub and JUnit).

Plain text with no markup: each renderer escapes what it writes in its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from nsysdiff import units as u
from nsysdiff.compare import comparability, notices
from nsysdiff.compare.attribution import Contributor, Effects
from nsysdiff.compare.diff import CopyDelta, Diff, Row, VariantDrift
from nsysdiff.compare.scale import MAX_SPREAD, MIN_COMMON
from nsysdiff.compare.steps import ONE_SIDED
from nsysdiff.render import runs
from nsysdiff.render import steps as step_lines
from nsysdiff.rules.comparison import Kind
from nsysdiff.rules.report import NO_RULES, Finding, Level, Outcome, Report, undecided_reason

_STATUS = {
    Outcome.PASS: "PASS",
    Outcome.FAIL: "FAIL",
    Outcome.INCONCLUSIVE: "INCONCLUSIVE",
    Outcome.UNJUDGED: "NOT JUDGED",  # a plain word: "unjudged" stays in the JSON
}


def status_word(report: Report) -> str:
    """``PASS``, ``FAIL``, ``INCONCLUSIVE`` or ``NOT JUDGED``."""
    return _STATUS[report.outcome]


def count(x: float) -> str:
    """A count: ``1,234``, or a per-step average such as ``12.50``."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,.2f}"


def plural_calls(x: float) -> str:
    """``1 call``, ``14 calls``, ``12.50 calls`` (per step)."""
    return f"{count(x)} {'call' if x == 1 else 'calls'}"


def failed_rules(report: Report) -> tuple[str, ...]:
    """Rule ids with at least one finding that decides a FAIL, in report order."""
    return tuple(dict.fromkeys(f.rule_id for f in report.failed))


def finding_counts(report: Report) -> str:
    """``2 errors, 1 warning, 1 waived`` (active findings by level, then waived)."""
    return finding_counts_of(report.findings) if report.findings else "no findings"


def finding_counts_of(findings: Sequence[Finding]) -> str:
    """The same count for any list of findings."""
    parts = []
    for level, word in ((Level.ERROR, "error"), (Level.WARNING, "warning")):
        n = sum(1 for f in findings if f.level is level and not f.waived)
        if n:
            parts.append(u.plural(n, word))
    n_info = sum(1 for f in findings if f.level is Level.INFO and not f.waived)
    if n_info:
        parts.append(f"{n_info:,} info")
    waived = sum(1 for f in findings if f.waived)
    if waived:
        parts.append(f"{waived:,} waived")
    return ", ".join(parts) or "none"


@dataclass(frozen=True, slots=True)
class BasisWords:
    """What a diff's basis is called: what the scale is measured over (one of them), the
    time it compares, and what an outlier is."""

    unit: str
    time: str
    outliers: str


BASIS_WORDS = {
    "kernels": BasisWords("family", "kernel time", "kernels"),
    "nvtx": BasisWords("NVTX range", "NVTX range time", "NVTX ranges"),
    "graphs": BasisWords("CUDA graph", "graph time", "CUDA graphs"),
}


def basis_phrase(diff: Diff) -> str | None:
    """What was compared instead of kernels, when there is no kernel data."""
    return {
        "nvtx": "NVTX ranges (no kernel data on either side)",
        "graphs": "whole-graph launches per graph id (graph-mode captures: kernels inside graphs not visible)",
    }.get(diff.headline.basis)


def scale_parts(diff: Diff) -> tuple[str, str | None]:
    """The scale with its uncertainty, and what it is measured over (None: no family on
    both sides); "none meaningful" when too little time is in common families."""
    i = diff.headline.scale_info
    words = BASIS_WORDS[diff.headline.basis]
    one, time = words.unit, words.time
    if not i.families:
        return f"none: no {one} runs on both sides", None
    if f"{100 * i.base_share:.0f}" == f"{100 * i.candidate_share:.0f}" == "100":
        over = f"over {u.plural(i.families, one)} on both sides: all the {time}"
    else:
        over = (
            f"over {u.plural(i.families, one)} on both sides: "
            f"{100 * i.base_share:.0f}% of base, {100 * i.candidate_share:.0f}% of candidate {time}"
        )
    if not i.covered:
        return f"none meaningful (at least {MIN_COMMON:.0%} of each side needed)", over
    if i.scattered:
        return (
            f"none meaningful: {i.factor:.2f}x, but half the weight between {i.low:.2f}x and "
            f"{i.high:.2f}x (a spread over {MAX_SPREAD:g}x)"
        ), over
    return f"{i.factor:.2f}x (typical {one}), half the weight between {i.low:.2f}x and {i.high:.2f}x", over


def scale_line(diff: Diff) -> str:
    main, over = scale_parts(diff)
    return main if over is None else f"{main}, {over}"


_KIND_WORD = {"per-call": "slower calls", "count": "more calls"}


def effect_cells(r: Row) -> tuple[str, str]:
    """A row's count and per-call effects as two cells; a resized kernel's change in the
    second, after the word ``resized`` (nsysdiff.compare.attribution)."""
    if r.resized_ns:
        return "resized", u.signed_ns(r.resized_ns)
    return u.signed_ns(r.count_effect_ns), u.signed_ns(r.per_call_effect_ns)


def resized_phrase(base_calls: float, candidate_calls: float) -> str:
    """``1 call → 10,000 smaller calls``: the same work in calls of another size."""
    size = "smaller" if candidate_calls > base_calls else "larger"
    return f"{plural_calls(base_calls)} → {count(candidate_calls)} {size} calls"


def contributor_text(
    c: Contributor, name: Callable[[str], str] = u.shorten, labels: Mapping[str, str] | None = None
) -> str:
    """``new `X` +20.70 ms replaces `Y` -1.60 ms``, ```Z` +0.80 ms (slower calls)``.

    ``labels`` (key -> label, :func:`nsysdiff.render.names.labels`) tells apart kernels that
    share a short name: a fused kernel replaced by another of the same name."""
    label = labels or {}
    this = label.get(c.key, c.name)
    if c.kind == "replacement":
        old = label.get(c.replaces_key or "", c.replaces or "")
        return (
            f"new {name(this)} {u.signed_ns(c.delta_ns + (c.replaces_ns or 0))} replaces "
            f"{name(old)} {u.signed_ns(-(c.replaces_ns or 0))}"
        )
    if c.kind in ("new", "removed"):
        return f"{c.kind} {name(this)} {u.signed_ns(c.delta_ns)}"
    if c.kind == "resized" and c.calls is not None:
        return f"{name(this)} {u.signed_ns(c.delta_ns)} ({resized_phrase(*c.calls)})"
    word = _KIND_WORD[c.kind] if c.delta_ns > 0 else _KIND_WORD[c.kind].replace("slower", "faster")
    if c.kind == "count" and c.delta_ns < 0:
        word = "fewer calls"
    if c.waiting_ns * c.delta_ns > 0 and abs(c.waiting_ns) >= abs(c.delta_ns) / 2:
        # A collective that grew (or shrank) mostly by waiting for other ranks.
        word += f", {u.signed_ns(c.waiting_ns)} of it waiting for other ranks"
    return f"{name(this)} {u.signed_ns(c.delta_ns)} ({word})"


def no_outlier_line(diff: Diff) -> str:
    """What the outlier section says when it has nothing to show."""
    what = {"nvtx": "NVTX range", "graphs": "CUDA graph"}.get(diff.headline.basis, "kernel")
    if not diff.headline.scale_info.meaningful:
        return f"No outlier test: without a meaningful overall scale no {what} can be judged against the rest."
    return f"No outlier: no {what} scaled abnormally against the overall {diff.headline.scale:.2f}x."


def effects_text(e: Effects) -> str:
    """``count +1.00 ms · per-call +2.00 ms · new 0 · removed -0.50 ms``, with ``resized``
    after per-call when some kernel ran in calls of another size."""
    resized = f"resized {u.signed_ns(e.resized_ns)} · " if e.resized_ns else ""
    return (
        f"count {u.signed_ns(e.count_ns)} · per-call {u.signed_ns(e.per_call_ns)} · {resized}"
        f"new {u.signed_ns(e.new_ns)} · removed {u.signed_ns(e.removed_ns)}"
    )


def attribution_line(
    diff: Diff, name: Callable[[str], str] = u.shorten, labels: Mapping[str, str] | None = None
) -> str | None:
    """``+21.70 ms: new `X` +20.70 ms replaces `Y` -1.60 ms; ...``: the top contributors."""
    a = diff.attribution
    if not a.top:
        return None
    return f"{u.signed_ns(a.delta_ns)}: " + "; ".join(contributor_text(c, name, labels) for c in a.top)


def kernel_time_phrase(diff: Diff) -> str:
    """``kernel time 1.251 s → 1.372 s (1.10x)``, per step when the diff is per step."""
    h = diff.headline
    if h.basis == "graphs":
        b, c = diff.base_meta.graph_total_ns, diff.candidate_meta.graph_total_ns
        return f"graph time {u.ns(b)} → {u.ns(c)} ({u.ratio(c / b if b else None)})"
    if h.basis == "nvtx":
        return "NVTX ranges compared (no kernel data)"
    peers = comparability.graph_peers(diff.base, diff.candidate)
    if peers is not None:
        # Graph replays have no kernel rows: the graph-level time is what both modes measure.
        b, c = peers
        against = "graph replays against node kernels and copies"
        return f"graph-level GPU time {u.ns(b)} → {u.ns(c)} ({u.ratio(c / b)}, {against})"
    if h.per is not None:
        base, cand = u.ns(h.base_per_step_ns), u.ns(h.candidate_per_step_ns)
        return f"kernel time per {step_lines.step_word(h.per)} {base} → {cand} ({u.ratio(h.ratio)})"
    return f"kernel time {u.ns(h.base_total_ns)} → {u.ns(h.candidate_total_ns)} ({u.ratio(h.ratio)})"


def compared_ns(diff: Diff) -> tuple[float, float]:
    """The kernel times the headline ratio compares: per step when the diff is per step."""
    h = diff.headline
    if h.per is not None and h.base_per_step_ns is not None and h.candidate_per_step_ns is not None:
        return h.base_per_step_ns, h.candidate_per_step_ns
    return h.base_total_ns, h.candidate_total_ns


def api_title(diff: Diff) -> str:
    """The host API table's title. Its census counts every call of the ``--window`` (else
    of the whole capture), also where ``--nvtx`` or ``--per`` narrow the other tables to
    ranges or steps (a host call has no range to be counted through unless it launched
    something): the title says which, as the devices table's does."""
    scopes = (diff.base.scope, diff.candidate.scope)
    if not diff.per_step and not any(s.nvtx or s.per for s in scopes):
        return "Host API calls"
    windows = [s.window is not None for s in scopes]
    if all(windows):
        return "Host API calls of the whole window"
    return (
        "Host API calls of the whole capture" if not any(windows) else "Host API calls of each whole window or capture"
    )


def steps_phrase(diff: Diff) -> str | None:
    """``64 → 64 decode ranges; times, calls, copies and variants are per step``, when
    per step (the range's name said once, as what was counted)."""
    h = diff.headline
    if h.per is None:
        return None
    steps = "steps found without a marker" if h.per == "auto" else f"{h.per} ranges"
    return (
        f"{count(h.base_steps or 0)} → {count(h.candidate_steps or 0)} {steps}; "
        "times, calls, copies and variants are per step"
    )


def kernel_count_phrase(diff: Diff) -> str | None:
    """The "same count, different kernels" call-out, when it applies."""
    h = diff.headline
    if not h.same_count_different_kernels:
        return None
    only_b = h.base_kernels - h.common_kernels
    only_c = h.candidate_kernels - h.common_kernels
    return (
        f"same launch count ({h.base_launches:,}), different kernels: {only_b:,} base-only, {only_c:,} candidate-only"
    )


def _short_name(r: Row) -> str:
    return u.shorten(r.name)


def too_small(report: Report) -> bool:
    """Whether the outcome is inconclusive only because limits are within the measured
    noise (a noise profile was given), not because the sides can't be compared."""
    told = {undecided_reason(f) for f in report.undecided}
    return bool(told) and set(report.reasons) <= told


def verdict_details(report: Report, name: Callable[[Row], str] = _short_name, reasons_below: bool = False) -> list[str]:
    """What follows ``FAIL (exit 1)`` on the verdict line: what decided it, the kernel
    time and the top outlier. ``name`` formats the outlier's row (its kernel name);
    ``reasons_below``: the report lists the inconclusive reasons under the line, so the
    line only counts them (each reason is printed once)."""
    parts = []
    c = report.comparison
    if c.kind.conclusive:
        # What is being compared comes first: it says how the rest is judged.
        parts.append(c.phrase)
    if report.outcome is Outcome.UNJUDGED:
        parts.append("rules off (--no-rules)")
    elif report.outcome is Outcome.INCONCLUSIVE:
        if any(r.startswith(NO_RULES) for r in report.reasons):
            what = "nothing judged"
        elif too_small(report):
            what = "too small to tell"
        else:
            # A kind that concludes nothing names itself; a conclusive one that could not
            # judge (no overall scale, a step range on one side) says so.
            what = c.kind.label if not c.kind.conclusive else "can't judge"
        one_sided = next((r for r in report.reasons if r.startswith(ONE_SIDED)), None)
        if one_sided is not None:
            what += ": " + one_sided.split(";")[0]
        if reasons_below:
            n = len(report.reasons)
            parts.append(f"{what} ({'the reason' if n == 1 else f'{n} reasons'} below)")
        else:
            joined = "; ".join(report.reasons)
            # A reason that names its kind ("different programs (...)") says it once.
            parts.append(joined if joined.startswith(what) else f"{what}: {joined}")
    else:
        parts.append(u.plural(len(failed_rules(report)), "failed rule"))
        parts.append(finding_counts(report))
    if report.diff.steps is not None:
        per_run = report.diff.runs.steps if report.diff.runs is not None else None
        parts.append(step_lines.verdict_phrase(report.diff.steps, per_run))
    parts.append(kernel_time_phrase(report.diff))
    if report.diff.runs is not None:
        parts.append(runs.count_phrase(report.diff.runs))
    if c.kind is Kind.WINDOWS:
        # The rate is the headline: fewer calls in one window is less work, not a cause.
        return parts
    outliers = report.diff.outliers
    if outliers:
        top = outliers[0]
        faster = top.deviation is not None and top.deviation < 1
        parts.append(f"top {'improvement' if faster else 'outlier'} {name(top)} {u.ratio(top.ratio)}")
    elif report.diff.outlier_families:
        fam = report.diff.outlier_families[0]
        parts.append(f"outlier family {u.shorten(fam.name)} {u.ratio(fam.ratio)}")
    else:
        tail = notices.tail_changes(report.diff)
        top_change = top_change_phrase(report.diff)
        if tail:
            # A tail hides in a total within the noise: name it before any top change.
            t = tail[0]
            parts.append(
                f"tail change {u.shorten(t.name)} {u.signed_ns(t.extra_ns)} "
                f"({t.beyond:,} of {t.calls:,} calls over {t.multiple:g}x the median, median held)"
            )
        elif top_change is not None and comparability.graph_peers(report.diff.base, report.diff.candidate) is None:
            # Against graph replays every node kernel is "new": no top change to name.
            parts.append(top_change)
    return parts


def top_change_phrase(diff: Diff) -> str | None:
    """``top change new X +20.68 ms replaces Y -1.60 ms (97% of +19.69 ms)``: what the
    verdict line names when no key stands out against the scale. None when the kernel time
    stayed within the noise, or the largest contributor went against the change (it is no
    cause of it)."""
    a = diff.attribution
    if not a.top or not a.delta_ns or a.top[0].delta_ns * a.delta_ns <= 0:
        return None
    base, cand = compared_ns(diff)
    if base > 0 and 1 / diff.settings.noise <= cand / base <= diff.settings.noise:
        return None  # the kernel time did not change beyond the noise: no cause to name
    share = f"{a.top[0].delta_ns / a.delta_ns:.0%} of {u.signed_ns(a.delta_ns)}"
    text = contributor_text(a.top[0])
    # "X -143.01 us (faster calls)" takes the share inside its parentheses.
    return f"top change {text[:-1]}; {share})" if text.endswith(")") else f"top change {text} ({share})"


def verdict_line(report: Report, name: Callable[[Row], str] = _short_name, reasons_below: bool = False) -> str:
    """``FAIL (exit 1) · 1 failed rule · 2 errors · kernel time ... · top outlier ...``."""
    head = f"{status_word(report)} (exit {int(report.exit_code)})"
    return " · ".join([head, *verdict_details(report, name, reasons_below)])


def finding_text(f: Finding) -> str:
    """``observed vs limit — evidence``: the one-line body of a finding."""
    body = f"{f.observed} vs {f.limit}" if f.limit else f.observed
    return f"{body} — {f.evidence}" if f.evidence else body


def per_call_pair(r: Row) -> str:
    """``5.15x mean / 5.14x p50``."""
    return f"{u.ratio(r.mean_ratio)} mean / {u.ratio(r.p50_ratio)} p50"


def deviation_phrase(r: Row) -> str:
    """``3.31x vs the overall scale, z=+3.6 against the families' spread``: how far a key
    scaled from the rest, and how abnormal that is (the outlier score is a robust z: the
    log deviation over the weighted spread of the family ratios, docs/diff.md)."""
    z = "" if r.outlier_score is None else f", z={r.outlier_score:+.1f} against the families' spread"
    return f"{u.ratio(r.deviation)} vs the overall scale{z}"


def slower_phrase(r: Row) -> str | None:
    """``slower than base in 100% of call pairs``: the probability that a candidate call
    outlasts a base call, in words (None without call distributions)."""
    if r.distribution is None:
        return None
    return f"slower than base in {100 * r.distribution.prob_slower:.0f}% of call pairs"


def distribution_phrase(r: Row) -> str | None:
    """The call distributions in full (--details): the share of call pairs in which the
    candidate is slower, and the Kolmogorov-Smirnov distance, said as what it measures."""
    slower = slower_phrase(r)
    if slower is None or r.distribution is None:
        return None
    ks = r.distribution.ks_distance
    return (
        f"{slower}; the call-time distributions are {ks:.2f} apart "
        "(Kolmogorov-Smirnov distance: 0 the same, 1 no overlap)"
    )


def calls_pair(r: Row) -> str:
    b = count(r.base.calls) if r.base else "-"
    c = count(r.candidate.calls) if r.candidate else "-"
    return f"{b} → {c}"


def side_ns(r: Row) -> tuple[str, str]:
    return (
        u.ns(r.base.total_ns) if r.base else "-",
        u.ns(r.candidate.total_ns) if r.candidate else "-",
    )


def copy_pair(d: CopyDelta, field: str, fmt: Callable[[float], str]) -> str:
    b = fmt(getattr(d.base, field)) if d.base else "-"
    c = fmt(getattr(d.candidate, field)) if d.candidate else "-"
    return f"{b} → {c}"


# The copy table of the text and Markdown reports: the kind, then copy_figures().
COPY_HEADER = ("kind", "ops", "bytes", "time", "ops ratio", "bytes ratio", "time ratio", "verdict")


def copy_figures(d: CopyDelta) -> list[str]:
    """A copy kind's operations, bytes and time (base → candidate), their ratios, its verdict."""
    return [
        copy_pair(d, "ops", count),
        copy_pair(d, "bytes", u.nbytes),
        copy_pair(d, "total_ns", u.ns),
        u.ratio(d.ops_ratio),
        u.ratio(d.bytes_ratio),
        u.ratio(d.ratio),
        d.verdict.value,
    ]


def drift_totals(v: VariantDrift) -> str:
    """``7 appeared (88.00 ms), 7 disappeared (18.00 ms)``."""
    return (
        f"{len(v.appeared):,} appeared ({u.ns(v.appeared_ns)}), "
        f"{len(v.disappeared):,} disappeared ({u.ns(v.disappeared_ns)})"
    )


DISTRIBUTION_WORDS = (
    "Candidate slower: the share of call pairs in which the candidate's call is the slower; "
    "KS distance: the largest gap between the two call-time distributions (0 the same, 1 no overlap). "
)


def method_line(d: Diff, clean: Callable[[str], str] = str, distribution: bool = False) -> str:
    """What an outlier is, and what the ratios are (``clean`` is applied to the runs'
    statistics): the last line of the Markdown and HTML reports; ``distribution`` where
    the report shows the outliers' call distributions."""
    s = d.settings
    return (
        f"Outlier: |modified z| ≥ {s.z_threshold:g} of the log ratio around the overall scale (weighted median "
        f"of family ratios, no family over a fifth of the weight), ≥ {s.min_deviation:g}x beyond it, "
        f"≥ {100 * s.min_share:g}% of either side's kernel time; unchanged within {s.noise:g}x. "
        + (DISTRIBUTION_WORDS if distribution and d.outliers else "")
        + (
            "One trace per side: ratios are not confidence intervals."
            if d.runs is None
            else clean(runs.method_text(d.runs))
        )
    )


FACT_MEANS = "FACT: by exact counts, not a statistic"  # the first screen's short form
FACT_WORDS = "fact: decided on exact counts, not a statistic"


def marks_legend(findings: Sequence[Finding]) -> str:
    """What the marks beside findings mean: the rule's level, in capitals where it fails
    the build, and ``fact`` (nsysdiff's own word) where counts decided it, not noise."""
    legend = "the mark is the rule's level, in capitals where it fails the build"
    if any(not f.statistical for f in findings):
        legend += f"; {FACT_WORDS}"
    return legend


def finding_mark(f: Finding) -> str:
    """The level, with ``waived`` and ``fact`` marks."""
    marks = [f.level.value]
    if not f.statistical:
        marks.append("fact")
    if f.waived:
        marks.append("waived")
    if f.inconclusive:
        marks.append("inconclusive")
    return ", ".join(marks)
