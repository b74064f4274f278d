"""The HTML report: self-contained, every trace string escaped in HTML and in the charts'
SVG, the charts that apply, and one line when the HTML extra (matplotlib, Jinja2) is missing."""

from __future__ import annotations

import base64
import hashlib
import re
import sys
from collections.abc import Callable
from html.parser import HTMLParser

import pytest
from markupsafe import escape
from render.htmlcheck import svg_texts, svgs
from render.test_render import hostile_findings, hostile_specs

from nsysdiff.errors import UsageError
from nsysdiff.render import Format, charts, html, page, render, require
from nsysdiff.rules.report import Report
from nsysdiff.safe import neutral

MakeReport = Callable[..., Report]


class _Elements(HTMLParser):
    """Every start tag with its attributes, and every script's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def _parse(document: str) -> _Elements:
    p = _Elements()
    p.feed(document)
    return p


def test_self_contained(report: Report) -> None:
    out = render(report, Format.html)
    p = _parse(out)
    # Nothing to fetch: no source, no link, no stylesheet or font from elsewhere.
    assert not [t for t, a in p.tags if "src" in a or t in ("link", "iframe", "object", "embed", "img")]
    hrefs = [a.get("href") or a.get("xlink:href") for _, a in p.tags if "href" in a or "xlink:href" in a]
    assert all(h and h.startswith("#") for h in hrefs), hrefs
    assert "@import" not in out and "@font-face" not in out
    assert not re.search(r"url\((?!#)", out)  # only references inside the page (clip paths)
    assert not re.search(r"https?://(?!www\.w3\.org/)", out)  # XML namespaces name, never fetch


def test_the_policy_allows_exactly_the_one_script(report: Report) -> None:
    out = render(report, Format.html)
    p = _parse(out)
    (script,) = p.scripts
    policy = next(a["content"] for t, a in p.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert policy is not None and "default-src 'none'" in policy
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in policy
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]


def test_charts_of_one_run_per_side(report: Report) -> None:
    out = render(report, Format.html)
    ids = re.findall(r'<figure id="chart-([a-z]+)"', out)
    assert ids == ["waterfall", "contributors", "scale"]
    scale = svgs(out)[2]
    words = svg_texts(scale)
    assert "scale 1.10x" in words and any(w.startswith("outlier 5.14x") for w in words)
    assert "vllm::reshape_and_cache_flash_kernel" in words  # the outlier's family, marked
    # Ratio ticks a reader can read, never mathtext.
    assert "1x" in words and not any("mathdefault" in w for w in words)


@pytest.mark.parametrize(
    "name",
    [
        "evil<script>alert(1)</script>&amp;\"'`",
        "$\\frac{a}{b}$ $x^2$",  # mathtext, if parsed, would eat the dollars or fail
        "k\x1b]8;;http://x\x07click\x1b]8;;\x07\u202e",
        "::error::pwned\n::warning title=x::injected\u2028::notice::line",
        "</svg><svg onload=alert(1)>",
    ],
    ids=["html", "mathtext", "control", "commands", "svg"],
)
def test_trace_strings_are_escaped_in_html_and_svg(make_report: MakeReport, name: str) -> None:
    out = render(make_report(specs=hostile_specs(name), findings=hostile_findings(name)), Format.html)
    p = _parse(out)
    assert [t for t, _ in p.tags].count("script") == 1
    assert not [a for _, a in p.tags if any(k.startswith("on") for k in a)]
    assert "<script>alert" not in out and "<svg onload" not in out
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202e]", out)
    # Judged as GitHub's runner judges a log line: after stripping all leading whitespace.
    assert not [line for line in out.splitlines() if line.lstrip().startswith("::") or "##[" in line]
    # The name is still there to read, as text, in a table and in the outlier chart, and
    # an attribute holding it reads back as the name made one inert line.
    assert escape(neutral.text(name))[:20] in out
    assert f"void {neutral.text(name)}(int)" in [a.get("title") for t, a in p.tags if t == "code"]
    scale = next(s for s in svgs(out) if "outlier" in " ".join(svg_texts(s)))
    assert len(svg_texts(scale)) > 5


def test_mathtext_is_off(make_report: MakeReport) -> None:
    name = "$x^2$_kernel"
    out = render(make_report(specs=hostile_specs(name)), Format.html)
    assert any(name in " ".join(svg_texts(s)) for s in svgs(out))


def test_several_runs_draw_intervals_and_points() -> None:
    from pathlib import Path

    text = (Path(__file__).parent / "golden" / "runs" / "3v3.html").read_text(encoding="utf-8")
    ids = re.findall(r'<figure id="chart-([a-z]+)"', text)
    assert ids == ["waterfall", "contributors", "scale", "runs", "forest"]
    forest = svgs(text)[4]
    assert "indexSelectSmallIndex  (kernel)" in svg_texts(forest)


# The HTML extra: matplotlib draws the charts, Jinja2 writes the pages.
EXTRA = [("matplotlib", charts.INSTALL_HINT), ("jinja2", page.INSTALL_HINT)]


@pytest.mark.parametrize(("module", "hint"), EXTRA, ids=[m for m, _ in EXTRA])
def test_missing_extra_is_one_line(monkeypatch: pytest.MonkeyPatch, module: str, hint: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(UsageError) as e:
        require(Format.html)
    assert str(e.value) == hint and "\n" not in str(e.value)
    require(Format.markdown)  # the other formats need nothing more


def test_the_docs_quote_each_missing_extra_line() -> None:
    from conftest import ROOT

    doc = (ROOT / "docs" / "html.md").read_text(encoding="utf-8")
    assert all(f"\nnsysdiff: error: {hint}\n" in doc for _, hint in EXTRA)


@pytest.mark.parametrize(("module", "hint"), EXTRA, ids=[m for m, _ in EXTRA])
def test_missing_extra_fails_before_reading(monkeypatch: pytest.MonkeyPatch, module: str, hint: str) -> None:
    from conftest import run_cli

    monkeypatch.setitem(sys.modules, module, None)
    code, out, err = run_cli("missing-a.sqlite", "missing-b.sqlite", "-o", "report.html")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [f"nsysdiff: error: {hint}"]


def test_nvtx_ranges_against_the_scale_without_kernels() -> None:
    """Without kernel data the scale is over NVTX ranges, and the chart says so."""
    from conftest import real_trace

    from nsysdiff import api
    from nsysdiff.compare.diff import compare

    b = api.load(real_trace("ecf_nvtxonly_baseline"))
    c = api.load(real_trace("ecf_nvtxonly_poolformer"))
    out = render(api.judge(compare(b, c), (), ()), Format.html)
    assert "every NVTX range against the scale</h2>" in out and "an NVTX range&#39;s total-time ratio" in out
    assert "Where the change went" not in out  # no kernel time to split
    words = svg_texts(svgs(out)[0])
    assert "find_centers" in words and "scale 0.24x" in words


def test_kernel_table_is_capped(report: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html, "TABLE_ROWS", 3)
    out = render(report, Format.html)
    table = out[out.index('id="kernels"') : out.index("</table>", out.index('id="kernels"'))]
    assert table.count("<tr") == 4  # the header and the 3 largest changes
    assert f"The 3 largest changes of {len(report.diff.kernels):,} kernels; the JSON report" in out


def test_an_improvement_is_marked_apart_from_a_regression() -> None:
    from fpspec import fingerprint

    from nsysdiff import api
    from nsysdiff.compare.diff import compare

    names = ["gemm_a", "softmax_b", "layernorm_c", "reduce_d", "copy_e", "attn_f", "elementwise_g", "rope_h"]
    base = {n: (100, 10_000_000) for n in names}
    cand = dict(base)
    base["fast_kernel"], cand["fast_kernel"] = (100, 20_000_000), (100, 2_000_000)
    out = render(api.judge(compare(fingerprint(base), fingerprint(cand)), (), ()), Format.html)
    scale = svgs(out)[-1]
    assert charts.BETTER.lower() in scale.lower()  # green, not the regressions' red
    assert "green triangles: faster than the scale (an improvement)" in out


def test_a_small_change_on_a_large_total_is_drawn_above_a_raised_floor() -> None:
    # +80 us on 2.75 ms: from 0 the parts are hairlines.
    floor, top = charts.waterfall_axis(2_750_000, [0, 80_000, 0, 0])
    assert 2_000_000 < floor < 2_750_000 and top > 2_830_000
    assert charts.waterfall_axis(1_000_000, [500_000, 0, 0, 0])[0] == 0.0  # a large change: from 0
