"""The fuzzer's cases on the newest surfaces (``benchmarks/fuzz.py`` draws them): the shapes
of the steps found without a marker, outputs that are FIFOs or links, reads that the other
side stops, and long texts in integer columns. Each case is a
:class:`~fuzz_surfaces.Plan`.

- **auto**: a trace built for the step finder (``--per auto``): a loop of a period, a
  period whose matches never form a run (``A B x_i x_i``, ``A x_i``), two loops
  interleaved, CUDA-graph replays (graph trace, one or several graph ids) or node-mode
  replays (kernels sharing a launch's correlation id); then, for some, every kernel
  zero-length or at one timestamp, or a process, graph or node id made NULL, TEXT, REAL
  or BLOB. Where the real graph captures are at hand, they are read too (their numbers
  under ``--per auto`` are not checked here, only the contract). Read by ``summary`` and
  ``fingerprint`` with ``--per auto``, and by ``diff`` with ``--per auto`` or ``--rules
  tpot`` on traces without a step range.
- **-o fifo / -o link**: every ``-o`` form (a file for ``summary``, ``fingerprint``,
  ``--run-set``, ``noise`` and ``diff``; a directory for ``diff``'s CSV files and
  ``fingerprint``'s JSON files) and ``$GITHUB_STEP_SUMMARY`` / ``$GITHUB_OUTPUT``,
  pointing at a FIFO, a symbolic link to a FIFO, or a hard or symbolic link to an input:
  refused (exit 2) before reading, never a hang or a changed input.
- **stopped**: a pristine trace diffed with a damaged copy (either side, one run or with
  several runs per side): when the diff refuses, its one line names the damaged file,
  never the pristine one; or one file given 2,000 times on a side: refused before reading.
- **long text**: every row's value of an integer column a text of 100,000 characters (a
  few thousand rows at most), read by ``summary``, ``summary --per auto``, ``diff`` and
  ``fingerprint``: refused in one line, within the memory bound every case is held to.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

from fuzz_surfaces import Plan

from nsysdiff.render.csv_report import FILE_NAMES
from nsysdiff.synth.builder import TraceBuilder
from nsysdiff.synth.writer import tamper

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
GRAPH = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
_ODD = ("NULL", "'abc'", "1.5", "x'01'", "x'3132'", "-1", "9223372036854775807")
LONG_TEXT = 100_000
LONG_ROWS = 3_000


def make(rng: random.Random, src: Path, directory: Path, traces: Path | None) -> Plan:
    kind = rng.choice(("auto", "auto", "output", "output", "stopped", "long"))
    if kind == "auto":
        return _auto_case(rng, directory, traces)
    if kind == "output":
        return _output_case(rng, src, directory)
    if kind == "stopped":
        return _stopped_case(rng, src, directory)
    return _long_case(rng, src, directory)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o644)
    return dst


# --- the step finder's shapes --------------------------------------------------------------


def _launch_all(b: TraceBuilder, names: list[str], t: int, gap: int = 10_000) -> int:
    for name in names:
        b.launch(name, t, t + 2_000, 4_000)
        t += gap
    return t


def _eager(rng: random.Random, path: Path) -> str:
    b = TraceBuilder()
    shape = rng.choice(("period", "no run", "alternate", "interleaved"))
    t = 1_000_000
    if shape == "period":
        body = [f"k{j % rng.choice((3, 5, 40))}" for j in range(rng.choice((3, 9, 12, 40)))]
        steps = rng.choice((2, 3, 20, 200))
        t = _launch_all(b, ["embed", "prefill", "head"], t)
        for _ in range(steps):
            t = _launch_all(b, body, t) + rng.choice((0, 300_000))
        what = f"a {len(body)}-kernel loop, {steps} steps"
    elif shape == "no run":  # period 4 matches half the positions, in runs of 2
        for i in range(rng.choice((10, 40, 400))):
            t = _launch_all(b, ["A", "B", f"x{i}", f"x{i}"], t)
        what = "A B x_i x_i"
    elif shape == "alternate":
        for i in range(rng.choice((10, 40, 400))):
            t = _launch_all(b, ["A", f"x{i}"], t)
        what = "A x_i"
    else:
        loops = (["a1", "a2", "a3"], ["b1", "b2", "b3", "b4", "b5"])
        at = [0, 0]
        for _ in range(rng.choice((50, 400))):
            k = rng.randrange(2)
            t = _launch_all(b, [loops[k][at[k] % len(loops[k])]], t)
            at[k] += 1
        what = "two loops interleaved"
    b.write(path)
    return what


def _graphs(rng: random.Random, path: Path) -> str:
    b = TraceBuilder()
    t = 1_000_000
    ids = rng.choice(((1,), (1, 2), (1, 1, 1, 2)))
    n = rng.choice((2, 3, 10, 200))
    for i in range(n):
        b.graph_launch(t + 5_000, rng.choice((0, 50_000)), graph_id=ids[i % len(ids)], cpu_start=t)
        t += 100_000
    b.write(path)
    return f"{n} graph replays of graph ids {ids}"


def _nodes(rng: random.Random, path: Path) -> str:
    b = TraceBuilder()
    t = 1_000_000
    n = rng.choice((2, 3, 10, 200))
    for _ in range(n):
        cid = b.runtime("cudaGraphLaunch_v10000", t, 3_000)
        for j in range(rng.choice((1, 9))):
            b.kernel(f"node{j}", t + 5_000 + j * 6_000, 4_000, correlation_id=cid, graph_node_id=100 + j)
        t += 100_000
    b.write(path)
    return f"{n} node-mode replays"


def _reshape(rng: random.Random, path: Path) -> str:
    """One change the step finder must survive, or none."""
    tables = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    value = rng.choice(_ODD)
    changes = [("", "as built"), (f'UPDATE {KERNEL} SET "end" = start', "every kernel zero-length")]
    changes.append((f'UPDATE {KERNEL} SET start = 2000000, "end" = 2000000 + {rng.choice((0, 1000))}', "one timestamp"))
    every = rng.choice(("", " WHERE rowid % 3 = 0"))
    changes.append((f"UPDATE {KERNEL} SET globalPid = {value}{every}", f"kernel globalPid {value}{every}"))
    changes.append((f"UPDATE {KERNEL} SET graphNodeId = {value}{every}", f"graphNodeId {value}{every}"))
    if GRAPH in tables:
        changes.append((f"UPDATE {GRAPH} SET graphId = {value}{every}", f"graphId {value}{every}"))
        changes.append((f"UPDATE {GRAPH} SET globalPid = {value}{every}", f"graph globalPid {value}{every}"))
    sql, what = rng.choice(changes)
    if sql:
        try:
            tamper(path, sql)
        except sqlite3.Error as e:  # a NOT NULL column: the file stays as built
            return f"{what} refused by SQLite ({e})"
    return what


def _auto_case(rng: random.Random, directory: Path, traces: Path | None) -> Plan:
    path = directory / "auto.sqlite"
    real = [traces / "h100" / f"graph_{m}.sqlite" for m in ("mode", "node")] if traces else []
    real = [p for p in real if p.is_file()]
    if real and rng.random() < 0.25:
        src = rng.choice(real)
        _copy(src, path)
        tamper(path, "DELETE FROM NVTX_EVENTS")  # no step range: the pack's steps are found
        shape = f"{src.stem} without its ranges"
    else:
        shape = rng.choice((_eager, _eager, _graphs, _nodes))(rng, path)
    change = _reshape(rng, path)
    other = _copy(path, directory / "other.sqlite")
    if rng.random() < 0.5:
        tamper(other, "CREATE TABLE fuzz_other (x)")  # another capture, not a copy
    fmt = rng.choice(("text", "json", "markdown", "github", "csv"))
    argv = rng.choice(
        (
            ["summary", str(path), "--per", "auto", "--format", "json" if fmt == "csv" else fmt],
            ["fingerprint", str(path), "--per", "auto", "-o", str(directory / "out.json")],
            ["diff", str(other), str(path), "--per", "auto", "--format", fmt],
            ["diff", str(other), str(path), "--rules", "tpot", "--format", fmt],
            ["diff", str(path), str(path), "--rules", "tpot", "--format", fmt],
        )
    )
    return Plan(f"auto: {shape}; {change}", argv, [path, other], ("out.json",))


# --- outputs that are FIFOs or links -------------------------------------------------------


def _plant(kind: str, where: Path, target: Path, directory: Path) -> None:
    """Make ``where`` a FIFO, a link to a FIFO, or a link to the input ``target``."""
    if kind == "fifo":
        os.mkfifo(where)
    elif kind == "symlink to a fifo":
        fifo = directory / "elsewhere.fifo"
        os.mkfifo(fifo)
        where.symlink_to(fifo)
    elif kind == "hard link":
        os.link(target, where)
    else:
        where.symlink_to(target)


def _output_case(rng: random.Random, src: Path, directory: Path) -> Plan:
    base = _copy(src, directory / "base.sqlite")
    other = _copy(src, directory / "other.sqlite")
    tamper(other, "CREATE TABLE fuzz_other (x)")  # another file, not a byte-identical copy
    kind = rng.choice(("fifo", "symlink to a fifo", "hard link", "symlink"))
    target = rng.choice((base, other))
    form = rng.choice(("file", "file", "dir", "github"))
    env: dict[str, str] = {}
    if form == "file":
        out = directory / rng.choice(("out.json", "out.md", "out.txt"))
        argv = rng.choice(
            (
                ["summary", str(base), "-o", str(out)],
                ["fingerprint", str(base), "-o", str(out)],
                ["fingerprint", str(base), str(other), "--run-set", "-o", str(out)],
                ["noise", str(base), str(other), "-o", str(out)],
                ["diff", str(base), str(other), "-o", str(out)],
            )
        )
        # A link to a file the command does not read is an output like any other.
        _plant(kind, out, target if str(other) in argv else base, directory)
        where = f"-o {out.name}"
    elif form == "dir":
        out = directory / "out"
        out.mkdir()
        if rng.random() < 0.5:
            name = rng.choice(FILE_NAMES)
            argv = ["diff", str(base), str(other), "-o", str(out), *rng.choice(([], ["--per", "auto"]))]
        else:
            name = rng.choice(("base.json", "other.json"))
            argv = ["fingerprint", str(base), str(other), "-o", str(out)]
        _plant(kind, out / name, target, directory)
        where = f"-o DIR/{name}"
    else:
        variable = rng.choice(("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"))
        out = directory / "github.planted"
        _plant(kind, out, target, directory)
        env = {"GITHUB_ACTIONS": "true", variable: str(out)}
        argv = ["diff", str(base), str(other)]
        where = f"${variable}"
    return Plan(f"-o {kind}: {where}", argv, [base, other], env=env, expect=(2,))


# --- reads the other side stops ------------------------------------------------------------

_DAMAGE = (
    f"UPDATE {RUNTIME} SET globalTid = NULL WHERE rowid % 3 = 0",
    f"UPDATE {KERNEL} SET start = 'soon' WHERE rowid % 5 = 0",
    f"UPDATE {KERNEL} SET deviceId = NULL WHERE rowid % 7 = 0",
    f"UPDATE {RUNTIME} SET nameId = x'3132' WHERE rowid % 11 = 0",
    f'UPDATE {RUNTIME} SET "end" = start - 1 WHERE rowid % 13 = 0',
)


def _blames(stderr: Path, pristine: Path) -> Callable[[], list[str]]:
    def after() -> list[str]:
        err = stderr.read_text(encoding="utf-8", errors="replace")
        if err.startswith("nsysdiff: error:") and f"{pristine}:" in err:
            return [f"wrong exit: the pristine side blamed: {err.strip()[:160]!r}"]
        return []

    return after


def _stopped_case(rng: random.Random, src: Path, directory: Path) -> Plan:
    pristine = _copy(src, directory / "pristine.sqlite")
    damaged = _copy(src, directory / "damaged.sqlite")
    if rng.random() < 0.2:
        # One file 2,000 times on a side: refused before any run is read.
        argv = ["diff", "--base", *[str(pristine)] * 2000, "--candidate", str(damaged), "--no-rules"]
        return Plan("stopped: one file 2,000 times on a side", argv, [pristine, damaged], expect=(2,))
    sql = rng.choice(_DAMAGE)
    try:
        tamper(damaged, sql)
    except sqlite3.Error as e:  # the table is not in this seed: a diff of two good copies
        sql = f"none ({e})"
    pair = [str(pristine), str(damaged)] if rng.random() < 0.5 else [str(damaged), str(pristine)]
    rules = rng.choice((["--rules", "tpot"], ["--rules", "default"], ["--no-rules"]))
    if rng.random() < 0.25:
        later = _copy(src, directory / "later.sqlite")
        tamper(later, "CREATE TABLE fuzz_later (x)")
        argv = ["diff", "--base", pair[0], str(later), "--candidate", pair[1], *rules]
        inputs = [pristine, damaged, later]
    else:
        argv = ["diff", *pair, *rules]
        inputs = [pristine, damaged]
    return Plan(f"stopped: {sql}", argv, inputs, after=_blames(directory / "stderr", pristine))


# --- long text in integer columns ----------------------------------------------------------

_INTEGERS = (
    (KERNEL, ("start", "end", "deviceId", "demangledName", "shortName", "correlationId", "globalPid", "streamId")),
    (KERNEL, ("gridX", "registersPerThread", "graphNodeId", "mangledName", "contextId")),
    (RUNTIME, ("start", "end", "nameId", "globalTid", "correlationId")),
    ("CUPTI_ACTIVITY_KIND_MEMCPY", ("start", "end", "copyKind", "bytes", "deviceId", "correlationId")),
    ("CUPTI_ACTIVITY_KIND_MEMSET", ("start", "end", "bytes", "deviceId")),
    (GRAPH, ("start", "end", "graphId", "correlationId", "globalPid")),
    ("NVTX_EVENTS", ("start", "end", "eventType", "textId", "domainId", "globalTid")),
    ("StringIds", ("id",)),
    ("TARGET_INFO_GPU", ("id", "smCount")),
)


def _long_case(rng: random.Random, src: Path, directory: Path) -> Plan:
    path = _copy(src, directory / "long.sqlite")
    con = sqlite3.connect(path)
    try:
        present = {
            (t, c)
            for t, c in con.execute(
                "SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table'"
            )
        }
    finally:
        con.close()
    choices = [(t, c) for t, cols in _INTEGERS for c in cols if (t, c) in present]
    mutation = "long text: no integer column in this seed"
    if choices:
        table, column = rng.choice(choices)
        mutation = f"long text: {table}.{column} ({LONG_TEXT:,} characters in up to {LONG_ROWS:,} rows)"
        try:
            tamper(
                path,
                f"UPDATE {table} SET \"{column}\" = printf('%.*c', {LONG_TEXT}, 'x') "
                f"WHERE rowid IN (SELECT rowid FROM {table} LIMIT {LONG_ROWS})",
            )
        except sqlite3.Error as e:  # an INTEGER PRIMARY KEY takes no text
            mutation += f" refused by SQLite ({e})"
    base = _copy(src, directory / "base.sqlite")
    argv = rng.choice(
        (
            ["summary", str(path), "--format", "json"],
            ["summary", str(path), "--per", "auto"],
            ["diff", str(base), str(path), "--format", "markdown"],
            ["diff", str(base), str(path), "--rules", "tpot"],
            ["fingerprint", str(path), "-o", str(directory / "out.json")],
        )
    )
    return Plan(mutation, argv, [path, base], ("out.json",))
