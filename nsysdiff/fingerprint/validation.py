"""Validation of saved fingerprints: parse strictly, check the JSON Schema, then the semantics.

A fingerprint may come from another job, edited by hand or by an adversary, so it is
read like untrusted input:

1. **Parsing** refuses what Python's ``json`` would otherwise accept or crash on: ``NaN``
   and ``Infinity``, integers too long to be an int64 (Python raises past 4300 digits),
   and nesting deep enough to exhaust the stack.
2. **The schema** (``nsysdiff/schemas/fingerprint.schema.json``, documented in
   ``docs/json.md``) fixes every type and range: non-negative int64 counts and
   nanoseconds, at least one call per listed kernel, 15 finite quantiles...
3. **Semantic checks** a schema can't express: keys unique within each list (two rows for
   one kernel would be summed twice), per-device shares that add up to the kernel's
   totals, quantiles in order around the mean, busy time within the span, steps whose
   parts add up to their period and whose periods reach the next step's start.

Every failure is one line naming the file and the JSON path of the first bad value.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterator, Sequence
from importlib import resources
from typing import Any

from nsysdiff.errors import FingerprintError
from nsysdiff.fingerprint.steps import COUNTED_BEFORE_MEMSETS, StepPart
from nsysdiff.trace.records import HostFamily

# Longest integer literal read as an integer: an int64 has at most 19 digits and a sign.
_MAX_DIGITS = 20
_INT64_MAX = (1 << 63) - 1


class _Refused:
    """A parsed value the schema rejects by type: NaN, Infinity, an over-long integer.

    Parsing hands it on instead of raising so the error names the value's JSON path.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _parse_int(text: str) -> int | _Refused:
    digits = len(text.lstrip("-"))
    if digits > _MAX_DIGITS:
        return _Refused(f"an integer of {digits} digits")
    return int(text)


def _parse_constant(text: str) -> _Refused:
    return _Refused(text)  # NaN, Infinity, -Infinity: not JSON


def parse(text: str, source: str, what: str = "fingerprint") -> Any:
    """JSON text as Python data, refusing what no fingerprint holds (see module doc)."""
    constants: list[_Refused] = []

    def constant(word: str) -> _Refused:
        constants.append(_parse_constant(word))
        return constants[-1]

    try:
        doc = json.loads(
            text,
            parse_int=_parse_int,
            parse_constant=constant,
            object_pairs_hook=functools.partial(_unique_keys, source),
        )
    except json.JSONDecodeError as e:
        raise FingerprintError(f"{source}: not valid JSON (line {e.lineno}: {e.msg})") from None
    except RecursionError:
        raise FingerprintError(f"{source}: not a {what} (JSON nested too deeply)") from None
    if constants:
        # Wherever it is: under a key the schema doesn't know, a NaN would pass it and
        # reach whatever reads the document next (a run set's runs are re-validated alone).
        path, value = _first_refused(doc)
        raise FingerprintError(f"{source}: malformed {what} at {path}: {value} is not of type 'number'")
    return doc


def _first_refused(doc: Any) -> tuple[str, _Refused]:
    """The JSON path of the first NaN or Infinity in ``doc``, depth first, without recursion
    (the parser allows deeper nesting than a recursive walk would)."""
    stack: list[tuple[str, Any]] = [("$", doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _Refused) and not value.text.startswith("an integer"):
            return path, value
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}", v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    raise AssertionError("a parsed constant is in the document")


def _unique_keys(source: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique: with two "runs" (or two of any key) the
    parser would keep the last, silently, so a document could show one value and mean another."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise FingerprintError(f"{source}: the key {_short(repr(key), 80)} appears twice in one object")
    return out


def redump(value: Any) -> str:
    """A parsed part of a document back to JSON text, to be validated on its own (a run of
    a run set or a noise profile): a value :func:`parse` refused stays refused, written as
    a string that names it ("an integer of 22 digits"), which the schema then rejects."""
    return json.dumps(value, default=repr)


@functools.cache
def _validator(schema: str = "fingerprint") -> Any:
    from jsonschema import Draft202012Validator  # imported only when a fingerprint is read

    text = resources.files("nsysdiff").joinpath(f"schemas/{schema}.schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    return Draft202012Validator(schema, format_checker=None)


def schema_path() -> str:
    """Where the packaged schema lives (for the docs and ``--help``)."""
    return str(resources.files("nsysdiff").joinpath("schemas/fingerprint.schema.json"))


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def check_schema(doc: Any, source: str, *, schema: str = "fingerprint", what: str = "fingerprint") -> None:
    """Raise on the first violation of ``schemas/SCHEMA.schema.json``, naming its JSON path."""
    from jsonschema.exceptions import best_match

    try:
        error = best_match(_validator(schema).iter_errors(doc))
    except RecursionError:
        raise FingerprintError(f"{source}: not a {what} (JSON nested too deeply)") from None
    if error is not None:
        raise FingerprintError(f"{source}: malformed {what} at {error.json_path}: {_short(error.message)}")


def _unique(items: Sequence[Any], key: Any, path: str) -> Iterator[str]:
    seen: dict[object, int] = {}
    for i, item in enumerate(items):
        k = key(item)
        if k in seen:
            yield f"{path}[{i}]: duplicate of {path}[{seen[k]}] ({_short(repr(k), 80)})"
        seen.setdefault(k, i)


def _body_problems(body: dict[str, Any], path: str) -> Iterator[str]:
    meta = body["meta"]
    start, end = meta["capture_start_ns"], meta["capture_end_ns"]
    if start is not None and end is not None and end < start:
        yield f"{path}.meta.capture_end_ns: before capture_start_ns"
    yield from _unique(meta["gpus"], lambda g: g["id"], f"{path}.meta.gpus")
    kernels = body["kernels"]
    yield from _unique(kernels, lambda k: k["demangled"], f"{path}.kernels")
    for i, k in enumerate(kernels):
        where = f"{path}.kernels[{i}]"
        shares = k["devices"]
        yield from _unique(shares, lambda d: d["device"], f"{where}.devices")
        if sum(d["calls"] for d in shares) != k["calls"]:
            yield f"{where}.devices: calls per device don't add up to calls ({k['calls']})"
        if sum(d["total_ns"] for d in shares) != k["total_ns"]:
            yield f"{where}.devices: total_ns per device don't add up to total_ns ({k['total_ns']})"
        counted = [c.get("calls") for c in k["configs"]]
        if counted and None not in counted and sum(counted) != k["calls"]:
            yield f"{where}.configs: calls per configuration don't add up to calls ({k['calls']})"
        q = k["quantiles_ns"]
        if any(b < a for a, b in itertools.pairwise(q)):
            yield f"{where}.quantiles_ns: not in increasing order"
        mean = k["total_ns"] / k["calls"]
        slack = 1.0 + 1e-9 * mean  # float rounding of the quantiles
        if not q[0] - slack <= mean <= q[-1] + slack:
            yield f"{where}: mean per call {mean:.6g} ns outside [min, max] of quantiles_ns"
    yield from _unique(body["categories"], lambda g: g["name"], f"{path}.categories")
    yield from _unique(body["memcpy"], lambda c: c["kind"], f"{path}.memcpy")
    yield from _unique(body["memset"], lambda c: c["kind"], f"{path}.memset")
    yield from _unique(body["sync"], lambda a: a["name"], f"{path}.sync")
    yield from _unique(body.get("api") or [], lambda a: a["name"], f"{path}.api")
    for i, a in enumerate(body.get("api") or []):
        if not a["min_ns"] <= a["median_ns"] <= a["max_ns"] or a["total_ns"] < a["calls"] * a["min_ns"]:
            yield f"{path}.api[{i}]: min_ns, median_ns, max_ns and total_ns disagree"
    yield from _unique(body["nvtx"], lambda r: (r["domain"], r["name"]), f"{path}.nvtx")
    yield from _unique(body["devices"], lambda d: d["device"], f"{path}.devices")
    for i, d in enumerate(body["devices"]):
        if d["busy_ns"] > d["span_ns"] or d["busy_ns"] > d["kernel_ns"]:
            yield f"{path}.devices[{i}].busy_ns: larger than span_ns or kernel_ns"
    if sum(k["total_ns"] for k in kernels) > _INT64_MAX:
        yield f"{path}.kernels: total_ns sums past the int64 range"
    yield from _rank_problems(body.get("ranks", []), f"{path}.ranks")
    if body.get("steps") is not None:
        yield from _steps_problems(body["steps"], f"{path}.steps")
    phases = body.get("phases", [])
    yield from _unique(phases, lambda p: p["name"], f"{path}.phases")
    for i, p in enumerate(phases):
        yield from _body_problems(p["fingerprint"], f"{path}.phases[{i}].fingerprint")


def check_semantics(doc: dict[str, Any], source: str) -> None:
    """Raise on the first inconsistency the schema can't see (``doc`` passed the schema)."""
    for problem in _body_problems(doc, "$"):
        raise FingerprintError(f"{source}: malformed fingerprint at {problem}")


def _rank_problems(ranks: Sequence[dict[str, Any]], path: str) -> Iterator[str]:
    yield from _unique(ranks, lambda r: r["rank"], path)
    for i, r in enumerate(ranks):
        where = f"{path}[{i}]"
        if r["busy_ns"] > r["span_ns"] or r["busy_ns"] > r["kernel_ns"]:
            yield f"{where}.busy_ns: larger than span_ns or kernel_ns"
        shares = r.get("collectives", [])
        yield from _unique(shares, lambda c: c["op"], f"{where}.collectives")
        if sum(c["calls"] for c in shares) > r["kernels"] or sum(c["total_ns"] for c in shares) > r["kernel_ns"]:
            yield f"{where}.collectives: more calls or time than the rank's kernels"


_PARTS = tuple(f"{p.value}_ns" for p in StepPart)  # the fields of StepParts
_FAMILIES = tuple(f.value for f in HostFamily)


def _steps_problems(steps: dict[str, Any], path: str) -> Iterator[str]:
    """The accounting of docs/steps.md, checked: a fingerprint that breaks it would show
    parts that don't add up, or times per step that no trace could give."""
    rows = steps["steps"]
    totals: dict[str, list[int]] = {f: [0, 0, 0] for f in _FAMILIES}
    # Without ``counted`` the steps were saved before memsets were counted: none are listed.
    counted = steps.get("counted", [f.value for f in COUNTED_BEFORE_MEMSETS])
    last_is_duration = steps.get("last_period_is_duration", True)
    for i, st in enumerate(rows):
        where = f"{path}.steps[{i}]"
        following = rows[i + 1] if i + 1 < len(rows) else None
        yield from _period_problems(st, i, following, last_is_duration, where)
        yield from _calls_problems(st["calls"], totals, where)
    yield from _call_times_problems(steps["call_times"], totals, path)
    for family, t in totals.items():
        if t[0] and family not in counted:
            yield f"{path}.counted: the steps call {family}, which it does not list"


def _period_problems(
    st: dict[str, Any], i: int, following: dict[str, Any] | None, last_is_duration: bool, where: str
) -> Iterator[str]:
    """One step's period: it reaches the next step's start and splits into its parts."""
    period, duration = st["period_ns"], st["duration_ns"]
    if i == 0 and st["start_ns"] != 0:
        yield f"{where}.start_ns: the first step starts at 0"
    if following is not None:
        if following["start_ns"] - st["start_ns"] != period:
            yield f"{where}.period_ns: not the time to the next step's start"
    elif last_is_duration and period != duration:
        yield f"{where}.period_ns: the last step's period is its duration"
    parts = st["parts"]
    if sum(parts[k] for k in _PARTS) != period:
        yield f"{where}.parts: don't add up to period_ns ({period})"
    if parts["between_ns"] != max(0, period - duration):
        yield f"{where}.parts.between_ns: not the time from the range's end to the next start"


def _calls_problems(calls: Sequence[dict[str, Any]], totals: dict[str, list[int]], where: str) -> Iterator[str]:
    """One step's host calls, added to ``totals`` (calls, total ns, bytes per family)."""
    yield from _unique(calls, lambda c: c["family"], f"{where}.calls")
    order = [_FAMILIES.index(c["family"]) for c in calls]
    if order != sorted(order):
        yield f"{where}.calls: not in family order"
    for j, c in enumerate(calls):
        if c.get("bytes", 0) and not HostFamily(c["family"]).copies:
            yield f"{where}.calls[{j}].bytes: only copies move bytes"
        t = totals[c["family"]]
        t[0] += c["calls"]
        t[1] += c["total_ns"]
        t[2] += c.get("bytes", 0)


def _call_times_problems(times: Sequence[dict[str, Any]], totals: dict[str, list[int]], path: str) -> Iterator[str]:
    """The call times across the steps: the steps' sums, and a tail in order."""
    yield from _unique(times, lambda c: c["family"], f"{path}.call_times")
    for j, c in enumerate(times):
        where = f"{path}.call_times[{j}]"
        if [c["calls"], c["total_ns"], c["bytes"]] != totals[c["family"]]:
            yield f"{where}: calls, total_ns or bytes don't add up over the steps"
        tail = [c["p50_ns"], c["p90_ns"], c["p99_ns"], c["max_ns"]]
        if any(b < a for a, b in itertools.pairwise(tail)) or c["total_ns"] > c["max_ns"] * c["calls"]:
            yield f"{where}: p50, p90, p99 and max not in order around the mean"
    listed = {c["family"] for c in times}
    for family, t in totals.items():
        if t[0] and family not in listed:
            yield f"{path}.call_times: no row for {family}, which the steps call"
