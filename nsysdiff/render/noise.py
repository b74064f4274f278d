"""``nsysdiff noise``: a noise profile as text or Markdown, the noisiest keys first."""

from __future__ import annotations

import io
import math

from nsysdiff import units as u
from nsysdiff.fingerprint.noise import MIN_RUNS, KeyNoise, NoiseProfile, PartialKey, fmt_width, width
from nsysdiff.fingerprint.runset import KeyKind
from nsysdiff.render.layout import grid, plain_console, wrap
from nsysdiff.render.names import labels_of
from nsysdiff.render.runs import KIND_WORDS
from nsysdiff.render.summary import gpu_line
from nsysdiff.safe import neutral


def _count(n: int, kind: KeyKind) -> str:
    return u.plural(n, KIND_WORDS[kind])


def header_lines(p: NoiseProfile) -> list[str]:
    counted = {kind: sum(k.kind is kind for k in p.keys) for kind in KIND_WORDS}
    # Kernels always (a profile without them says so); other kinds when the runs have some.
    counts = [_count(n, kind) for kind, n in counted.items() if n or kind is KeyKind.KERNEL]
    head = f"{p.count} runs of one build · {gpu_line(p.runs.runs[0])} · " + ", ".join(counts)
    if p.partial:
        head += f" · {u.plural(len(p.partial), 'key')} in only some runs"
    return [
        head,
        "runs: " + ", ".join(p.runs.sources),
        "A noise width is the SD of ln(candidate / base) between two runs of this build "
        "(sqrt(2) x the SD of one run's log): with normal noise an A/A diff moves past one width "
        "about 1 time in 3 and past 3 widths about 1 time in 370. Rules use it: max_noise_widths "
        "counts in widths, and a limit within one width of no change is too small to tell. "
        "The robust column (from the median absolute deviation) far below the width points at "
        f"one odd run rather than steady noise. {p.count} runs estimate a width "
        + ("roughly" if p.count < 5 else "to within about " + f"{100 / math.sqrt(2 * (p.count - 1)):.0f}%")
        + f" (at least {MIN_RUNS}; 5 or more recommended).",
    ]


def _ordered(p: NoiseProfile) -> list[KeyNoise]:
    return sorted(p.keys, key=lambda k: (-k.mean.sd_log, -k.total.sd_log, k.kind.value, k.key))


def _labels(p: NoiseProfile) -> dict[str, str]:
    """Kernel keys (demangled signatures) as the diff labels them: the short name, with the
    words that tell it from its namesakes where short names collide."""
    return labels_of({(k.demangled, k.name) for fp in p.runs.runs for k in fp.kernels})


def _key(k: KeyNoise | PartialKey, named: dict[str, str]) -> str:
    return named.get(k.key, k.key) if k.kind is KeyKind.KERNEL else k.key


def _rows(keys: list[KeyNoise], named: dict[str, str]) -> list[list[str]]:
    return [
        [
            _key(k, named),
            KIND_WORDS[k.kind],
            u.ns(k.median_mean_ns),
            fmt_width(k.mean.width),
            fmt_width(width(k.mean.robust_log)),
            u.ns(k.median_total_ns),
            fmt_width(k.total.width),
        ]
        for k in keys
    ]


HEADER = ("key", "kind", "mean/call", "width", "robust", "total", "total width")


def _title(p: NoiseProfile, shown: int) -> str:
    return f"Noisiest per-call means ({shown} of {len(p.keys):,} keys; median per run, noise width)"


def render_text(p: NoiseProfile, width_cols: int, top: int = 20) -> str:
    p = neutral.scrub(p, neutral.text)
    buf = io.StringIO()
    console = plain_console(buf, width_cols)
    first, *rest = header_lines(p)
    wrap(console, f"nsysdiff noise: {first}", width_cols, hang="  ", bold=True)
    for line in rest:
        wrap(console, line, width_cols, indent="  ", hang="  ")
    shown = _ordered(p)[:top]
    named = _labels(p)
    if shown:
        console.print()
        # The total and its width give way first: the table is about per-call means, and a
        # key without its kind (a kernel, its family, its category) reads as three keys.
        console.print(grid(_title(p, len(shown)), HEADER, _rows(shown, named), width_cols, optional=(6, 5, 4)))
    if p.partial:
        rows = [[_key(k, named), KIND_WORDS[k.kind], f"{k.runs} of {p.count}"] for k in p.partial]
        console.print()
        console.print(
            grid("Unstable: in only some runs (structure, not noise)", ("key", "kind", "runs"), rows, width_cols)
        )
    return neutral.lines("\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n")


def render_markdown(p: NoiseProfile, top: int = 20) -> str:
    from nsysdiff.render.cells import cell

    p = neutral.scrub(p, neutral.text)
    first, *rest = header_lines(p)
    out = [f"### nsysdiff noise: {cell(first)}", ""]
    out += [f"- {cell(line)}" for line in rest]
    shown = _ordered(p)[:top]
    named = _labels(p)

    def table(title: str, header: tuple[str, ...], rows: list[list[str]]) -> list[str]:
        return [
            "",
            f"#### {cell(title)}",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "|".join([":--", ":--", *("--:" for _ in header[2:])]) + "|",
            *("| " + " | ".join([f"<code>{cell(r[0])}</code>", *(cell(c) for c in r[1:])]) + " |" for r in rows),
        ]

    if shown:
        out += table(_title(p, len(shown)), HEADER, _rows(shown, named))
    if p.partial:
        rows = [[_key(k, named), KIND_WORDS[k.kind], f"{k.runs} of {p.count}"] for k in p.partial]
        out += table("Unstable: in only some runs (structure, not noise)", ("key", "kind", "runs"), rows)
    return neutral.cap_markdown(neutral.lines("\n".join(out) + "\n"))
