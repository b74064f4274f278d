"""Read an export: the reader composed from its table families, and ``open_trace``.

Each table family (kernels, runtime, NVTX) is a mixin over one connection class
(:mod:`nsysdiff.trace.connection`), whose plumbing every query against a trace goes through.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nsysdiff.trace import schema as s
from nsysdiff.trace.autosteps import AutoStepReader
from nsysdiff.trace.connection import tune
from nsysdiff.trace.kernels import KernelReader
from nsysdiff.trace.nvtx import NvtxReader
from nsysdiff.trace.runtime import RuntimeReader
from nsysdiff.trace.steps import StepReader
from nsysdiff.trace.tail_scan import TailReader


class TraceReader(KernelReader, RuntimeReader, NvtxReader, StepReader, AutoStepReader, TailReader):
    """Read-only access to one export, through its probed schema."""


@contextmanager
def open_trace(path: str | Path) -> Iterator[TraceReader]:
    p = Path(path)
    con = s.connect(p)
    try:
        schema = s.probe(con, p)
        tune(con, p)
        yield TraceReader(p, con, schema)
    finally:
        con.close()
