"""TraceBuilder: record GPU and CPU events through a small API, write them as an nsys export.

Tests, examples and benchmarks need exports in every generation, and real ones may not be shared.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from nsysdiff.synth import writer
from nsysdiff.synth.enums import COPY_KINDS, NVTX_EVENT_TYPES
from nsysdiff.synth.events import Batch, Table, intern
from nsysdiff.synth.schema import (
    FIELDS,
    GLOBAL_VID,
    GRAPH_TRACE,
    KERNEL,
    MEMCPY,
    MEMSET,
    NVTX,
    RUNTIME,
    Generation,
    since,
)
from nsysdiff.synth.writer import Gpu, Recording

# Generation and Gpu are part of the builder's face: every caller needs them to say
# which export to write, so they are importable from here.
__all__ = ["Generation", "Gpu", "TraceBuilder"]


# The memory kind each side of a copy gets by default. Host memory is pinned because a
# pageable copy is a finding of its own (cuda_memcpy_async); tests opt into it.
_SIDE_KIND: dict[str, int] = {"H": 1, "D": 2, "A": 3, "P": 2}

# pid and tid each get 24 bits of a serialized GlobalId.
_ID_LIMIT = 1 << 24


def _mangle(short: str) -> str | None:
    # An Itanium-style name for plain identifiers ("_Z6kernelv"); templated or
    # namespaced names cannot be derived from the short name, so nsys would leave them
    # to the demangler and we leave them NULL.
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", short):
        return f"_Z{len(short)}{short}v"
    return None


def _shared_memory_executed(total: int) -> int:
    # The driver rounds the kernel's shared memory up to a supported carveout; Hopper's
    # steps, never below the 32 KiB real exports show for kernels using none.
    for carveout in (32768, 65536, 102400, 135168, 167936, 200704, 233472):
        if total <= carveout:
            return carveout
    return total


def _as_int64(values: npt.ArrayLike, what: str) -> npt.NDArray[np.int64]:
    array = np.asarray(values, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {array.shape}")
    return array


class TraceBuilder:
    """Collects events and writes them as an nsys SQLite export of one generation.

    The same calls always produce the same bytes: nothing depends on the clock, the
    environment or hash order, so golden files built from a ``TraceBuilder`` stay stable.
    """

    def __init__(
        self,
        generation: Generation = Generation.V2024,
        *,
        gpus: Sequence[Gpu] = (Gpu(),),
        pid: int = 1000,
        session_start_ns: int = 1_700_000_000_000_000_000,
        extra_columns: bool = False,
        invalid_utf8_env: bool = False,
        gpu_table: bool = True,
        process_name: str = "python",
        analysis_window: tuple[int, int] | None = None,
        derived_window: tuple[int, int] | None = None,
    ) -> None:
        if not 0 <= pid < _ID_LIMIT:
            raise ValueError(f"pid must be in [0, 2**24), got {pid}")
        if analysis_window is not None and analysis_window[0] > analysis_window[1]:
            raise ValueError(f"analysis_window start > stop: {analysis_window}")
        self.generation = Generation(generation)
        self.gpus: tuple[Gpu, ...] = tuple(gpus)
        self.pid = pid
        self.session_start_ns = session_start_ns
        self.extra_columns = extra_columns
        self.invalid_utf8_env = invalid_utf8_env
        self.gpu_table = gpu_table
        self.process_name = process_name
        self.analysis_window = analysis_window
        # A window cut from a longer capture, as tools that cut one record it in the
        # export's metadata (DERIVED_WINDOW_NS).
        self.derived_window = derived_window
        self._strings: dict[str, int] = {}
        self._tables: dict[str, Table] = {name: Table(name) for name in FIELDS}
        self._next_correlation = 1
        self._next_grid = 1
        self._next_range = 1
        self._domains: dict[str, int] = {}
        self._thread_names: dict[int, str] = {}
        self._tids: set[int] = set()
        self._t_min: int | None = None
        self._t_max: int | None = None
        self._node_mode = False

    # ---- ids ---------------------------------------------------------------------

    @property
    def global_pid(self) -> int:
        """The serialized GlobalId of the traced process."""
        return GLOBAL_VID | (self.pid << 24)

    def global_tid(self, tid: int) -> int:
        """The serialized GlobalId of thread `tid` of the traced process."""
        if not 0 <= tid < _ID_LIMIT:
            raise ValueError(f"tid must be in [0, 2**24), got {tid}")
        self._tids.add(tid)
        return self.global_pid | tid

    def string_id(self, text: str) -> int:
        """The StringIds id of `text`, interning it on first use (ids count from 0)."""
        return intern(self._strings, text)

    def name_thread(self, tid: int, name: str) -> None:
        """Name a thread in ThreadNames (default: the process name)."""
        self.global_tid(tid)
        self._thread_names[tid] = name

    def _correlation(self, given: int | None, count: int = 1) -> int:
        # Explicit ids push the counter past them so auto ids never collide with them.
        first = self._next_correlation if given is None else given
        self._next_correlation = max(self._next_correlation, first + count)
        return first

    def _span(self, start: int, end: int) -> None:
        if end < start:
            raise ValueError(f"event ends before it starts: start={start}, end={end}")
        self._t_min = start if self._t_min is None else min(self._t_min, start)
        self._t_max = end if self._t_max is None else max(self._t_max, end)

    def _device(self, device: int) -> None:
        if self.gpus and device not in {g.id for g in self.gpus}:
            raise ValueError(f"device {device} is not one of the builder's GPUs")

    # ---- GPU activity ------------------------------------------------------------

    def kernel(
        self,
        name: str,
        start: int,
        duration: int,
        *,
        demangled: str | None = None,
        mangled: str | None = None,
        device: int = 0,
        stream: int = 7,
        grid: tuple[int, int, int] = (1, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
        registers: int = 32,
        static_smem: int = 0,
        dynamic_smem: int = 0,
        correlation_id: int | None = None,
        graph_node_id: int | None = None,
    ) -> int:
        """Record one kernel; `name` is the short name. Returns its correlationId."""
        self._device(device)
        self._span(start, start + duration)
        cid = self._correlation(correlation_id)
        mangled_text = mangled if mangled is not None else _mangle(name)
        self._tables[KERNEL].add(
            (
                start,
                start + duration,
                device,
                device + 1,
                stream,
                cid,
                self.string_id(demangled if demangled is not None else name),
                self.string_id(name),
                None if mangled_text is None else self.string_id(mangled_text),
                registers,
                *grid,
                *block,
                static_smem,
                dynamic_smem,
                self._next_grid,
                _shared_memory_executed(static_smem + dynamic_smem),
                graph_node_id,
            )
        )
        self._next_grid += 1
        self._node_mode |= graph_node_id is not None
        return cid

    def kernels(
        self,
        name: str,
        starts: npt.ArrayLike,
        durations: npt.ArrayLike,
        *,
        demangled: str | None = None,
        mangled: str | None = None,
        device: int = 0,
        stream: int = 7,
        grid: tuple[int, int, int] = (1, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
        registers: int = 32,
        static_smem: int = 0,
        dynamic_smem: int = 0,
        graph_node_id: int | None = None,
        api: str | None = None,
        api_lead: int = 5000,
        api_duration: int = 3000,
        tid: int = 1001,
    ) -> None:
        """Record many launches of one kernel at once (benchmarks: millions of rows).

        Correlation ids are auto-assigned, consecutive and increasing. With `api`
        (e.g. "cudaLaunchKernel_v7000") each kernel also gets a RUNTIME row on `tid`
        starting `api_lead` ns before it, sharing its correlationId.
        """
        start_arr = _as_int64(starts, "starts")
        duration_arr = _as_int64(durations, "durations")
        if start_arr.shape != duration_arr.shape:
            raise ValueError("starts and durations must have the same length")
        n = int(start_arr.size)
        if n == 0:
            return
        if int(duration_arr.min()) < 0:
            raise ValueError("durations must be >= 0")
        self._device(device)
        end_arr = start_arr + duration_arr
        self._span(int(start_arr.min()), int(end_arr.max()))
        first_cid = self._correlation(None, n)
        cids = list(range(first_cid, first_cid + n))
        first_grid = self._next_grid
        self._next_grid += n
        mangled_text = mangled if mangled is not None else _mangle(name)
        scalars: dict[str, object] = {
            "deviceId": device,
            "contextId": device + 1,
            "streamId": stream,
            "demangledName": self.string_id(demangled if demangled is not None else name),
            "shortName": self.string_id(name),
            "mangledName": None if mangled_text is None else self.string_id(mangled_text),
            "registersPerThread": registers,
            "gridX": grid[0],
            "gridY": grid[1],
            "gridZ": grid[2],
            "blockX": block[0],
            "blockY": block[1],
            "blockZ": block[2],
            "staticSharedMemory": static_smem,
            "dynamicSharedMemory": dynamic_smem,
            "sharedMemoryExecuted": _shared_memory_executed(static_smem + dynamic_smem),
            "graphNodeId": graph_node_id,
        }
        columns: dict[str, list[int] | object] = {
            "start": start_arr.tolist(),
            "end": end_arr.tolist(),
            "correlationId": cids,
            "gridId": list(range(first_grid, first_grid + n)),
            **scalars,
        }
        self._tables[KERNEL].add_batch(Batch(n, columns))
        self._node_mode |= graph_node_id is not None
        if api is not None:
            cpu_starts = start_arr - api_lead
            self._span(int(cpu_starts.min()), int(cpu_starts.max()) + api_duration)
            runtime_columns: dict[str, list[int] | object] = {
                "start": cpu_starts.tolist(),
                "end": (cpu_starts + api_duration).tolist(),
                "globalTid": self.global_tid(tid),
                "correlationId": cids,
                "nameId": self.string_id(api),
            }
            self._tables[RUNTIME].add_batch(Batch(n, runtime_columns))

    def memcpy(
        self,
        kind: str,
        start: int,
        duration: int,
        nbytes: int,
        *,
        device: int = 0,
        stream: int = 7,
        correlation_id: int | None = None,
        graph_node_id: int | None = None,
        src_kind: int | None = None,
        dst_kind: int | None = None,
    ) -> int:
        """Record one copy; `kind` is a COPY_KINDS key ("HtoD", "DtoD", "PtoP", ...).

        Host memory defaults to pinned; pass src_kind/dst_kind=MEM_KINDS["PAGEABLE"]
        for a pageable copy.
        """
        if kind not in COPY_KINDS:
            raise ValueError(f"unknown copy kind {kind!r}; expected one of {list(COPY_KINDS)}")
        self._device(device)
        self._span(start, start + duration)
        cid = self._correlation(correlation_id)
        self._tables[MEMCPY].add(
            (
                start,
                start + duration,
                device,
                device + 1,
                stream,
                cid,
                nbytes,
                COPY_KINDS[kind],
                _SIDE_KIND[kind[0]] if src_kind is None else src_kind,
                _SIDE_KIND[kind[3]] if dst_kind is None else dst_kind,
                graph_node_id,
            )
        )
        self._node_mode |= graph_node_id is not None
        return cid

    def memset(
        self,
        start: int,
        duration: int,
        nbytes: int,
        *,
        device: int = 0,
        stream: int = 7,
        correlation_id: int | None = None,
        graph_node_id: int | None = None,
    ) -> int:
        """Record one memset of device memory. Returns its correlationId."""
        self._device(device)
        self._span(start, start + duration)
        cid = self._correlation(correlation_id)
        self._tables[MEMSET].add((start, start + duration, device, device + 1, stream, cid, nbytes, graph_node_id))
        self._node_mode |= graph_node_id is not None
        return cid

    # ---- CPU side ----------------------------------------------------------------

    def runtime(
        self,
        name: str,
        start: int,
        duration: int,
        *,
        tid: int = 1001,
        correlation_id: int | None = None,
    ) -> int:
        """Record one CUDA runtime API call (name with its suffix, "cudaMalloc_v3020")."""
        self._span(start, start + duration)
        cid = self._correlation(correlation_id)
        self._tables[RUNTIME].add((start, start + duration, self.global_tid(tid), cid, self.string_id(name)))
        return cid

    def launch(
        self,
        name: str,
        cpu_start: int,
        gpu_start: int,
        duration: int,
        *,
        tid: int = 1001,
        api: str = "cudaLaunchKernel_v7000",
        api_duration: int = 3000,
        demangled: str | None = None,
        mangled: str | None = None,
        device: int = 0,
        stream: int = 7,
        grid: tuple[int, int, int] = (1, 1, 1),
        block: tuple[int, int, int] = (128, 1, 1),
        registers: int = 32,
        static_smem: int = 0,
        dynamic_smem: int = 0,
        correlation_id: int | None = None,
        graph_node_id: int | None = None,
    ) -> int:
        """Record a launch API call and the kernel it ran, sharing a correlationId."""
        cid = self.runtime(api, cpu_start, api_duration, tid=tid, correlation_id=correlation_id)
        return self.kernel(
            name,
            gpu_start,
            duration,
            demangled=demangled,
            mangled=mangled,
            device=device,
            stream=stream,
            grid=grid,
            block=block,
            registers=registers,
            static_smem=static_smem,
            dynamic_smem=dynamic_smem,
            correlation_id=cid,
            graph_node_id=graph_node_id,
        )

    def graph_launch(
        self,
        start: int,
        duration: int,
        *,
        graph_id: int = 1,
        graph_exec_id: int = 1,
        device: int = 0,
        stream: int = 7,
        cpu_start: int | None = None,
        tid: int = 1001,
        api_duration: int = 3000,
        correlation_id: int | None = None,
    ) -> int:
        """Record a whole-graph launch (--cuda-graph-trace=graph): a GRAPH_TRACE row
        plus its "cudaGraphLaunch_v10000" runtime row, sharing a correlationId.

        The CPU call starts at `cpu_start`, by default `api_duration` ns before the GPU
        work (clamped at 0).
        """
        if not since(self.generation, Generation.V2022):
            raise ValueError(
                f"nsys {self.generation.value} exports have no CUDA graph trace table;"
                " graph launches need generation 2022.4 or later"
            )
        self._device(device)
        cpu = max(0, start - api_duration) if cpu_start is None else cpu_start
        cid = self.runtime("cudaGraphLaunch_v10000", cpu, api_duration, tid=tid, correlation_id=correlation_id)
        self._span(start, start + duration)
        self._tables[GRAPH_TRACE].add(
            (start, start + duration, device, device + 1, stream, cid, graph_id, graph_exec_id)
        )
        return cid

    def nvtx_range(
        self,
        text: str,
        start: int,
        end: int,
        *,
        tid: int = 1001,
        push_pop: bool = True,
        domain: str | None = None,
        end_tid: int | None = None,
        registered: bool = False,
    ) -> None:
        """Record an NVTX range: push/pop (59, per thread) or start/end (60).

        `domain` creates the domain's NvtxDomainCreate (75) row on first use.
        `registered` stores the text as a StringIds id (textId) instead of in `text`.
        """
        self._span(start, end)
        if push_pop and end_tid is not None and end_tid != tid:
            raise ValueError("a push/pop range starts and ends on the same thread")
        global_tid = self.global_tid(tid)
        domain_id = self._domain(domain, start, tid)
        text_value, text_id = (None, self.string_id(text)) if registered else (text, None)
        if push_pop:
            event, range_id, end_global = NVTX_EVENT_TYPES["NvtxPushPopRange"], None, None
        else:
            event, range_id = NVTX_EVENT_TYPES["NvtxStartEndRange"], self._next_range
            self._next_range += 1
            end_global = self.global_tid(tid if end_tid is None else end_tid)
        self._tables[NVTX].add((start, end, event, range_id, text_value, global_tid, end_global, text_id, domain_id))

    def nvtx_mark(self, text: str, at: int, *, tid: int = 1001) -> None:
        """Record an NVTX mark (34): an instant, `end` NULL."""
        self._span(at, at)
        self._tables[NVTX].add(
            (at, None, NVTX_EVENT_TYPES["NvtxMark"], None, text, self.global_tid(tid), None, None, 0)
        )

    def _domain(self, domain: str | None, at: int, tid: int) -> int:
        # Real exports write domainId 0 (the default domain) on every ordinary row.
        if domain is None:
            return 0
        found = self._domains.get(domain)
        if found is None:
            found = self._domains[domain] = len(self._domains) + 1
            self._tables[NVTX].add(
                (at, None, NVTX_EVENT_TYPES["NvtxDomainCreate"], None, domain, self.global_tid(tid), None, None, found)
            )
        return found

    # ---- writing -----------------------------------------------------------------

    # ---- writing -----------------------------------------------------------------

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the export to a new file `path` (FileExistsError if it exists).

        The file appears only once complete, so a reader never sees half a trace.
        """
        return writer.write(self._recording(), path)

    def _recording(self) -> Recording:
        return Recording(
            generation=self.generation,
            gpus=self.gpus,
            gpu_table=self.gpu_table,
            pid=self.pid,
            global_pid=self.global_pid,
            process_name=self.process_name,
            session_start_ns=self.session_start_ns,
            window=self._window(),
            derived_window=self.derived_window,
            node_mode=self._node_mode,
            extra_columns=self.extra_columns,
            invalid_utf8_env=self.invalid_utf8_env,
            tables=self._tables,
            thread_names=self._thread_names,
            tids=frozenset(self._tids),
            strings=self._strings,
        )

    def _window(self) -> tuple[int, int]:
        if self.analysis_window is not None:
            return self.analysis_window
        if self._t_min is None or self._t_max is None:
            return (0, 0)
        return (self._t_min, self._t_max)
