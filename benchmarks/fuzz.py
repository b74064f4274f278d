#!/usr/bin/env python3
"""Fuzz nsysdiff with broken and hostile inputs, and check its contract on every case.

Each case mutates a copy of a seed (a real trace from ``$NSYSDIFF_TRACES`` or
``../shared/traces`` and its ``h100/`` folder when present, and TraceBuilder traces of every
schema generation), then runs ``summary`` or ``diff`` on it in one output format. The
mutations:

- bytes: random bytes overwritten, a page zeroed, two pages swapped, the file truncated
  (the last 100 bytes, a page, or a random length);
- values written through SQL (``nsysdiff.synth.writer.tamper``): NULL, REAL, TEXT, BLOB,
  negative and int64-overflowing values in times, ids, sizes and GPU / metadata columns;
- hostile names: newlines followed by ``::error``/``::warning``/``::stop-commands``/...,
  ``##[error]``, ESC, BEL, OSC-8 links, NUL, rich markup ``[/x]``, Unicode line
  separators, and (rarely) 10 MB names, in kernel, NVTX, GPU and metadata strings and
  in the input's file name;
- saved fingerprints, run sets and noise profiles (JSON) with hostile values, over-long
  integers, NaN, deep nesting, duplicated rows;
- names with every Unicode blank (U+00A0, U+3000, U+2000-U+200A, ...) before ``::``, on a
  line of their own or repeated so that wrapping starts a line with them;
- rule files and ``--phases`` maps (YAML) with dates that are not dates, 5,000-digit and
  400-digit numbers, NaN and negative limits, names over 255 bytes, symlink loops, bad
  regexes, hostile ids and messages;
- output paths onto inputs: ``-o`` naming an input, and ``--keep-export`` into the inputs'
  own directory for reports whose export would take an input's name (a stand-in ``nsys``
  on PATH exports by copying a seed trace).

A share of the cases (``--shapes``) goes to ``fuzz_shapes``: the step finder's shapes
(``--per auto``), outputs that are FIFOs or links in every ``-o`` form, reads stopped by
the other side, long texts in integer columns.

A diff compares one run per side, or several (``--base``/``--candidate``, a mutated run
among good ones); a mutated noise profile is given to a diff as ``--noise-profile``.

The contract, per case: exit 0, 1, 2 or 3 (70 is a crash; running past ``--timeout`` a
hang); no ``Traceback``; the inputs byte-identical with nothing new beside them (no
``-journal``, ``-wal`` or ``-shm``; a kept export is the one new file allowed); no output
line that GitHub's runner would parse as a command (counted as the runner parses: every
leading Unicode blank stripped, then ``::``, other than the github format's own annotations
at the start of a line; or ``##[`` anywhere); no ESC, BEL or NUL in any output; a Markdown
report within GitHub's 1 MiB step-summary limit; an HTML report with its one script and no
other markup from a name; a peak RSS within ``MEMORY_LIMIT_KIB`` (1 GiB, measured by
``wait4`` on the case's process).

Speed: the parent imports nsysdiff once and forks a child per case (no interpreter start),
``--jobs`` children at a time; a child past ``--timeout`` seconds is killed.

    python benchmarks/fuzz.py                      # 5,000 cases, seed 0
    python benchmarks/fuzz.py --cases 300 --seed 1 --jobs 2
    python benchmarks/fuzz.py --only 1234 --keep /tmp/case   # rerun one case, keep its files

Exit status: 0 when every case keeps the contract, 1 otherwise (the failures are listed
with the command that reproduces each).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
import traceback
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_shapes  # beside this file
import fuzz_surfaces

from nsysdiff import api, cli
from nsysdiff.fingerprint import noise, runset
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.render import Format
from nsysdiff.synth.builder import Generation, Gpu, TraceBuilder
from nsysdiff.synth.writer import tamper

ROOT = Path(__file__).resolve().parent.parent
MARKER = "PWNED"  # in every injected command's name or properties, so it can be told apart
MARKDOWN_LIMIT = 1 << 20
# No case may hold more than this (peak RSS of its process, the forked parent's pages included).
MEMORY_LIMIT_KIB = 1 << 20
SUMMARY_FORMATS = tuple(f.value for f in cli.SummaryFormat)
DIFF_FORMATS = tuple(f.value for f in Format)

# Strings an adversary would put in a name. Every command they carry names MARKER.
HOSTILE: tuple[str, ...] = (
    f"gemm\n::error file={MARKER},line=1::injected",
    f"gemm\r\n::warning title={MARKER}::injected",
    f"relu\n  ::stop-commands::{MARKER}",
    f"x\n::add-mask::{MARKER}",
    f"x\n::set-output name={MARKER}::1",
    f"x\n::error::{MARKER} at line start",
    f"##[error]{MARKER}",
    f"ok\n##[stop-commands]{MARKER}",
    f"attention ##[group]{MARKER}",
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;https://example.invalid\x07click\x1b]8;;\x07",
    "\x1b]0;title\x07bell\x07",
    "nul\x00byte",
    "{ForeignNode[/ConstantOfShape_3_/ScatterND_23]}",
    "[bold]bold[/bold] [/x] [link=https://example.invalid]l[/link]",
    f"sep\u2028::error::{MARKER}",
    f"nel\u0085::error::{MARKER}",
    "bidi \u202egnp.exe",
    "| pipe | <details> ``` <script>x</script>",
    "%0A::error::percent",
    "",
)
# Every character GitHub's runner trims before it looks for "::" (and Python's isspace()).
BLANKS = "".join(
    sorted(
        {chr(c) for c in range(0x3001) if chr(c).isspace() or unicodedata.category(chr(c)) == "Zs"}
        | {"\u180e", "\u200b", "\ufeff"}
    )
)
HOSTILE += tuple(f"k\n{b}::error::{MARKER}" for b in BLANKS if b != "\n")
HOSTILE += tuple(f"k{f' www {b}::warning::{MARKER}' * 30}" for b in "\u3000\u00a0\u2003\u202f\u205f\u1680")
HUGE = "A" * 10_000_000 + f"\n::error file={MARKER}::end"

_KINDS_BYTES = ("overwrite", "zero_page", "swap_pages", "truncate")
_KINDS_SQL = ("value", "value", "name")
_VALUES: tuple[object, ...] = (
    None,
    1.5,
    1e300,
    -1.0,
    "text",
    "",
    b"\x00\x01",
    -1,
    -(1 << 63),
    (1 << 63) - 1,
    0,
    1 << 62,
)
# (table, column) pairs the reader uses: where a bad value can hurt.
_TARGETS = (
    (
        "CUPTI_ACTIVITY_KIND_KERNEL",
        (
            "start",
            "end",
            "deviceId",
            "demangledName",
            "shortName",
            "gridX",
            "registersPerThread",
            "graphNodeId",
            "correlationId",
            "globalPid",
        ),
    ),
    ("CUPTI_ACTIVITY_KIND_MEMCPY", ("start", "end", "copyKind", "bytes", "deviceId")),
    ("CUPTI_ACTIVITY_KIND_MEMSET", ("start", "end", "bytes")),
    ("CUPTI_ACTIVITY_KIND_RUNTIME", ("start", "end", "nameId", "globalTid", "correlationId")),
    ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", ("start", "end")),
    ("NVTX_EVENTS", ("start", "end", "eventType", "textId", "domainId", "globalTid", "text")),
    ("StringIds", ("id", "value")),
    ("TARGET_INFO_GPU", ("id", "smCount", "name")),
    ("TARGET_INFO_CUDA_GPU", ("cudaId", "numMultiprocessors", "name")),
    ("ANALYSIS_DETAILS", ("startTime", "stopTime")),
    ("META_DATA_EXPORT", ("name", "value")),
    ("EXPORT_META_DATA", ("name", "value")),
    ("ENUM_CUDA_MEMCPY_OPER", ("id", "name")),
    ("ENUM_NSYS_EVENT_TYPE", ("id", "name")),
)
_OWN_ANNOTATION = re.compile(r"^::(error|warning|notice|debug|group|endgroup)( [^:]*)?::")


# --- seeds -------------------------------------------------------------------------------


def traces_dir() -> Path:
    env = os.environ.get("NSYSDIFF_TRACES")
    return Path(env) if env else ROOT.parent / "shared" / "traces"


def real_seeds() -> list[Path]:
    base = traces_dir()
    if not base.is_dir():
        return []
    return sorted(base.glob("*.sqlite")) + sorted((base / "h100").glob("*.sqlite"))


def builder_seeds(directory: Path) -> list[Path]:
    """Small traces of every schema generation, with every table the reader reads."""
    out = []
    for g in Generation:
        b = TraceBuilder(g, gpus=(Gpu(0), Gpu(1, "NVIDIA H100 80GB HBM3")))
        for i in range(60):
            b.launch(
                "gemm" if i % 3 else "elementwise_kernel",
                10_000 * i,
                10_000 * i + 1_000,
                2_000 + (i % 7) * 100,
                device=i % 2,
            )
            b.memcpy("HtoD" if i % 2 else "DtoD", 10_000 * i + 6_000, 300, 4096 * (i + 1))
            b.nvtx_range(f"aten::mm, seq = {i}", 10_000 * i, 10_000 * i + 9_000)
        b.memset(700_000, 200, 1024)
        b.runtime("cudaDeviceSynchronize_v3020", 800_000, 801_000)
        if g not in (Generation.V2020_3, Generation.V2021):
            b.graph_launch(900_000, 5_000)
        out.append(b.write(directory / f"builder_{g.value}.sqlite"))
    return out


# --- cases -------------------------------------------------------------------------------


@dataclass
class Case:
    number: int
    seed: str
    mutation: str
    argv: list[str]
    env: dict[str, str]
    inputs: list[Path]
    directory: Path
    outputs: tuple[str, ...] = ()  # names the command may create in its directory
    run: Callable[[list[str]], int] | None = None  # in the child, instead of the CLI
    after: Callable[[], list[str]] = lambda: []  # problems found once the child is done
    expect: tuple[int, ...] = ()  # the exit codes the contract allows (empty: any of 0-3)


@dataclass
class Outcome:
    case: Case
    code: int | None  # None: killed after the time limit
    seconds: float
    problems: list[str] = field(default_factory=list)
    peak_kib: int = 0  # the case's peak RSS


def _copy(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o644)
    return dst


def _page_size(data: bytes) -> int:
    size = int.from_bytes(data[16:18], "big") if len(data) >= 18 else 4096
    return 65536 if size == 1 else (size if size >= 512 else 4096)


def mutate_bytes(rng: random.Random, path: Path) -> str:
    data = bytearray(path.read_bytes())
    page = _page_size(bytes(data))
    pages = max(len(data) // page, 1)
    kind = rng.choice(_KINDS_BYTES)
    if kind == "overwrite":
        n = rng.choice((1, 4, 16, 256))
        offsets = sorted(rng.randrange(len(data)) for _ in range(n))
        for o in offsets:
            data[o] = rng.randrange(256)
        what = f"overwrite {n} byte(s), first at {offsets[0]}"
    elif kind == "zero_page":
        p = rng.randrange(pages)
        data[p * page : (p + 1) * page] = bytes(len(data[p * page : (p + 1) * page]))
        what = f"zero page {p + 1}"
    elif kind == "swap_pages":
        a, b = rng.randrange(pages), rng.randrange(pages)
        pa, pb = bytes(data[a * page : (a + 1) * page]), bytes(data[b * page : (b + 1) * page])
        if len(pa) == len(pb):
            data[a * page : (a + 1) * page], data[b * page : (b + 1) * page] = pb, pa
        what = f"swap pages {a + 1} and {b + 1}"
    else:
        cut = rng.choice((100, page, rng.randrange(1, len(data))))
        del data[max(len(data) - cut, 0) :]
        what = f"truncate {cut} bytes"
    path.write_bytes(bytes(data))
    return what


def _tables(path: Path) -> dict[str, set[str]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table'"
        ).fetchall()
    finally:
        con.close()
    out: dict[str, set[str]] = {}
    for t, c in rows:
        out.setdefault(t, set()).add(c)
    return out


def _hostile(rng: random.Random) -> str:
    return HUGE if rng.random() < 0.01 else rng.choice(HOSTILE)


def mutate_sql(rng: random.Random, path: Path) -> str:
    tables = _tables(path)
    kind = rng.choice(_KINDS_SQL)
    if kind == "name":
        text = _hostile(rng)
        choices = [("StringIds", "value")] * 4 + [
            ("NVTX_EVENTS", "text"),
            ("TARGET_INFO_GPU", "name"),
            ("TARGET_INFO_CUDA_GPU", "name"),
            ("META_DATA_EXPORT", "value"),
            ("EXPORT_META_DATA", "value"),
        ]
        present = [(t, c) for t, c in choices if c in tables.get(t, ())]
        if not present:
            return "no string column to change"
        table, column = rng.choice(present)
        limit = "" if rng.random() < 0.2 else f" WHERE rowid IN (SELECT rowid FROM {table} ORDER BY random() LIMIT 3)"
        tamper(path, f'UPDATE {table} SET "{column}" = ?{limit}', params=(text,))
        return f"{table}.{column} = {text[:40]!r}{'... (10 MB)' if len(text) > 1000 else ''}"
    present_targets = [(t, [c for c in cols if c in tables[t]]) for t, cols in _TARGETS if t in tables]
    present_targets = [(t, cols) for t, cols in present_targets if cols]
    if not present_targets:
        return "no column to change"
    table, cols = rng.choice(present_targets)
    column = rng.choice(cols)
    value = rng.choice(_VALUES)
    every = rng.random() < 0.1
    some = f"SELECT rowid FROM {table} ORDER BY random() LIMIT {rng.choice((1, 2, 50))}"
    where = "" if every else f" WHERE rowid IN ({some})"
    try:
        tamper(path, f'UPDATE {table} SET "{column}" = ?{where}', params=(value,))
    except sqlite3.Error as e:  # a UNIQUE id collision: the file stays as it was
        return f"{table}.{column} = {value!r} refused by SQLite ({e})"
    return f"{table}.{column} = {value!r} ({'every row' if every else 'some rows'})"


def mutate_json(rng: random.Random, text: str, what: str = "fingerprint") -> tuple[str, str]:
    """A saved document (fingerprint, run set, noise profile) with one hostile change:
    (new text, what changed)."""
    doc = json.loads(text)
    paths: list[tuple[Any, Any]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                paths.append((node, k))
                walk(v)
        elif isinstance(node, list):
            for i, v in enumerate(node):
                paths.append((node, i))
                walk(v)

    walk(doc)
    parent, key = rng.choice(paths)
    choice = rng.randrange(8)
    sentinel = "@@FUZZ@@"
    raw: str | None = None
    if choice == 0:
        value: object = -rng.randrange(1, 10**6)
    elif choice == 1:
        value, raw = sentinel, rng.choice(("NaN", "Infinity", "-Infinity", "9" * 5000, "1e400"))
    elif choice == 2:
        value, raw = sentinel, "[" * 100_000 + "]" * 100_000
    elif choice == 3:
        value = _hostile(rng)
    elif choice == 4:
        value = None
    elif choice == 5:
        value = {"x": [1, "y"]}
    elif choice == 6 and isinstance(parent, list):
        parent.append(parent[key])  # a duplicate row
        return json.dumps(doc), f"{what}: duplicate a list item"
    else:
        value = 0
    parent[key] = value
    out = json.dumps(doc)
    if raw is not None:
        out = out.replace(json.dumps(sentinel), raw, 1)
    shown = raw if raw is not None else value
    return out, f"{what} {key!r} = {str(shown)[:40]!r}"


_RULE = """version: {version}
description: {description}
rules:
  - id: {id}
    kind: budget
    kernel: {kernel}
    each: true
    metric: {metric}
    {key}: {value}
    message: {message}
"""
_LIMIT_KEYS = ("max_ratio", "max_noise_widths", "max_increase", "max_value", "min_time", "max_share", "min_ratio")
_YAML_VALUES = (
    "1" + "0" * 400,
    "9" * 5000,
    ".nan",
    "-1",
    "-0.5",
    ".inf",
    "-.inf",
    "1e400",
    "2026-02-30",
    "2026-13-01",
    "2026-01-01 25:61:61",
    "'(?<=x)'",
    "[]",
    "{}",
    "null",
    "true",
    "1.1x",
    "5ms",
    "64MB",
    "5%",
    "0",
    "3",
)


def _yaml_string(rng: random.Random) -> str:
    """A hostile string as a YAML double-quoted scalar (json.dumps escapes what YAML would refuse raw)."""
    return json.dumps(rng.choice(HOSTILE)[:2000])


def mutate_rules(rng: random.Random, directory: Path) -> tuple[Path, str]:
    """A rule file with one hostile value (and, for some, the files it names)."""
    fields = {
        "version": "1",
        "description": "fuzz",
        "id": "r",
        "kernel": "'.'",
        "metric": "total_time",
        "key": rng.choice(_LIMIT_KEYS),
        "value": rng.choice(_YAML_VALUES),
        "message": "m",
    }
    kind = rng.randrange(9)
    if kind == 0:
        fields["version"] = rng.choice(("2026-02-30", "9" * 5000, "1" + "0" * 400, ".nan", "2026-01-01"))
    elif kind == 1:
        fields["description"] = rng.choice(("2026-13-01", "2026-01-01 25:61:61", "2026-02-30", _yaml_string(rng)))
    elif kind == 2:
        fields["id"] = rng.choice(("2026-02-30", _yaml_string(rng), "9" * 5000))
    elif kind == 3:
        fields["message"] = _yaml_string(rng)
    elif kind == 4:
        fields["kernel"] = rng.choice(("'decode['", "'(?<=gemm)x'", "'(a+)+$'", _yaml_string(rng)))
    elif kind == 5:
        fields["metric"] = rng.choice(("bytes", "calls", "mean", "share", "2026-01-01"))
    text = _RULE.format(**fields)
    what = f"rules: {fields['key']}: {fields['value'][:30]!r}"
    if kind == 6:  # a name the file system refuses, or a symlink loop, in extends / noise_profile
        key = rng.choice(("extends", "noise_profile"))
        if rng.random() < 0.5:
            name = "a" * rng.choice((256, 300, 5000)) + ".yaml"
        else:
            name = "loop1"
            os.symlink("loop2", directory / "loop1")
            os.symlink("loop1", directory / "loop2")
        text = text.replace("description: fuzz\n", f"description: fuzz\n{key}: {name}\n")
        what = f"rules: {key}: {name[:20]}... ({len(name)} characters)"
    elif kind == 7:  # a date as a key, or waivers with dates that are not dates
        text += rng.choice(
            ("2026-01-01: x\n", "waivers:\n  - rule: r\n    subject: x\n    reason: y\n    expires: 2026-02-30\n")
        )
        what = "rules: a date-like key or expiry"
    elif kind == 8:
        text = "version: 1\nrules: " + "[" * rng.choice((33, 500)) + "]" * 1
        what = "rules: deep nesting"
    elif kind < 6:
        what = f"rules: {list(fields)[kind]} = {str(list(fields.values())[kind])[:30]!r}"
    path = directory / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    return path, what


def mutate_phases(rng: random.Random, directory: Path) -> tuple[Path, str]:
    """A ``--phases`` map with one hostile name or pattern."""
    name, pattern = "decode", "'aten::mm.*'"
    kind = rng.randrange(5)
    if kind == 0:
        name = rng.choice(("2026-02-30", "2026-01-01 25:61:61", "9" * 5000))
    elif kind == 1:
        pattern = rng.choice(("2026-02-30", "9" * 5000, "1" + "0" * 400, ".nan", "[2026-13-01]"))
    elif kind == 2:
        pattern = rng.choice(("'step['", "'(?<=x)y'", "'(a+)+$'", "''"))
    elif kind == 3:
        name = _yaml_string(rng)
    else:
        pattern = _yaml_string(rng)
    path = directory / "phases.yaml"
    path.write_text(f"phases:\n  {name}: {pattern}\n", encoding="utf-8")
    return path, f"phases: {name[:30]!r}: {pattern[:30]!r}"


# A stand-in for nsys on PATH: "exports" a report by copying the trace $NSYSDIFF_FUZZ_EXPORT.
_FAKE_NSYS = """#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = --output ] && out="$2"; shift; done
cp "$NSYSDIFF_FUZZ_EXPORT" "$out"
"""
REPORT_HEAD = b"NVIDIA Tegra Profiler Report\x00\x01" + bytes(200)


def fake_nsys(work: Path) -> Path:
    bin_dir = work / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "nsys"
    script.write_text(_FAKE_NSYS, encoding="utf-8")
    script.chmod(0o755)
    return bin_dir


@dataclass(frozen=True)
class Saved:
    """Per seed trace, the JSON documents nsysdiff saves from it, to mutate."""

    fingerprints: dict[Path, str]
    run_sets: dict[Path, str]  # the trace's fingerprint as two runs
    profiles: dict[Path, str]  # the noise profile of those runs
    later: dict[Path, str]  # the trace's fingerprint as another capture (see _later)


def saved_documents(seeds: Sequence[Path]) -> Saved:
    fps = {p: api.fingerprint_trace(p) for p in seeds}
    # Two runs that are not one capture (a run set of one capture twice is refused).
    sets = {p: runset.run_set([fp, _later(fp)], [str(p), f"{p} (later)"]) for p, fp in fps.items()}
    return Saved(
        {p: fingerprint_to_json(fp) for p, fp in fps.items()},
        {p: runset.run_set_to_json(rs) for p, rs in sets.items()},
        {p: noise.profile_to_json(noise.measure(rs)) for p, rs in sets.items()},
        {p: fingerprint_to_json(_later(fp)) for p, fp in fps.items()},
    )


def _later(fp: Any) -> Any:
    """``fp`` as if its capture ended 1 ns later: the same figures, another capture."""
    end = fp.meta.capture_end_ns
    return dataclasses.replace(fp, meta=dataclasses.replace(fp.meta, capture_end_ns=None if end is None else end + 1))


def make_case(
    number: int,
    seed: int,
    seeds: Sequence[Path],
    saved: Saved,
    work: Path,
    surfaces: float = 0.2,
    traces: Path | None = None,
    shapes: float = 0.15,
) -> Case:
    """Case ``number`` of ``seed``; ``surfaces``: the share of cases beyond traces (history
    stores, the comment client, step bombs, the Action: ``fuzz_surfaces``); ``shapes``: the
    share on the step finder's shapes, FIFO and link outputs, stopped reads and long texts
    in integer columns (``fuzz_shapes``); ``traces``: the real traces, whose
    ``h100/llm_bs1`` the step bombs and whose graph captures the step finder's cases copy."""
    rng = random.Random(f"{seed}:{number}")
    src = rng.choice(seeds)
    directory = work / f"case-{number}"
    directory.mkdir()
    base = _copy(src, directory / "base.sqlite")
    name = "trace.sqlite"
    if rng.random() < 0.05:
        name = rng.choice((f"t\n::error file={MARKER}::n.sqlite", "t\x1b[2Jx.sqlite", "[bold]t.sqlite", "a b.sqlite"))
    roll = rng.random()
    profile = None
    env = {"PATH": os.environ.get("PATH", ""), "COLUMNS": "120", "LANG": "C.UTF-8"}
    if random.Random(f"{seed}:{number}:surfaces").random() < surfaces:
        # Drawn apart, so that the other cases of a seed stay those it gave before.
        plan = fuzz_surfaces.make(rng, src, saved.fingerprints[src], directory, traces)
        env |= plan.env
        return Case(
            number,
            src.name,
            plan.mutation,
            plan.argv,
            env,
            plan.inputs,
            directory,
            plan.outputs,
            plan.run,
            plan.after,
            plan.expect,
        )
    if random.Random(f"{seed}:{number}:shapes").random() < shapes:
        # Drawn apart too, for the same reason.
        plan = fuzz_shapes.make(rng, src, directory, traces)
        env |= plan.env
        return Case(
            number,
            src.name,
            plan.mutation,
            plan.argv,
            env,
            plan.inputs,
            directory,
            plan.outputs,
            plan.run,
            plan.after,
            plan.expect,
        )
    if roll < 0.08:
        return _yaml_case(number, rng, src, base, directory, env)
    if roll < 0.13:
        return _output_case(number, rng, src, base, directory, env, work)
    if roll < 0.28:
        what = rng.choice(("fingerprint", "fingerprint", "run set", "noise profile"))
        source = {"fingerprint": saved.fingerprints, "run set": saved.run_sets, "noise profile": saved.profiles}
        text, mutation = mutate_json(rng, source[what][src], what)
        target = directory / ("noise.json" if what == "noise profile" else "fp.json")
        target.write_text(text, encoding="utf-8")
        profile = target if what == "noise profile" else None
    else:
        target = _copy(src, directory / name)
        mutation = mutate_bytes(rng, target) if roll < 0.64 else mutate_sql(rng, target)
    if profile is not None:
        # A noise profile is read by a diff that judges rules against it.
        fmt = rng.choice(DIFF_FORMATS)
        argv = ["diff", str(base), str(base), "--noise-profile", str(profile), "--format", fmt]
        inputs = [base, profile]
    elif rng.random() < 0.4:
        fmt = rng.choice(SUMMARY_FORMATS)
        argv = ["summary", "--format", fmt, str(target)]
        inputs = [target]
    else:
        fmt = rng.choice(DIFF_FORMATS)
        pair = [str(base), str(target)] if rng.random() < 0.7 else [str(target), str(base)]
        if rng.random() < 0.25:  # several runs per side, the mutated one among good runs
            # The good run beside it is another capture (one capture twice is refused).
            later = directory / "later.json"
            later.write_text(saved.later[src], encoding="utf-8")
            argv = ["diff", "--base", str(later), *pair[:1], "--candidate", *pair[1:], str(later), "--format", fmt]
        else:
            argv = ["diff", *pair, "--format", fmt]
        inputs = [base, target]
    if rng.random() < 0.2:  # scoped reading: windows, NVTX ranges and steps read more tables
        argv += rng.choice(
            (
                ["--window", "0:1ms"],
                ["--window", "0:10s", "--window-origin", "capture"],
                ["--nvtx", "aten::mm"],
                ["--per", "aten::mm", "--skip-first", "1"],
                ["--per", "auto"],  # steps found without a marker, or a one-line refusal
                ["--nvtx", ".*"],
            )
        )
    _in_actions(rng, env, directory)
    return Case(number, src.name, mutation, argv, env, inputs, directory)


def _in_actions(rng: random.Random, env: dict[str, str], directory: Path) -> None:
    if rng.random() < 0.5:
        env["GITHUB_ACTIONS"] = "true"
        env["GITHUB_STEP_SUMMARY"] = str(directory / "step-summary.md")
        env["GITHUB_OUTPUT"] = str(directory / "github-output.txt")


def _yaml_case(number: int, rng: random.Random, src: Path, base: Path, directory: Path, env: dict[str, str]) -> Case:
    """A rule file or a phases map, mutated, read by a diff, ``rules validate`` or a summary."""
    if rng.random() < 0.7:
        path, mutation = mutate_rules(rng, directory)
        fmt = rng.choice(DIFF_FORMATS)
        argv = (
            ["rules", "validate", str(path)]
            if rng.random() < 0.3
            else ["diff", str(base), str(base), "--rules", str(path), "--format", fmt]
        )
    else:
        path, mutation = mutate_phases(rng, directory)
        if rng.random() < 0.5:
            argv = ["summary", str(base), "--phases", str(path), "--format", rng.choice(SUMMARY_FORMATS)]
        else:
            argv = ["diff", str(base), str(base), "--phases", str(path), "--format", rng.choice(DIFF_FORMATS)]
    _in_actions(rng, env, directory)
    return Case(number, src.name, mutation, argv, env, [base, path], directory)


def _output_case(
    number: int, rng: random.Random, src: Path, base: Path, directory: Path, env: dict[str, str], work: Path
) -> Case:
    """``-o`` naming an input, or ``--keep-export`` into the inputs' own directory for a
    report whose export would take an input's name; the inputs must come out unchanged."""
    other = _copy(src, directory / "other.sqlite")
    if rng.random() < 0.5:
        target = rng.choice((base, other))
        one = [str(target)]  # a command of one input writes onto that input
        argv = rng.choice(
            (
                ["summary", *one, "-o", str(target)],
                ["summary", str(base), str(other), "-o", str(target)],
                ["fingerprint", *one, "-o", str(target)],
                ["fingerprint", str(base), str(other), "--run-set", "-o", str(target)],
                ["noise", str(base), str(other), "-o", str(target)],
                ["diff", str(base), str(other), "-o", str(target), "--format", rng.choice(DIFF_FORMATS)],
                ["diff", str(base), str(other), "-o", str(directory / "missing" / "r.json"), "--format", "text"],
            )
        )
        mutation = f"-o onto {target.name}"
        inputs = [base, other]
    else:
        # Reports named like the inputs' exports: "other.sqlite" holding a report, or a
        # report "base.nsys-rep" beside "base.sqlite", exported into this directory.
        report = rng.choice((directory / "other.nsys-rep", directory / "report.sqlite"))
        report.write_bytes(REPORT_HEAD)
        env["PATH"] = f"{fake_nsys(work)}{os.pathsep}{env['PATH']}"
        env["NSYSDIFF_FUZZ_EXPORT"] = str(src)
        argv = rng.choice(
            (
                ["summary", str(report), "--keep-export", str(directory)],
                [
                    "diff",
                    str(report),
                    str(other),
                    "--keep-export",
                    str(directory),
                    "--format",
                    rng.choice(DIFF_FORMATS),
                ],
                ["diff", str(other), str(report), "--keep-export", str(directory), "--no-rules", "--format", "json"],
                ["fingerprint", str(report), str(other), "-o", str(directory / "fps"), "--keep-export", str(directory)],
            )
        )
        mutation = f"--keep-export beside {report.name}"
        inputs = [base, other, report]
    if "--format" not in argv:
        argv += [] if argv[0] in ("fingerprint", "noise") else ["--format", "text"]
    _in_actions(rng, env, directory)
    return Case(number, src.name, mutation, argv, env, inputs, directory)


# --- running -----------------------------------------------------------------------------


def _child(case: Case) -> None:
    """In the forked child: run the CLI as ``nsysdiff ARGV`` would, then _exit."""
    code = 70
    try:
        out = os.open(case.directory / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(case.directory / "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="backslashreplace")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace")
        os.environ.clear()
        os.environ.update(case.env)
        sys.argv = ["nsysdiff", *case.argv]
        try:
            if case.run is not None:
                code = case.run(case.argv)
            else:
                cli.main()
                code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _digest(paths: Sequence[Path]) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def check(case: Case, code: int | None, before: dict[Path, str], listing: set[str]) -> list[str]:
    problems = case.after()
    if code is None:
        problems.append("hang")
    elif code not in (0, 1, 2, 3):
        problems.append(f"crash (exit {code})")
    elif case.expect and code not in case.expect:
        problems.append(f"wrong exit {code} (expected {' or '.join(map(str, case.expect))})")
    out = (case.directory / "stdout").read_bytes()
    err = (case.directory / "stderr").read_bytes()
    extra = [p for p in ("step-summary.md", "github-output.txt") if (case.directory / p).exists()]
    docs = {"stdout": out, "stderr": err} | {p: (case.directory / p).read_bytes() for p in extra}
    if b"Traceback" in err:
        problems.append("traceback")
    if _digest(case.inputs) != before:
        problems.append("modified input")
    new = sorted(set(os.listdir(case.directory)) - listing - {"stdout", "stderr", *extra, *case.outputs})
    if "--keep-export" in case.argv:  # the kept export, under a name no input had
        new = [n for n in new if not (n.endswith(".sqlite") or n == "fps")]
    if new:
        problems.append(f"new files beside the inputs: {new}")
    fmt = case.argv[case.argv.index("--format") + 1] if "--format" in case.argv else "json"
    for where, data in docs.items():
        # nsysdiff's own annotations: the github format, or any format in a workflow.
        own = where == "stdout" and (fmt == "github" or case.env.get("GITHUB_ACTIONS") == "true")
        problems += _injected(where, data, own)
    if code == 3 and not out and err.count(b"\n") != 1:
        # Inconclusive before any report could be made (no steps found by --per auto, a
        # history baseline of one run): one line says why, as for a bad input.
        problems.append("inconclusive without a report and without one line saying why")
    if fmt == "html" and code in (0, 1, 3) and out and (out.count(b"<script") != 1 or _HTML_INJECTED.search(out)):
        problems.append("markup injected into the HTML report")
    summary_md = docs.get("step-summary.md", b"")
    if (fmt == "markdown" and len(out) > MARKDOWN_LIMIT) or len(summary_md) > MARKDOWN_LIMIT:
        problems.append("markdown past GitHub's 1 MiB step-summary limit")
    return problems


def _injected(where: str, data: bytes, own: bool) -> list[str]:
    """Workflow commands and terminal controls in one output (``own``: it may carry
    nsysdiff's own annotations)."""
    problems = []
    for line in data.decode("utf-8", "replace").split("\n"):
        line = line.rstrip("\r")
        if "##[" in line:
            problems.append(f"injected command in {where}: {line[:80]!r}")
        elif line.lstrip(BLANKS).startswith("::"):
            # nsysdiff's own annotations start the line; after any blank it is injected.
            m = _OWN_ANNOTATION.match(line)
            if not own or m is None or MARKER in line[: m.end()] or line[m.end() :].startswith(MARKER):
                problems.append(f"injected command in {where}: {line[:80]!r}")
    for ch, label in ((b"\x1b", "ESC"), (b"\x07", "BEL"), (b"\x00", "NUL")):
        if ch in data:
            problems.append(f"{label} in {where}")
    return problems


# An element or attribute no HTML report of nsysdiff has: a name that got out of its text.
# (A name's ``<`` is escaped, so a tag here is markup nsysdiff wrote, or a name that got out.)
_HTML_INJECTED = re.compile(rb"<(?:iframe|object|embed|img|link|image)\b|<[a-z][^>]*\son[a-z]+\s*=", re.I)


def _preload() -> None:
    """Import in the parent what children would otherwise import per case (forked, shared)."""
    import importlib

    from nsysdiff.fingerprint import validation

    for name in (
        # The CLI imports a command's module when the command runs.
        *(f"nsysdiff.cli.{command}" for command in cli.COMMANDS),
        "scipy.stats",
        "rich.console",
        "rich.table",
        "yaml",
        "jsonschema",
        "matplotlib.figure",
        "matplotlib.backends.backend_svg",
    ):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    validation._validator()


def _warm(trace: Path) -> None:
    """Run each command once in the parent: rich and the renderers import lazily."""
    for argv in (["summary", str(trace)], ["diff", str(trace), str(trace), "--format", "markdown"]):
        sys.argv = ["nsysdiff", *argv]
        with (
            open(os.devnull, "w") as null,
            contextlib.redirect_stdout(null),
            contextlib.redirect_stderr(null),
            contextlib.suppress(SystemExit),
        ):
            cli.main()


def run(
    seed: int,
    cases: int,
    timeout: float,
    jobs: int,
    work: Path,
    only: int | None = None,
    keep: bool = False,
    real: bool = True,
    progress: Callable[[Outcome], None] | None = None,
    surfaces: float = 0.2,
    shapes: float = 0.15,
) -> list[Outcome]:
    """Run the cases (or just ``only``) under ``work``; return one Outcome per case.

    ``real``: mutate the real traces too, not only the builder's. ``surfaces``, ``shapes``:
    the shares of cases beyond traces and on the newest surfaces (:func:`make_case`).
    """
    _preload()
    seeds_dir = work / "seeds"
    seeds_dir.mkdir(parents=True, exist_ok=True)
    seeds = [_copy(p, seeds_dir / p.name) for p in (real_seeds() if real else [])] + builder_seeds(seeds_dir)
    saved = saved_documents(seeds)
    _warm(seeds[-1])
    numbers: Iterator[int] = iter([only] if only is not None else range(cases))
    running: dict[int, tuple[Case, float, dict[Path, str], set[str]]] = {}
    outcomes: list[Outcome] = []
    sys.stdout.flush()
    sys.stderr.flush()
    exhausted = False
    while running or not exhausted:
        while not exhausted and len(running) < jobs:
            n = next(numbers, None)
            if n is None:
                exhausted = True
                break
            case = make_case(n, seed, seeds, saved, work, surfaces, traces_dir() if real else None, shapes)
            before = _digest(case.inputs)
            listing = set(os.listdir(case.directory))
            pid = os.fork()
            if pid == 0:
                _child(case)
            running[pid] = (case, time.monotonic(), before, listing)
        if not running:
            continue
        # wait4: the child's resource use with its status, for the memory bound.
        pid, status, usage = os.wait4(-1, os.WNOHANG)
        now = time.monotonic()
        finished: list[tuple[int, int | None, int]] = []
        if pid:
            finished.append((pid, os.waitstatus_to_exitcode(status), usage.ru_maxrss))
        for p, (_, started, _, _) in running.items():
            if p != pid and now - started > timeout:
                os.kill(p, signal.SIGKILL)
                _, _, usage = os.wait4(p, 0)
                finished.append((p, None, usage.ru_maxrss))
        if not finished:
            time.sleep(0.002)
            continue
        for p, code, peak in finished:
            case, started, before, listing = running.pop(p)
            problems = check(case, code, before, listing)
            if peak > MEMORY_LIMIT_KIB:
                problems.append(f"memory: peak RSS {peak >> 10:,} MiB, over {MEMORY_LIMIT_KIB >> 10:,} MiB")
            outcome = Outcome(case, code, now - started, problems, peak)
            outcomes.append(outcome)
            if progress:
                progress(outcome)
            if not outcome.problems and not keep:
                shutil.rmtree(case.directory, ignore_errors=True)
    return sorted(outcomes, key=lambda o: o.case.number)


def tally(outcomes: Sequence[Outcome]) -> dict[str, int]:
    """Cases per kind of broken promise (a case counts once per kind)."""

    def count(*prefixes: str) -> int:
        return sum(1 for o in outcomes if any(p.startswith(prefixes) for p in o.problems))

    return {
        "cases": len(outcomes),
        "crashes": count("crash", "traceback"),
        "hangs": count("hang"),
        "modified inputs": count("modified", "new files"),
        "injected commands": count("injected"),
        "injected options": count("option injected"),
        "token leaks": count("token leak"),
        "wrong exits": count("wrong exit"),
        "control characters": count("ESC", "BEL", "NUL"),
        "oversized markdown": count("markdown"),
        "over the memory bound": count("memory"),
        "failing cases": sum(1 for o in outcomes if o.problems),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=5000, help="number of cases (default 5000)")
    ap.add_argument("--seed", type=int, default=0, help="random seed: the same seed gives the same cases")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1)")
    ap.add_argument("--only", type=int, help="run only case number N (to reproduce a failure)")
    ap.add_argument("--keep", type=Path, help="work in DIR and keep every case's files")
    ap.add_argument("--no-real", action="store_true", help="mutate only TraceBuilder traces, not the real ones")
    ap.add_argument(
        "--surfaces",
        type=float,
        default=0.2,
        help="share of cases on history stores, the comment client, step bombs and the Action (default 0.2)",
    )
    ap.add_argument(
        "--shapes",
        type=float,
        default=0.15,
        help="share of cases on the step finder's shapes, FIFO and link outputs, stopped reads and long texts "
        "in integer columns (default 0.15)",
    )
    args = ap.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="nsysdiff-fuzz-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    codes: Counter[str] = Counter()

    def progress(o: Outcome) -> None:
        codes["hang" if o.code is None else str(o.code)] += 1
        if o.problems:
            shown = o.case.argv if len(o.case.argv) <= 24 else [*o.case.argv[:12], "...", *o.case.argv[-6:]]
            argv = " ".join(map(repr, shown))
            if len(shown) < len(o.case.argv):
                argv += f" ({len(o.case.argv):,} arguments)"
            print(
                f"case {o.case.number}: {'; '.join(o.problems)}\n  seed {o.case.seed}: {o.case.mutation}\n"
                f"  nsysdiff {argv}\n  files: {o.case.directory}",
                flush=True,
            )
        done = sum(codes.values())
        if done % 500 == 0:
            print(f"{done} cases, {time.monotonic() - started:.0f} s", flush=True)

    try:
        outcomes = run(
            args.seed,
            args.cases,
            args.timeout,
            max(args.jobs, 1),
            work,
            args.only,
            bool(args.keep),
            not args.no_real,
            progress,
            args.surfaces,
            args.shapes,
        )
    finally:
        if not args.keep:
            leftovers = [p for p in work.iterdir() if p.name.startswith("case-")]
            if not leftovers:
                shutil.rmtree(work, ignore_errors=True)
    elapsed = time.monotonic() - started
    t = tally(outcomes)
    print(
        f"\nseed {args.seed}: {t['cases']} cases in {elapsed:.0f} s "
        f"({elapsed / max(t['cases'], 1) * 1000:.0f} ms per case, {args.jobs} job(s))"
    )
    print("exit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(codes.items())))
    for key in (
        "crashes",
        "hangs",
        "modified inputs",
        "injected commands",
        "injected options",
        "token leaks",
        "wrong exits",
        "control characters",
        "oversized markdown",
        "over the memory bound",
        "failing cases",
    ):
        print(f"{key}: {t[key]}")
    peak = max((o.peak_kib for o in outcomes), default=0)
    print(f"peak RSS of a case: {peak >> 10:,} MiB (bound {MEMORY_LIMIT_KIB >> 10:,} MiB)")
    return 1 if t["failing cases"] else 0


if __name__ == "__main__":
    sys.exit(main())
