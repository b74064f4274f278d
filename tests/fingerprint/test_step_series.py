"""Steps held as one int64 row each: the same steps back, the same JSON, the same figures."""

from __future__ import annotations

import numpy as np

from nsysdiff.api import fingerprint_trace
from nsysdiff.fingerprint.model import fingerprint_from_json, fingerprint_to_json
from nsysdiff.fingerprint.scope import options
from nsysdiff.fingerprint.steps import HostCalls, Step, StepPart, StepParts, Steps, StepSeries
from nsysdiff.synth.builder import Generation, TraceBuilder
from nsysdiff.trace.records import HostFamily

A = Step(
    0,
    9_000,
    10_000,
    StepParts(4_000, 0, 0, 3_000, 500, 1_500, 1_000),
    (HostCalls(HostFamily.LAUNCH, 12, 36_000), HostCalls(HostFamily.COPY_D2H, 1, 800, 4_096)),
    4_000,
)
# A family listed with no calls stays listed: the series keeps which families a step lists.
B = Step(10_000, 8_000, 8_000, StepParts(5_000, 0, 0, 2_000, 0, 1_000, 0), (HostCalls(HostFamily.SYNC, 0, 0),), 5_000)


def test_steps_come_back_as_they_went_in() -> None:
    series = StepSeries([A, B])
    assert list(series) == [A, B] and series[0] == A and series[-1] == B
    assert series == (A, B) and series[1:] == StepSeries([B]) and len(series[5:]) == 0
    assert hash(series) == hash(StepSeries([A, B]))
    assert Steps("s", "", (A, B), ()).steps == series  # a tuple given is packed


def test_columns() -> None:
    series = StepSeries([A, B])
    assert series.column("period_ns").tolist() == [10_000, 8_000]
    assert series.part(StepPart.LAUNCH_BOUND).tolist() == [3_000, 2_000]
    assert series.family(HostFamily.LAUNCH).tolist() == [[12, 36_000, 0], [0, 0, 0]]
    assert series.family(HostFamily.COPY_D2H)[:, 2].tolist() == [4_096, 0]


def test_from_columns_lists_the_families_with_calls() -> None:
    calls = np.zeros((1, len(HostFamily), 3), dtype=np.int64)
    calls[0, 0] = (12, 36_000, 0)
    calls[0, 3] = (1, 800, 4_096)
    parts = np.array([[4_000, 0, 0, 3_000, 500, 1_500, 1_000]], dtype=np.int64)
    one = np.array([0]), np.array([9_000]), np.array([10_000]), np.array([4_000])
    assert StepSeries.from_columns(*one, parts, calls) == StepSeries([A])


def test_a_fingerprint_with_steps_round_trips(tmp_path) -> None:  # type: ignore[no-untyped-def]
    b = TraceBuilder(Generation.V2024)
    for i in range(5):
        t = i * 100_000
        b.nvtx_range("decode_step", t, t + 90_000)
        b.launch("gemm", t + 1_000, t + 5_000, 20_000)
        b.runtime("cudaStreamSynchronize_v3020", t + 80_000, t + 85_000)
    fp = fingerprint_trace(b.write(tmp_path / "t.sqlite"), options(per="decode_step"))
    assert fp.steps is not None and len(fp.steps.steps) == 5
    text = fingerprint_to_json(fp)
    back = fingerprint_from_json(text, "t.json")
    assert back.steps == fp.steps and fingerprint_to_json(back) == text
