"""Host-side regressions planted in a copy of a real decode trace, kernel rows untouched.

Each plant copies the trace and edits the copy with SQL, as the regression would have
changed the capture: host time is inserted by shifting every later event (a kernel,
copy or call keeps its duration; it only starts later), and new calls are inserted as
CUDA API rows (with their GPU copies where they copy). NVTX step ranges stretch where
the time is inserted inside them and move where it is inserted between them.

- :func:`gap`: CPU work between steps (``gap_ns`` after each step's range ends);
- :func:`item`: an ``.item()`` per step (a D2H ``cudaMemcpyAsync`` and a
  ``cudaStreamSynchronize`` at the end of each step);
- :func:`alloc_churn`: ``pairs`` ``cudaMalloc``/``cudaFree`` pairs per step;
- :func:`zeroed`: a buffer zeroed every step (a ``cudaMemsetAsync`` and its memset);
- :func:`slow_launches`: every launch call ``extra_ns`` slower.

GPU-side regressions (their launches as the host made them):

- :func:`fp32_head`: the lm_head GEMM under an fp32 FFMA kernel, 2.8x slower per call;
  the later GPU work queues behind it (the host, far ahead of a 9%-busy GPU, doesn't wait);
- :func:`slow_norm`: after each RMSNorm one more elementwise kernel and one more 2.16 MB
  device-to-device copy, with their launch and copy calls.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path

STEP = "decode_step"
# Tables whose rows are activities: shifted whole (start and end by the shift at start).
ACTIVITIES = (
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "PROFILER_OVERHEAD",
)
LAUNCH = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cudaGraphLaunch")


def _copy(src: Path, dst: Path) -> sqlite3.Connection:
    shutil.copyfile(src, dst)
    dst.chmod(0o644)
    return sqlite3.connect(dst)


def _steps(con: sqlite3.Connection) -> list[tuple[int, int, int]]:
    """(start, end, globalTid) of every step range, in order."""
    return con.execute(
        "SELECT n.start, n.end, n.globalTid FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        "WHERE coalesce(n.text, s.value) = ? AND n.end IS NOT NULL ORDER BY n.start",
        (STEP,),
    ).fetchall()


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _shift(con: sqlite3.Connection, points: Sequence[tuple[int, int]]) -> None:
    """Insert ``delta`` ns of host time at each ``(at, delta)``: every event at or after
    ``at`` moves by the sum of the deltas at or before it. Activities move whole (by the
    shift at their start, so durations stay); NVTX starts and ends move on their own
    (a range spanning ``at`` stretches)."""
    con.execute("CREATE TEMP TABLE pts (p INTEGER PRIMARY KEY, cum INTEGER NOT NULL)")
    cum, rows = 0, []
    merged: dict[int, int] = {}
    for at, delta in points:
        merged[at] = merged.get(at, 0) + delta
    for at in sorted(merged):
        cum += merged[at]
        rows.append((at, cum))
    con.executemany("INSERT INTO pts VALUES (?, ?)", rows)

    def at(col: str) -> str:
        return f"coalesce((SELECT cum FROM pts WHERE p <= {col} ORDER BY p DESC LIMIT 1), 0)"

    tables = _tables(con)
    for t in ACTIVITIES:
        if t in tables:
            con.execute(f'UPDATE {t} SET "end" = "end" + {at("start")}, start = start + {at("start")}')
    con.execute(f'UPDATE NVTX_EVENTS SET "end" = "end" + {at("end")} WHERE "end" IS NOT NULL')
    con.execute(f"UPDATE NVTX_EVENTS SET start = start + {at('start')}")
    con.execute(f"UPDATE ANALYSIS_DETAILS SET stopTime = stopTime + {cum}, duration = duration + {cum}")
    con.execute("DROP TABLE pts")


def _name_id(con: sqlite3.Connection, name: str) -> int:
    row = con.execute("SELECT id FROM StringIds WHERE value = ?", (name,)).fetchone()
    if row:
        return int(row[0])
    new = int(con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0])
    con.execute("INSERT INTO StringIds (id, value) VALUES (?, ?)", (new, name))
    return new


class _Calls:
    """Inserts CUDA API rows (and their copies) with fresh correlation ids."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self.con = con
        self.corr = int(con.execute("SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]) + 1
        self.event_class = con.execute("SELECT eventClass FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1").fetchone()[0]

    def api(self, name: str, start: int, end: int, tid: int) -> int:
        corr = self.corr
        self.corr += 1
        self.con.execute(
            'INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, "end", eventClass, globalTid, correlationId, nameId, '
            "returnValue, callchainId) VALUES (?, ?, ?, ?, ?, ?, 0, NULL)",
            (start, end, self.event_class, tid, corr, _name_id(self.con, name)),
        )
        return corr

    def gpu_row(self, table: str, like: str, start: int, end: int, corr: int, nbytes: int) -> None:
        """A GPU copy or memset like the trace's own rows of ``table`` that match ``like``
        (their device, stream, context)."""
        cols = [r[1] for r in self.con.execute(f"PRAGMA table_info({table})")]
        row = self.con.execute(f"SELECT * FROM {table} WHERE {like} LIMIT 1").fetchone()
        values = dict(zip(cols, row, strict=True))
        values.update(start=start, end=end, correlationId=corr, bytes=nbytes)
        names = ", ".join(f'"{c}"' for c in cols)
        marks = ", ".join("?" for _ in cols)
        self.con.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", [values[c] for c in cols])


def gap(src: Path, dst: Path, gaps_ns: Sequence[int]) -> Path:
    """CPU work between steps: ``gaps_ns[i]`` after step ``i``'s range ends (cycled)."""
    con = _copy(src, dst)
    steps = _steps(con)
    _shift(con, [(end + 1, gaps_ns[i % len(gaps_ns)]) for i, (_, end, _) in enumerate(steps[:-1])])
    con.commit()
    con.close()
    return dst


def _inside(src: Path, dst: Path, room_ns: int, fill: str, **kw: int) -> Path:
    """Open ``room_ns`` of host time at the end of every step range and fill it."""
    con = _copy(src, dst)
    steps = _steps(con)
    # Each step's room sits at its range end as it will be once the earlier rooms are in.
    _shift(con, [(end, room_ns) for _, end, _ in steps])
    calls = _Calls(con)
    for i, (_, end, tid) in enumerate(steps):
        at = end + i * room_ns
        if fill == "item":
            corr = calls.api("cudaMemcpyAsync_v3020", at + 2_000, at + 22_000, tid)
            calls.gpu_row("CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind = 2", at + 10_000, at + 12_000, corr, kw["nbytes"])
            calls.api("cudaStreamSynchronize_v3020", at + 23_000, at + room_ns - 2_000, tid)
        elif fill == "memset":
            corr = calls.api("cudaMemsetAsync_v3020", at + 1_000, at + 5_000, tid)
            calls.gpu_row("CUPTI_ACTIVITY_KIND_MEMSET", "1", at + 3_000, at + 4_000, corr, kw["nbytes"])
        else:
            t = at + 1_000
            for _ in range(kw["pairs"]):
                calls.api("cudaMalloc_v3020", t, t + 4_000, tid)
                calls.api("cudaFree_v3020", t + 5_000, t + 9_000, tid)
                t += 10_000
    con.commit()
    con.close()
    return dst


def item(src: Path, dst: Path, nbytes: int = 4) -> Path:
    """An ``.item()`` per step: a D2H copy of ``nbytes`` and a stream sync (80 us of host time)."""
    return _inside(src, dst, 80_000, "item", nbytes=nbytes)


def zeroed(src: Path, dst: Path, nbytes: int = 65_536) -> Path:
    """A buffer zeroed every step (a ``torch.zeros`` in the loop): a cudaMemsetAsync call
    (4 us of host time) and its 1 us memset of ``nbytes``."""
    return _inside(src, dst, 6_000, "memset", nbytes=nbytes)


def alloc_churn(src: Path, dst: Path, pairs: int = 20) -> Path:
    """``pairs`` cudaMalloc/cudaFree pairs per step (10 us a pair)."""
    return _inside(src, dst, pairs * 10_000 + 2_000, "alloc", pairs=pairs)


def slow_launches(src: Path, dst: Path, extra_ns: int = 10_000) -> Path:
    """Every launch call ``extra_ns`` slower: each returns later and all after it moves."""
    con = _copy(src, dst)
    ids = [
        int(i) for i, v in con.execute("SELECT id, value FROM StringIds") if any(str(v).startswith(p) for p in LAUNCH)
    ]
    marks = ", ".join("?" for _ in ids)
    ends = [
        int(r[0]) for r in con.execute(f'SELECT "end" FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId IN ({marks})', ids)
    ]
    # Mark the launches before shifting (their own end moves by their own extra time).
    con.execute(
        f"CREATE TEMP TABLE launches AS SELECT rowid AS r FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE nameId IN ({marks})",
        ids,
    )
    _shift(con, [(e, extra_ns) for e in ends])
    con.execute(
        f'UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET "end" = "end" + {extra_ns} WHERE rowid IN (SELECT r FROM launches)'
    )
    con.commit()
    con.close()
    return dst


# The lm_head GEMM of the llm_* decoder (bf16 nvjet, one call per step) and the fp32 FFMA
# kernel cuBLAS picks when the head runs in fp32.
HEAD = "nvjet_sm90_tst_256x16_64x6_2x1_v_bz_TNT"
FP32_HEAD = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_execute_kernel"
GPU_ROWS = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _requeue(con: sqlite3.Connection) -> None:
    """Let the GPU work of one in-order stream queue again: a row starts no earlier than
    it did and no earlier than the previous row's end (a slower kernel delays what follows
    until the idle GPU has caught up)."""
    rows = []
    for t in GPU_ROWS:
        rows += [(s, e, t, r) for r, s, e in con.execute(f'SELECT rowid, start, "end" FROM {t}')]
    rows.sort()
    busy_until, moved = 0, []
    for s, e, t, r in rows:
        new = max(s, busy_until)
        busy_until = new + (e - s)
        if new != s:
            moved.append((new - s, t, r))
    for d, t, r in moved:
        con.execute(f'UPDATE {t} SET start = start + ?, "end" = "end" + ? WHERE rowid = ?', (d, d, r))


def fp32_head(src: Path, dst: Path, slower: float = 2.8) -> Path:
    """The lm_head GEMM forced to fp32: its rows renamed to an fp32 FFMA kernel and
    ``slower`` times as long; the GPU work after it queues behind it. The host calls stay:
    the host of this loop is far ahead of the GPU (a decode step's sync finds it idle)."""
    con = _copy(src, dst)
    old, new = _name_id(con, HEAD), _name_id(con, FP32_HEAD)
    con.execute(
        f'UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start + CAST(("end" - start) * {slower} AS INTEGER), '
        "shortName = ?, demangledName = ?, mangledName = ? WHERE shortName = ?",
        (new, new, new, old),
    )
    _requeue(con)
    con.commit()
    con.close()
    return dst


def _template(con: sqlite3.Connection, table: str, where: str) -> tuple[list[str], dict[str, object]]:
    cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
    row = con.execute(f"SELECT * FROM {table} WHERE {where} LIMIT 1").fetchone()
    return cols, dict(zip(cols, row, strict=True))


def _insert(con: sqlite3.Connection, table: str, cols: list[str], rows: list[dict[str, object]]) -> None:
    names = ", ".join(f'"{c}"' for c in cols)
    marks = ", ".join("?" for _ in cols)
    con.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", [[r[c] for c in cols] for r in rows])


# A norm's mean: the one reduce kernel of each RMSNorm (33 per step: 32 layers and the final).
NORM_MEAN = "reduce_kernel"


def slow_norm(src: Path, dst: Path, nbytes: int = 2_162_688, copy_ns: int = 2_700) -> Path:
    """A slower RMSNorm: after each norm's mean kernel is launched, one more elementwise
    kernel (1.3 us) and one more D2D copy of ``nbytes`` (``copy_ns``), issued by a
    ``cudaLaunchKernel`` and a ``cudaMemcpyAsync`` call in 25 us of added host time."""
    con = _copy(src, dst)
    means = con.execute(
        'SELECT r."end", r.globalTid, k.correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL k '
        "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
        'WHERE k.shortName = ? AND k.gridX = 1 ORDER BY r."end"',
        (_name_id(con, NORM_MEAN),),
    ).fetchall()
    room = 25_000
    _shift(con, [(end, room) for end, _, _ in means])
    calls = _Calls(con)
    kcols, kernel = _template(
        con, "CUPTI_ACTIVITY_KIND_KERNEL", f"shortName = {_name_id(con, 'vectorized_elementwise_kernel')}"
    )
    ccols, copy = _template(con, "CUPTI_ACTIVITY_KIND_MEMCPY", "1")
    kernels, copies = [], []
    for i, (end, tid, corr) in enumerate(means):
        at = end + i * room  # where this norm's room lies once the earlier ones are in
        (mean_end,) = con.execute(
            'SELECT "end" FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId = ?', (corr,)
        ).fetchone()
        k_corr = calls.api("cudaLaunchKernel_v7000", at + 1_000, at + 9_000, tid)
        k_start = max(at + 8_000, mean_end + 1_000)
        kernels.append({**kernel, "start": k_start, "end": k_start + 1_300, "correlationId": k_corr})
        c_corr = calls.api("cudaMemcpyAsync_v3020", at + 11_000, at + 21_000, tid)
        c_start = max(at + 13_000, k_start + 1_800)
        copies.append(
            {
                **copy,
                "start": c_start,
                "end": c_start + copy_ns,
                "correlationId": c_corr,
                "bytes": nbytes,
                "copyKind": 8,
                "srcKind": 2,
                "dstKind": 2,
            }
        )
    _insert(con, "CUPTI_ACTIVITY_KIND_KERNEL", kcols, kernels)
    _insert(con, "CUPTI_ACTIVITY_KIND_MEMCPY", ccols, copies)
    con.commit()
    con.close()
    return dst
