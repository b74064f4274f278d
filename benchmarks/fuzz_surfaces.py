"""The fuzzer's cases beyond traces (``benchmarks/fuzz.py`` draws them): history stores, the
pull-request comment client against a hostile server, step-range bombs and the Action's
inputs. Each case is a :class:`Plan`: the command, its inputs, and what to check after.

- **stores**: a store built by ``history add``, then a FIFO in its place, a foreign schema
  object written through ``writable_schema`` (a trigger or view named ``sqlite_sequence``,
  a table, an index), an odd column type (REAL ids, TEXT counts, BLOB refs), a fingerprint
  blob holding NaN or Infinity, or a report page hard-linked to the store; read by
  ``history list|show|changes|report|add`` and ``diff --base history:STORE@main``.
- **comment**: ``nsysdiff comment`` against a server on 127.0.0.1 that redirects to another
  origin (host name or port), drips its answer byte by byte, cuts its body short, sends a
  malformed status line, oversized or too many headers, deep, invalid or ill-typed JSON,
  ``Retry-After: nan``. A second server catches whatever a redirect sends elsewhere: the
  token reaching it is a leak.
- **steps**: a trace with up to a million empty ``decode_step`` ranges, read with
  ``--per`` and under ``--rules tpot``.
- **action**: the Action's diff step (from ``action.yml``, run by bash) with base,
  candidate and rules lines that start with ``-``; an input line reaching nsysdiff as an
  option of its own is an injected option.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from nsysdiff import api
from nsysdiff.cli import github_api
from nsysdiff.errors import NsysdiffError
from nsysdiff.fingerprint.model import fingerprint_to_json
from nsysdiff.fingerprint.scope import STEPS_ALWAYS
from nsysdiff.synth.builder import TraceBuilder

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from histories import tamper_store  # noqa: E402  (the tests' helpers, on the path just above)
from rawhttp import RawServer, json_reply  # noqa: E402
from stepspec import add_empty_steps  # noqa: E402

TOKEN = "ghp_FUZZTOKEN0123456789"  # a leak is this string reaching the catching server
DEADLINE = 3.0  # the comment client's deadline in a fuzz case (120 s in use)


@dataclass
class Plan:
    mutation: str
    argv: list[str]
    inputs: list[Path]  # digested before and after (regular files only)
    outputs: tuple[str, ...] = ()  # names the command may create beside its inputs
    env: dict[str, str] = field(default_factory=dict)
    run: Callable[[list[str]], int] | None = None  # in the child instead of the CLI
    after: Callable[[], list[str]] = lambda: []  # problems found once the child is done
    expect: tuple[int, ...] = ()  # the exit codes the contract allows (empty: any of 0-3)


def make(rng: random.Random, src: Path, fp_text: str, directory: Path, traces: Path | None) -> Plan:
    kind = rng.choice(("store", "store", "comment", "comment", "steps", "action"))
    if kind == "store":
        return _store_case(rng, fp_text, directory)
    if kind == "comment":
        return _comment_case(rng, directory)
    if kind == "steps":
        return _steps_case(rng, directory, traces)
    return _action_case(rng, src, directory)


# --- history stores ------------------------------------------------------------------------


def _store(fp_text: str, directory: Path) -> Path:
    fp = directory / "fp.json"
    fp.write_text(fp_text, encoding="utf-8")
    path = directory / "h.sqlite"
    try:
        api.history_add(path, [fp], ref="main", commit="c0")
    except NsysdiffError:  # a seed a store refuses (names past 512 characters): a built one
        path.unlink(missing_ok=True)
        fp.write_text(fingerprint_to_json(api.load(_steps_trace(directory / "s.sqlite"))), encoding="utf-8")
        (directory / "s.sqlite").unlink()
        api.history_add(path, [fp], ref="main", commit="c0")
    api.history_add(path, [fp], ref="main", commit="c1")
    return path


_FORGED = (
    "INSERT INTO sqlite_master VALUES ('trigger', 'sqlite_sequence', 'entries', 0, "
    "'CREATE TRIGGER sqlite_sequence AFTER INSERT ON entries BEGIN SELECT 1; END')",
    "INSERT INTO sqlite_master VALUES ('view', 'sqlite_sequence', 'sqlite_sequence', 0, "
    "'CREATE VIEW sqlite_sequence AS SELECT 1')",
    "CREATE TABLE extra (x)",
    "CREATE INDEX extra_i ON entries (ref)",
    "CREATE VIEW v AS SELECT * FROM entries",
)


def _odd_types(path: Path, rng: random.Random) -> str:
    con = sqlite3.connect(path)
    cols = {
        t: [(r[1], r[2]) for r in con.execute(f"PRAGMA table_info({t})")]
        for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'")
    }
    con.close()
    for _ in range(20):  # a value a constraint refuses: another column
        table = rng.choice(sorted(cols))
        column, _ = rng.choice(cols[table])
        value = rng.choice((2.0, 1.5, "7", b"\x00\x01", -1, 2**63 - 1, float("nan"), None))
        try:
            one = f"rowid = (SELECT min(rowid) FROM {table})"
            tamper_store(path, f'UPDATE {table} SET "{column}" = ? WHERE {one}', (value,))
        except sqlite3.Error:
            continue
        return f"{table}.{column} = {value!r}"
    return "no column took an odd value"


def _nan_blob(path: Path, fp_text: str, rng: random.Random) -> str:
    constant = rng.choice(("NaN", "Infinity", "-Infinity"))
    where = rng.choice(('"scope": {', '"kernels": ['))
    text = fp_text.replace(where, f'"extra": {{"deep": [{constant}]}}, {where}', 1)
    if rng.random() < 0.5:
        text = text.replace('"total_ns": ', f'"total_ns": {constant}, "x": ', 1)
    tamper_store(path, "UPDATE entries SET fingerprint = ?", (zlib.compress(text.encode()),))
    return f"{constant} in a stored fingerprint"


def _store_case(rng: random.Random, fp_text: str, directory: Path) -> Plan:
    path = _store(fp_text, directory)
    fp = directory / "fp.json"
    roll = rng.choice(("fifo", "forged", "types", "nan", "hardlink"))
    reads = [
        ["history", "list", str(path)],
        ["history", "show", str(path), "whole"],
        ["history", "changes", str(path)],
        ["history", "report", str(path), "-o", str(directory / "site")],
        ["diff", "--base", f"history:{path}@main", str(fp), "--format", "json"],
    ]
    if roll == "fifo":
        path.unlink()
        os.mkfifo(path)
        argv = rng.choice([*reads, ["history", "add", str(path), str(fp), "--ref", "main", "--commit", "c2"]])
        return Plan("history store: a FIFO", argv, [fp], ("site",), expect=(2,))
    if roll == "forged":
        sql = rng.choice(_FORGED)
        tamper_store(path, sql)
        add = ["history", "add", str(path), str(fp), "--ref", "main", "--commit", "c2", "--failed"]
        argv = rng.choice([*reads, add])
        return Plan(f"history store: {sql[:60]}", argv, [path, fp], ("site",), expect=(2,))
    if roll == "types":
        what = _odd_types(path, rng)
        return Plan(f"history store: {what}", rng.choice(reads), [path, fp], ("site",))
    if roll == "nan":
        what = _nan_blob(path, fp_text, rng)
        return Plan(f"history store: {what}", rng.choice(reads), [path, fp], ("site",))
    site = directory / "site"
    site.mkdir()
    page = rng.choice(("index.html", "whole.html", "style.css"))
    os.link(path, site / page)
    # index.html is always written, so it must be refused; a name the site may not hold
    # (a key's page is named after the key) may pass, the store untouched either way.
    expect = (2,) if page == "index.html" else ()
    return Plan(f"history report: site/{page} hard-linked to the store", reads[3], [path, fp], expect=expect)


# --- the comment client --------------------------------------------------------------------


DEEP = b"[" * 200_000 + b"]" * 200_000
_REPLIES: dict[str, bytes] = {
    "deep JSON": json_reply("200 OK", DEEP),
    "a 500 with deep JSON": json_reply("500 Internal Server Error", DEEP),
    "invalid JSON": json_reply("200 OK", b"[{"),
    "JSON of the wrong shape": json_reply("200 OK", b'{"id": "x"}'),
    "comments of the wrong types": json_reply("200 OK", b'[{"id": "1", "body": 5, "user": null}]'),
    "NaN in JSON": json_reply("200 OK", b'[{"id": NaN, "body": "x"}]'),
    "a bad status line": b"HTTP/1.1 \x1b]0;x\x07 WHAT\r\n\r\n",
    "no status line": b"\r\n\r\n",
    "HTTP/0.9": b"[]",
    "a cut-short body": json_reply("200 OK", b"[]")[:-2].replace(b"Content-Length: 2", b"Content-Length: 900"),
    "a header over 64 KiB": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n[]",
    "120 headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: 1\r\n" % i for i in range(120)) + b"\r\n[]",
    "Retry-After: nan": json_reply("429 Too Many Requests", b'{"message": "slow"}', b"Retry-After: nan\r\n"),
    "Retry-After: 1e308": json_reply("429 Too Many Requests", b'{"message": "slow"}', b"Retry-After: 1e308\r\n"),
    "X-RateLimit-Reset: nan": json_reply(
        "403 Forbidden", b'{"message": "slow"}', b"X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: nan\r\n"
    ),
    "terminal bytes in the reason": b"HTTP/1.1 500 \x1b[2J\x07\r::error::PWNED\r\n\r\n",
    "an error message with workflow commands": json_reply(
        "422 Unprocessable", b'{"message": "x\\n::error::PWNED\\r\\u001b[2J\\u0007"}'
    ),
    "chunked garbage": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
}


def _comment_case(rng: random.Random, directory: Path) -> Plan:
    report = directory / "report.md"
    report.write_text("**nsysdiff: FAIL** (exit 1)\n\n::error::PWNED\n| a |\n|--|\n| 1 |\n", encoding="utf-8")
    event = directory / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}), encoding="utf-8")
    catcher = RawServer(lambda head: json_reply("200 OK", b"[]"))
    roll = rng.random()
    if roll < 0.3:
        port = catcher.url.rsplit(":", 1)[1]
        target = rng.choice((catcher.url, f"http://localhost:{port}", f"http://[::1]:{port}"))
        code = rng.choice(("301 Moved", "302 Found", "307 Temporary Redirect", "308 Permanent Redirect"))
        redirect = f"HTTP/1.1 {code}\r\nLocation: {target}/x\r\nContent-Length: 0\r\n\r\n".encode()
        server = RawServer(lambda head: redirect)
        mutation = f"comment: {code.split()[0]} to {target.split('//')[1].rsplit(':', 1)[0]}"
    elif roll < 0.4:
        reply = json_reply("200 OK", b"[]")
        server = RawServer(lambda head: [reply[i : i + 1] for i in range(len(reply))], drip=0.3)
        mutation = "comment: an answer that drips"
    else:
        name = rng.choice(sorted(_REPLIES))
        server = RawServer(lambda head: _REPLIES[name])
        mutation = f"comment: {name}"
    env = {
        "GITHUB_API_URL": server.url,
        "GITHUB_REPOSITORY": "octo/gpu",
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_STEP_SUMMARY": str(directory / "step-summary.md"),
        "GITHUB_ACTIONS": "true",
    }
    if rng.random() < 0.1:  # a FIFO as the report or the event payload
        fifo = directory / "fifo"
        os.mkfifo(fifo)
        if rng.random() < 0.5:
            report = fifo
        else:
            env["GITHUB_EVENT_PATH"] = str(fifo)
        mutation += ", a FIFO"

    def after() -> list[str]:
        server.close()
        catcher.close()
        return ["token leak"] if any(TOKEN.encode() in h for h in catcher.heads) else []

    def run(argv: list[str]) -> int:
        github_api.DEADLINE = DEADLINE
        return _cli(argv)

    inputs = [p for p in (report, event) if p.is_file()]
    # A comment not posted is no failed rule (exit 0, one line); a FIFO is a usage error.
    expect = (2,) if "FIFO" in mutation else (0,)
    return Plan(mutation, ["comment", str(report), "--key", "fuzz"], inputs, (), env, run, after, expect)


def _cli(argv: list[str]) -> int:
    from nsysdiff import cli

    sys.argv = ["nsysdiff", *argv]
    try:
        cli.main()
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


# --- step-range bombs ----------------------------------------------------------------------


def _steps_trace(path: Path) -> Path:
    b = TraceBuilder()
    us = 1_000
    for i in range(4):
        t = 100 * us + i * 200 * us
        b.launch("gemm", t, t + 10 * us, 30 * us, api_duration=5 * us)
        b.launch("relu", t + 20 * us, t + 50 * us, 5 * us, api_duration=5 * us)
        b.nvtx_range("decode_step", t, t + 150 * us)
    return b.write(path)


def _steps_case(rng: random.Random, directory: Path, traces: Path | None) -> Plan:
    real = traces / "h100" / "llm_bs1.sqlite" if traces else None
    good = directory / "good.sqlite"
    if real is not None and real.is_file() and rng.random() < 0.3:
        shutil.copyfile(real, good)
        n, steps = rng.choice((100_000, 1_000_000)), 32  # its 22,936 launches: past them
    else:
        _steps_trace(good)
        n, steps = rng.choice((5, STEPS_ALWAYS, STEPS_ALWAYS + 1, 50_000, 200_000)), 4
    bomb = directory / "bomb.sqlite"
    shutil.copyfile(good, bomb)
    length = rng.choice((0, 0, 1))
    add_empty_steps(bomb, n, length)
    fmt = rng.choice(("text", "json", "markdown", "github"))
    argv = rng.choice(
        (
            ["summary", str(bomb), "--per", "decode_step", "--format", fmt],
            ["fingerprint", str(bomb), "--per", "decode_step", "-o", str(directory / "out.json")],
            ["diff", str(good), str(bomb), "--rules", "tpot", "--format", fmt],
            ["diff", str(bomb), str(bomb), "--rules", "tpot", "--format", fmt],
            ["diff", str(good), str(bomb), "--per", "decode_step", "--format", fmt],
        )
    )
    # Past the rule, --per (the user named the range) is refused, and a pack's range is as
    # absent: both sides whole (exit 0), or steps on one side only against the good trace,
    # which auto steps stand in for or which is inconclusive (exit 3). Below it, any verdict.
    expect: tuple[int, ...] = ()
    if n + steps > STEPS_ALWAYS:
        expect = (2,) if "--per" in argv else (0, 3)
    return Plan(f"steps: {n:,} ranges of {length} ns", argv, [good, bomb], ("out.json",), expect=expect)


# --- the Action's inputs -------------------------------------------------------------------


_DASHED = ("--no-rules", "-x.sqlite", "--rules=none", "-", "--", "--help", "--base=/etc/passwd", "-o/tmp/x")


def _diff_script() -> str:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    (step,) = [s for s in action["runs"]["steps"] if s.get("id") == "diff"]
    return str(step["run"])


def _action_case(rng: random.Random, src: Path, directory: Path) -> Plan:
    good = directory / "base.sqlite"
    shutil.copyfile(src, good)
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "nsysdiff"
    wrapper.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" > "$FUZZ_ARGS"\nexec "{sys.executable}" -m nsysdiff "$@"\n', encoding="utf-8"
    )
    wrapper.chmod(0o755)
    script = directory / "diff.sh"
    script.write_text(_diff_script(), encoding="utf-8")

    def lines(k: int) -> list[str]:
        return [rng.choice(_DASHED) for _ in range(k)]

    base = lines(rng.choice((1, 2))) if rng.random() < 0.6 else [str(good)]
    cand = lines(rng.choice((1, 2))) if rng.random() < 0.5 or base == [str(good)] else [str(good)]
    rules = " ".join(lines(rng.choice((0, 1, 2))))
    dashed = [x for x in [*base, *cand, *rules.split()] if x.startswith("-")]
    env = {
        "INPUT_BASE": "\n".join(base),
        "INPUT_CANDIDATE": "\n".join(cand),
        "INPUT_RULES": rules,
        "INPUT_NOISE_PROFILE": rng.choice(("", "--no-rules")),
        "INPUT_FORMAT": "markdown",
        "INPUT_STRICT": "false",
        "INPUT_FAIL_ON_INCONCLUSIVE": "true",
        "RUNNER_TEMP": str(directory / "runner"),
        "GITHUB_OUTPUT": str(directory / "github-output.txt"),
        "NSYSDIFF_BIN": str(bin_dir),
        "FUZZ_ARGS": str(directory / "runner" / "args"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT)),
    }
    args_file = directory / "runner" / "args"
    args_file.parent.mkdir()

    def run(argv: list[str]) -> int:
        bash = shutil.which("bash") or "/bin/bash"
        p = subprocess.run(
            [bash, "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=directory,
            env={**os.environ},
            stdout=sys.stdout,
            stderr=sys.stderr,
            timeout=120,
            check=False,
        )
        sys.stdout.flush()
        out = (directory / "github-output.txt").read_text(encoding="utf-8", errors="replace")
        codes = [line.split("=", 1)[1] for line in out.splitlines() if line.startswith("exit-code=")]
        return int(codes[-1]) if codes and codes[-1].isdigit() else (p.returncode or 70)

    def after() -> list[str]:
        if not args_file.exists():
            return []
        args = args_file.read_text(encoding="utf-8").splitlines()
        cut = args.index("--") if "--" in args else len(args)
        # An input line is a path or an --x=LINE: never an argument of its own before "--".
        own = {"--strict", "--output", "--format=markdown", *(a for a in args if a.startswith("--rules="))}
        loose = [a for a in args[:cut] if a in dashed and a not in own]
        return [f"option injected: {a!r}" for a in loose]

    argv = ["action diff step", f"base={base}", f"candidate={cand}", f"rules={rules!r}"]
    # Every case has a line starting with "-": read as a path (or a rule file), it names
    # nothing, so the step records exit 2; an option would give 0 or 1.
    mutation = f"action: {len(dashed)} input line(s) starting with '-'"
    return Plan(mutation, argv, [good], ("runner",), env, run, after, (2,))
