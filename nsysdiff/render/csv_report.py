"""CSV: the diff's tables for a spreadsheet or a script.

``--format csv`` prints the kernel table; ``-o DIR`` writes one file per table. Columns
are named as ``nsys stats`` names them where the concept is the same (``Total Time (ns)``,
``Instances``, ``Avg (ns)``, ``Name``), each prefixed by the side it belongs to. Times are
integers in nanoseconds (a per-step diff keeps its fraction); ratios are plain numbers,
empty where undefined.

Every string from a trace or a rule file goes through :func:`neutral.csv_cell`: one line,
and never a cell a spreadsheet would evaluate as a formula.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from pathlib import Path

from nsysdiff.compare.diff import CopyDelta, Diff, Row
from nsysdiff.errors import NsysdiffError
from nsysdiff.render import steps as step_lines
from nsysdiff.render.devices import device_verdict
from nsysdiff.render.names import Names, labels, mangled_of
from nsysdiff.render.sides import paired
from nsysdiff.rules.report import Report
from nsysdiff.safe import neutral

Cell = str | int | float | None
Table = tuple[tuple[str, ...], list[list[Cell]]]


def _num(x: float | None) -> Cell:
    """An exact figure: an integer when it is one, never ``-0.0``, empty when undefined."""
    if x is None:
        return None
    if float(x).is_integer():
        return int(x)
    return round(float(x), 6) + 0.0


def _ns(x: float | None) -> Cell:
    """Nanoseconds: integers, except a per-step average (rounded to the nanosecond)."""
    return None if x is None else round(x) + 0


_SIDE_COLS = ("Total Time (ns)", "Instances", "Avg (ns)")
_CHANGE_COLS = (
    "Delta (ns)",
    "Ratio",
    "Calls Ratio",
    "Avg Ratio",
    "Count Effect (ns)",
    "Per-call Effect (ns)",
    "Resized Effect (ns)",
    "Verdict",
)


def _sides(r: Row) -> list[Cell]:
    out: list[Cell] = []
    for s in (r.base, r.candidate):
        out += [_ns(s.total_ns), _num(s.calls), _ns(s.mean_ns)] if s else [None, None, None]
    return out


def _change(r: Row) -> list[Cell]:
    return [
        _ns(r.delta_ns),
        _num(r.ratio),
        _num(r.calls_ratio),
        _num(r.mean_ratio),
        _ns(r.count_effect_ns),
        _ns(r.per_call_effect_ns),
        _ns(r.resized_ns),
        "outlier" if r.is_outlier else r.verdict.value,
    ]


def _side_header() -> tuple[str, ...]:
    return tuple(f"{side} {c}" for side in ("Base", "Candidate") for c in _SIDE_COLS)


def kernels(d: Diff, names: Names = Names.short) -> Table:
    label = labels(d.kernels, names, mangled_of(d.base, d.candidate))
    header = ("Name", "Demangled Name", "Category", "Family", *_side_header(), *_CHANGE_COLS)
    rows = [
        [
            neutral.csv_cell(label.get(r.key, r.name)),
            neutral.csv_cell(r.key),
            neutral.csv_cell(r.category or ""),
            neutral.csv_cell(r.family or ""),
            *_sides(r),
            *_change(r),
        ]
        for r in d.kernels
    ]
    return header, rows


def _named(rows: Sequence[Row], first: str) -> Table:
    header = (first, *_side_header(), *_CHANGE_COLS)
    return header, [[neutral.csv_cell(r.key), *_sides(r), *_change(r)] for r in rows]


def _copies(deltas: Sequence[CopyDelta]) -> Table:
    header = (
        "Operation",
        "Base Count",
        "Candidate Count",
        "Base Total (bytes)",
        "Candidate Total (bytes)",
        "Base Total Time (ns)",
        "Candidate Total Time (ns)",
        "Ratio",
        "Count Ratio",
        "Bytes Ratio",
        "Verdict",
    )
    rows: list[list[Cell]] = []
    for x in deltas:
        b, c = x.base, x.candidate
        rows.append(
            [
                neutral.csv_cell(x.kind),
                _num(b.ops) if b else None,
                _num(c.ops) if c else None,
                _num(b.bytes) if b else None,
                _num(c.bytes) if c else None,
                _ns(b.total_ns) if b else None,
                _ns(c.total_ns) if c else None,
                _num(x.ratio),
                _num(x.ops_ratio),
                _num(x.bytes_ratio),
                x.verdict.value,
            ]
        )
    return header, rows


def _devices(d: Diff) -> Table:
    header = (
        "Device",
        "Base Kernels",
        "Candidate Kernels",
        "Base Busy (ns)",
        "Candidate Busy (ns)",
        "Base Span (ns)",
        "Candidate Span (ns)",
        "Verdict",
    )
    rows: list[list[Cell]] = []
    for dev, b, c in paired(d.base.devices, d.candidate.devices, lambda x: x.device):
        bb, cb = (b.busy_ns if b else None), (c.busy_ns if c else None)
        rows.append(
            [
                dev,
                b.kernels if b else None,
                c.kernels if c else None,
                bb,
                cb,
                b.span_ns if b else None,
                c.span_ns if c else None,
                device_verdict(bb, cb, d.settings.noise).value,
            ]
        )
    return header, rows


def _findings(report: Report) -> Table:
    header = ("Level", "Rule", "Kind", "Subject", "Observed", "Limit", "Evidence", "Waived", "Fails")
    failing = set(report.failed)
    rows: list[list[Cell]] = [
        [
            f.level.value,
            neutral.csv_cell(f.rule_id),
            f.kind,
            neutral.csv_cell(f.subject),
            neutral.csv_cell(f.observed),
            neutral.csv_cell(f.limit),
            neutral.csv_cell(f.evidence),
            int(f.waived),
            int(f in failing),
        ]
        for f in report.findings
    ]
    return header, rows


def _steps(d: Diff) -> Table | None:
    if d.steps is None:
        return None
    rows: list[list[Cell]] = [
        [section, item, _num(b), _num(c), _num(delta), _num(ratio)]
        for section, item, b, c, delta, ratio in step_lines.csv_rows(d.steps)
    ]
    return step_lines.CSV_HEADER, rows


# Every table a diff can have, by file stem (None: not in this diff), in file order: the
# one list that both the writer and the check of ``-o DIR`` against the inputs read.
_TABLES: dict[str, Callable[[Report, Names], Table | None]] = {
    "kernels": lambda r, names: kernels(r.diff, names),
    "categories": lambda r, _: _named(r.diff.categories, "Category"),
    "memory": lambda r, _: _copies((*r.diff.memcpy, *r.diff.memset)),
    "nvtx": lambda r, _: _named(r.diff.nvtx, "Range"),
    "sync": lambda r, _: _named(r.diff.sync, "Call"),
    "api": lambda r, _: _named(r.diff.api, "Call"),
    "devices": lambda r, _: _devices(r.diff),
    "findings": lambda r, _: _findings(r),
    "steps": lambda r, _: _steps(r.diff),
}
# The files ``-o DIR`` can write (checked against the inputs before any trace is read).
FILE_NAMES = tuple(f"{stem}.csv" for stem in _TABLES)


def tables(report: Report, names: Names = Names.short) -> dict[str, Table]:
    """Every table of the diff, by file stem."""
    out = {stem: make(report, names) for stem, make in _TABLES.items()}
    return {stem: table for stem, table in out.items() if table is not None}


def _document(table: Table) -> str:
    header, rows = table
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def render(report: Report, names: Names = Names.short) -> str:
    """The kernel table."""
    return _document(kernels(report.diff, names))


def write_dir(report: Report, directory: Path, names: Names = Names.short) -> list[Path]:
    """One CSV per table in ``directory``; the paths written."""
    written = []
    for stem, table in tables(report, names).items():
        path = directory / f"{stem}.csv"
        try:
            path.write_text(_document(table), encoding="utf-8")
        except OSError as e:
            raise NsysdiffError(f"{path}: can't write ({e.strerror})") from None
        written.append(path)
    return written
