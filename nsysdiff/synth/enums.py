"""The ids and ENUM_* table rows of the nsys enumerations the builder writes."""

from __future__ import annotations

__all__ = ["COPY_KINDS", "MEM_KINDS", "NVTX_EVENT_TYPES"]


# copyKind ids (ENUM_CUDA_MEMCPY_OPER); ids 1..10 are the ones a memcpy() call can ask for.
COPY_KINDS: dict[str, int] = {
    "HtoD": 1,
    "DtoH": 2,
    "HtoA": 3,
    "AtoH": 4,
    "AtoA": 5,
    "AtoD": 6,
    "DtoA": 7,
    "DtoD": 8,
    "HtoH": 9,
    "PtoP": 10,
}

# ENUM_CUDA_MEM_KIND ids.
MEM_KINDS: dict[str, int] = {
    "PAGEABLE": 0,
    "PINNED": 1,
    "DEVICE": 2,
    "ARRAY": 3,
    "MANAGED": 4,
    "DEVICE_STATIC": 5,
    "MANAGED_STATIC": 6,
    "UNKNOWN": 7,
}

# The NVTX subset of ENUM_NSYS_EVENT_TYPE, with the names nsys writes.
NVTX_EVENT_TYPES: dict[str, int] = {
    "NvtxCategory": 33,
    "NvtxMark": 34,
    "NvtxThread": 39,
    "NvtxPushPopRange": 59,
    "NvtxStartEndRange": 60,
    "NvtxtPushPopRange": 70,
    "NvtxtStartEndRange": 71,
    "NvtxDomainCreate": 75,
    "NvtxDomainDestroy": 76,
}

# ENUM tables: (table, rows). Values copied from the 2022.4 and 2024.6 exports; nsys
# writes many more tables and, for ENUM_NSYS_EVENT_TYPE, every type it knows, but
# readers only resolve these.
ENUMS: tuple[tuple[str, tuple[tuple[int, str, str], ...]], ...] = (
    (
        "ENUM_CUDA_MEMCPY_OPER",
        (
            (0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"),
            (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
            (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"),
            (3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"),
            (4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"),
            (5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"),
            (6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"),
            (7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"),
            (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"),
            (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
            (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"),
            (11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"),
            (12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"),
            (13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"),
        ),
    ),
    (
        "ENUM_CUDA_MEM_KIND",
        tuple(
            (i, f"CUDA_MEMOPR_MEMORY_KIND_{name}", label)
            for (name, i), label in zip(
                MEM_KINDS.items(),
                (
                    "Pageable",
                    "Pinned",
                    "Device",
                    "Array",
                    "Managed",
                    "Device Static",
                    "Managed Static",
                    "Unknown",
                ),
                strict=True,
            )
        ),
    ),
    (
        "ENUM_CUDA_KERNEL_LAUNCH_TYPE",  # renamed to the misspelt form for 2022.4
        (
            (0, "CUDA_KERNEL_LAUNCH_TYPE_UNKNOWN", "Unknown"),
            (1, "CUDA_KERNEL_LAUNCH_TYPE_REGULAR", "Regular"),
            (2, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_SINGLE_DEVICE", "Coop Single Device"),
            (3, "CUDA_KERNEL_LAUNCH_TYPE_COOPERATIVE_MULTI_DEVICE", "Coop Multi Device"),
        ),
    ),
    (
        "ENUM_CUDA_FUNC_CACHE_CONFIG",
        (
            (0, "CU_FUNC_CACHE_PREFER_NONE", "None"),
            (1, "CU_FUNC_CACHE_PREFER_SHARED", "Shared"),
            (2, "CU_FUNC_CACHE_PREFER_L1", "L1"),
            (3, "CU_FUNC_CACHE_PREFER_EQUAL", "Equal"),
        ),
    ),
    (
        "ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG",
        (
            (0, "CUDA_SHARED_MEM_LIMIT_DEFAULT", "Default"),
            (1, "CUDA_SHARED_MEM_LIMIT_OPTIN", "Opt in"),
        ),
    ),
    (
        "ENUM_CUPTI_SYNC_TYPE",
        (
            (0, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown"),
            (1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"),
            (2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"),
            (3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"),
            (4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"),
        ),
    ),
    (
        "ENUM_NSYS_EVENT_CLASS",
        (
            (0, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"),
            (1, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"),
            (6, "TRACE_PROCESS_EVENT_NVTX_START", "NVTX start"),
            (7, "TRACE_PROCESS_EVENT_NVTX_FINISH", "NVTX finish"),
            (26, "TRACE_PROCESS_EVENT_CUDA_API", "CUDA API"),
            (27, "TRACE_PROCESS_EVENT_OS_RUNTIME", "OSRT runtime"),
        ),
    ),
    (
        "ENUM_NSYS_EVENT_TYPE",
        ((0, "Unknown", "Unknown"), *((i, n, n) for n, i in NVTX_EVENT_TYPES.items())),
    ),
)
