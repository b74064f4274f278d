"""Read the ranks of a trace: per (process, device) pair, its kernels and collectives, in SQLite.

One scan of the kernel table, grouped by (process, device, collective operation): the busy
union of each pair is computed in start order by a window function (as the reader's
per-device busy scan does), and the few NCCL kernel names are classified in Python before
the scan, from ``StringIds``, into a small temporary table the scan joins by id. Memory
holds one row per (pair, operation), whatever the number of launches.

The queries go through the reader's own plumbing (``query``, ``verify``, ``execute``), so
that a damaged file fails here with the same one-line messages as everywhere else.
"""

from __future__ import annotations

from nsysdiff.trace import schema as s
from nsysdiff.trace.checks import RowRules
from nsysdiff.trace.collectives import collective_op, label
from nsysdiff.trace.connection import split_checks
from nsysdiff.trace.names import name_text
from nsysdiff.trace.reader import TraceReader
from nsysdiff.trace.records import CollectiveShare, JobIdentity, RankStats

_COLL = "nsysdiff_coll"


def _collective_ids(r: TraceReader, name_col: str) -> dict[int, str]:
    """StringIds ids of NCCL kernel names and their operation (a LIKE over the strings, not
    the launches: a few names however large the trace)."""
    if not r.schema.has("StringIds", "id", "value"):
        return {}
    rows = r.query(
        "SELECT id, value FROM StringIds WHERE typeof(id) = 'integer' AND "
        "(value LIKE 'nccl%' OR value LIKE 'void nccl%')"
    )
    out = {}
    for i, value in rows:
        op = collective_op(name_text(value))
        if op is not None:
            out[int(i)] = op  # type: ignore[call-overload]
    return out


def _rules(r: TraceReader) -> RowRules:
    """What the rank scans need of every kernel row: integer times and device, and an
    integer (or NULL) process id and name."""
    cols = r.schema.tables[s.KERNEL]
    nullable = tuple(c for c in ("globalPid", "shortName" if "shortName" in cols else "demangledName") if c in cols)
    return RowRules(s.KERNEL, ids=("deviceId",), nullable=nullable)


def pairs(r: TraceReader) -> tuple[tuple[int, int | None], ...]:
    """The distinct (device, process id) pairs that ran kernels, by device then process; a
    NULL device is -1 (as in the reader's scans). A DISTINCT scan builds a b-tree of the few
    pairs: about a fiftieth of the time of a fingerprint, where :func:`read` sorts every launch."""
    if not r.schema.has(s.KERNEL, "start", "end", "deviceId"):
        return ()
    rows = r.kernel_pairs()
    if rows is None:  # no whole-trace read of the kernels has seen them yet
        gpid = "globalPid" if "globalPid" in r.schema.tables[s.KERNEL] else "NULL"
        rows = r.query(f"SELECT DISTINCT coalesce(deviceId, -1), {gpid} FROM {s.KERNEL}")
    out = set()
    for dev, g in rows:
        if type(dev) is not int or (g is not None and type(g) is not int):
            # nsys writes integer ids: a damaged row is named, as every scan names it.
            raise r.diagnose(_rules(r), "1")
        out.add((dev, None if g is None else (g >> 24) & 0xFFFFFF))
    return tuple(sorted(out, key=lambda k: (k[0], -1 if k[1] is None else k[1])))


def read(r: TraceReader) -> tuple[RankStats, ...]:
    """Every (process, device) pair that ran kernels, ordered by device then process and
    numbered from 0 in that order. Exports without ``globalPid`` give one rank per device."""
    if not r.schema.has(s.KERNEL, "start", "end", "deviceId"):
        return ()
    cols = r.schema.tables[s.KERNEL]
    name_col = "shortName" if "shortName" in cols else "demangledName"
    has_names = name_col in cols
    pid = "(k.globalPid >> 24) & 16777215" if "globalPid" in cols else "NULL"
    ops = _collective_ids(r, name_col) if has_names else {}
    join, op = "", "NULL"
    if ops:
        r.execute(f"DROP TABLE IF EXISTS temp.{_COLL}")
        r.execute(f"CREATE TEMP TABLE {_COLL} (id INTEGER PRIMARY KEY, op TEXT)")
        r.con.executemany(f"INSERT INTO temp.{_COLL} VALUES (?, ?)", sorted(ops.items()))
        join, op = f"LEFT JOIN temp.{_COLL} c ON c.id = k.{name_col}", "c.op"
    rules = _rules(r)
    reach = (
        f'max(k."end") OVER (PARTITION BY {pid}, k.deviceId ORDER BY k.start '
        "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    )
    # The checked columns under their own names, for the RowRules aggregates.
    names = "".join(f", k.{c} AS {c}" for c in rules.nullable)
    rows, checks = split_checks(
        r.query(
            f'SELECT pid, coalesce(deviceId, -1), op, count(*), sum("end" - start), sum(max(0, gain)), '
            f'min(start), max("end"), {rules.sql()} FROM ('
            f'SELECT {pid} AS pid, k.deviceId AS deviceId, {op} AS op, k.start AS start, k."end" AS "end"{names}, '
            f'k."end" - max(k.start, coalesce({reach}, k.start)) AS gain FROM {s.KERNEL} k {join}'
            ") GROUP BY pid, deviceId, op"
        )
    )
    r.verify(rules, "1", checks)
    # One row per (pair, operation): fold the operations of each pair.
    totals: dict[tuple[int, int | None], list[int]] = {}
    shares: dict[tuple[int, int | None], list[CollectiveShare]] = {}
    for p, dev, coll, *figures in rows:
        key = (int(dev), None if p is None else int(p))  # type: ignore[call-overload]
        calls, total, busy, first, last = (int(x) for x in figures)  # type: ignore[call-overload]
        acc = totals.setdefault(key, [0, 0, 0, first, last])
        acc[0] += calls
        acc[1] += total
        acc[2] += busy
        acc[3], acc[4] = min(acc[3], first), max(acc[4], last)
        if coll is not None:
            shares.setdefault(key, []).append(CollectiveShare(str(coll), calls, total))
    order = sorted(totals, key=lambda k: (k[0], -1 if k[1] is None else k[1]))
    return tuple(
        RankStats(
            rank=n,
            label=label(None if dev == -1 else dev, p),
            pid=p,
            device=None if dev == -1 else dev,
            kernels=totals[(dev, p)][0],
            kernel_ns=totals[(dev, p)][1],
            busy_ns=totals[(dev, p)][2],
            span_ns=totals[(dev, p)][4] - totals[(dev, p)][3],
            collectives=tuple(sorted(shares.get((dev, p), ()), key=lambda c: c.op)),
        )
        for n, (dev, p) in enumerate(order)
    )


def identity(r: TraceReader) -> JobIdentity:
    """The session start, GPU names and kernel-running process names of a trace (a few rows
    of small tables, and one scan of the kernels' process ids)."""
    start = None
    if r.schema.has("TARGET_INFO_SESSION_START_TIME", "utcEpochNs"):
        rows = r.query(
            "SELECT min(utcEpochNs) FROM TARGET_INFO_SESSION_START_TIME WHERE typeof(utcEpochNs) = 'integer'"
        )
        start = rows[0][0] if rows and isinstance(rows[0][0], int) else None
    processes: tuple[str, ...] = ()
    if r.schema.has(s.KERNEL, "globalPid") and r.schema.has("PROCESSES", "pid", "name"):
        rows = r.query(
            f"SELECT DISTINCT name FROM PROCESSES WHERE pid IN "
            f"(SELECT DISTINCT (globalPid >> 24) & 16777215 FROM {s.KERNEL}) ORDER BY name LIMIT 16"
        )
        processes = tuple(name_text(n) for (n,) in rows if n is not None)
    kernels = None
    if start is not None and r.schema.has(s.KERNEL, "start", "end"):
        # Kernel times count from the session start: with it, they are times of day.
        rows = r.query(
            f"SELECT min(start), max([end]) FROM {s.KERNEL} "
            "WHERE typeof(start) = 'integer' AND typeof([end]) = 'integer' AND [end] >= start"
        )
        first, last = rows[0] if rows else (None, None)
        if isinstance(first, int) and isinstance(last, int):
            kernels = (start + first, start + last)
    return JobIdentity(start, tuple(sorted({g.name for g in r.gpus()})), processes, kernels)
