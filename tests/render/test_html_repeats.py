"""The HTML and Markdown reports say each thing once: the inconclusive reason under the
verdict line (not in it too), and each comparability fact once (the headline's scope,
coverage and CUDA-graph lines are not listed a second time); and the scale chart marks a
family flagged as a whole."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter

import pytest
from conftest import real_trace
from render import synthetic
from render.htmlcheck import svg_texts, svgs

from nsysdiff import api
from nsysdiff.compare.diff import Settings, compare
from nsysdiff.errors import ExitCode
from nsysdiff.fingerprint.model import Scope
from nsysdiff.render import charts, html, markdown
from nsysdiff.rules.comparison import Comparison, Kind
from nsysdiff.rules.report import Outcome

pytest.importorskip("matplotlib")

REASON = "CUDA graph trace modes differ (base graph, candidate node)"


def _scoped_graph_report() -> object:
    """The synthetic report with both sides read per a step range and replaying graphs."""
    b, c = synthetic.pair()
    scope = Scope(per="decode", steps=64, coverage=0.9)
    b, c = (
        dataclasses.replace(
            fp, scope=scope, meta=dataclasses.replace(fp.meta, graph_launches=200, graph_total_ns=19_000_000)
        )
        for fp in (b, c)
    )
    return dataclasses.replace(synthetic.build_report(), diff=compare(b, c, Settings()))


def test_html_says_the_inconclusive_reason_once() -> None:
    report = synthetic.build_report(
        outcome=Outcome.INCONCLUSIVE,
        exit_code=ExitCode.INCONCLUSIVE,
        reasons=(REASON,),
        comparison=Comparison(Kind.CANT_COMPARE, REASON),
    )
    page = html.render(report)
    assert page.count(REASON) == 1
    verdict = re.search(r'<p class="verdict[^"]*">(.*?)</p>', page, re.S)
    assert verdict and "can&#39;t compare (the reason below)" in verdict.group(1)


def _labels(lines: list[str]) -> Counter[str]:
    return Counter(line.split(":", 1)[0].strip() for line in lines)


def test_html_lists_each_comparability_fact_once() -> None:
    page = html.render(_scoped_graph_report())  # type: ignore[arg-type]
    summary = re.search(r"<summary>Comparability: (.*?)</summary>", page)
    assert summary
    keys = summary.group(1).split(", ")
    assert len(keys) == len(set(keys)), keys
    assert {"scope", "coverage", "CUDA graphs"} <= set(keys)


def test_markdown_lists_each_comparability_fact_once() -> None:
    text = markdown.render(_scoped_graph_report())  # type: ignore[arg-type]
    line = next(s for s in text.splitlines() if s.startswith("<sub>") and "nsys:" in s)
    counts = _labels(line.removeprefix("<sub>").removesuffix("</sub>").split(" · "))
    assert max(counts.values()) == 1, counts
    assert counts["scope"] == counts["coverage"] == counts["CUDA graphs"] == 1


def test_the_scale_chart_marks_a_family_flagged_as_a_whole() -> None:
    # torch.compile's build: reduce_kernel's variants, light each, dropped as a family.
    base, cand = api.load(real_trace("h100/llm_bs1")), api.load(real_trace("h100/llm_bs1_compile"))
    d = compare(base, cand, Settings())
    flagged = [r for r in d.outlier_families if not any(k.family == r.name for k in d.outliers)]
    assert flagged
    chart = charts.scale_band(d, {})
    assert chart is not None
    words = " ".join(svg_texts(chart.svg))
    assert f"outlier family {flagged[0].ratio:.2f}x" in words
    assert "rings: families flagged as a whole (red slower than the scale, green faster)" in chart.caption
    assert svgs(f"<p>{chart.svg}</p>")
