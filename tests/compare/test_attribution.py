"""The attribution: the total kernel-time change split exactly, replacements, contributors."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import ROOT, real_traces, traces_dir
from fpspec import fingerprint, kernel

from nsysdiff.api import load
from nsysdiff.compare.attribution import Change, Effects, attribute, pair
from nsysdiff.compare.diff import Diff, compare
from nsysdiff.fingerprint.model import Scope
from nsysdiff.render.phrases import contributor_text, effects_text

MS = 1_000_000


def _exact(d: Diff) -> None:
    """Every roll-up sums to the total delta, to the nanosecond."""
    a = d.attribution
    delta = d.headline.candidate_total_ns - d.headline.base_total_ns
    assert a.delta_ns == delta and a.effects.total_ns == delta
    for parts in (a.kernels, a.families, a.categories):
        assert sum(p.effects.total_ns for p in parts) == delta
        for field in ("count_ns", "per_call_ns", "resized_ns", "new_ns", "removed_ns"):
            assert sum(getattr(p.effects, field) for p in parts) == getattr(a.effects, field)
    for p in a.kernels:
        assert all(isinstance(v, int) for v in (p.effects.count_ns, p.effects.per_call_ns))


def test_each_kind_of_change_has_its_part() -> None:
    base = {"more_calls_kernel": (10, 100), "slower_kernel": (10, 100), "gone_kernel": (3, 70)}
    cand = {"more_calls_kernel": (20, 200), "slower_kernel": (10, 150), "fresh_kernel": (4, 90)}
    d = compare(fingerprint(base), fingerprint(cand))
    parts = {p.key: p.effects for p in d.attribution.kernels}
    assert parts["more_calls_kernel"] == Effects(count_ns=100, per_call_ns=0)
    assert parts["slower_kernel"] == Effects(count_ns=0, per_call_ns=50)
    assert parts["fresh_kernel"] == Effects(new_ns=90)
    assert parts["gone_kernel"] == Effects(removed_ns=-70)
    assert d.attribution.effects == Effects(100, 50, 90, -70)
    _exact(d)


def test_parts_are_integers_that_sum_exactly_even_when_a_mean_is_a_fraction() -> None:
    # 7 calls of 1,000,000,001 ns in 3 calls: a base mean of 333,333,333.67 ns.
    d = compare(
        fingerprint({"odd_kernel": (3, 1_000_000_001), "b_kernel": (7, 13)}),
        fingerprint({"odd_kernel": (7, 2_333_333_339), "b_kernel": (9, 29)}),
    )
    _exact(d)
    row = next(r for r in d.kernels if r.name == "odd_kernel")
    part = next(p for p in d.attribution.kernels if p.key == "odd_kernel")
    assert (row.count_effect_ns, row.per_call_effect_ns) == (part.effects.count_ns, part.effects.per_call_ns)


def test_a_new_kernel_that_replaces_another_heads_the_headline() -> None:
    # A bf16 GEMM replaced by an fp32 one: the new kernel carries the regression.
    rest = {f"op{i}_kernel": (100, 5 * MS) for i in range(10)}
    base = rest | {"nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT": (200, round(1.6 * MS))}
    cand = rest | {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3": (200, round(20.7 * MS))}
    d = compare(fingerprint(base), fingerprint(cand))
    (swap,) = d.attribution.replacements
    assert swap.removed_name.startswith("nvjet") and swap.new_name.startswith("sm80_xmma")
    assert swap.why == "same category, similar call counts"
    top = d.attribution.top[0]
    assert top.kind == "replacement" and top.delta_ns == round(20.7 * MS) - round(1.6 * MS)
    assert top.replaces == swap.removed_name
    _exact(d)


def test_pairing_needs_the_same_category_and_similar_calls() -> None:
    def change(key: str, cat: str, fam: str, b: int, c: int) -> Change:
        return Change(key, key, fam, cat, b, b * 10, c, c * 10)

    gone = change("a", "gemm.nvjet", "nvjet_*", 100, 0)
    assert pair([gone, change("b", "attention", "b", 0, 100)]) == ()  # another category
    assert pair([gone, change("c", "gemm.cublas", "c", 0, 500)]) == ()  # 5x the calls
    (p,) = pair([gone, change("d", "gemm.cublas", "d", 0, 150)])
    assert (p.removed, p.new) == ("a", "d")
    # Within one family the call counts may differ more (one tile did the work of two).
    (p,) = pair([gone, change("e", "gemm.nvjet", "nvjet_*", 0, 300)])
    assert p.why == "same family"
    # Known phases must agree.
    assert pair([gone, change("d", "gemm.cublas", "d", 0, 150)], {"a": frozenset({"decode"})}) == ()


def test_a_change_spread_over_variants_rolls_up_to_its_family() -> None:
    base = [kernel("vec_kernel", 10, 100, demangled=f"vec<{i}>") for i in range(5)] + [kernel("x", 1, 9)]
    cand = [kernel("vec_kernel", 10, 130, demangled=f"vec<{i}>") for i in range(5)] + [kernel("x", 1, 9)]
    d = compare(fingerprint(base), fingerprint(cand))
    (fam, *_) = d.attribution.families
    assert fam.key == "vec_kernel" and fam.effects == Effects(count_ns=0, per_call_ns=150)
    _exact(d)


def test_phases_carry_their_own_split() -> None:
    a = attribute([Change("k", "k", "k", "c", 1, 10, 2, 30)], [("decode", Effects(5, 5, 0, 0))])
    assert [(p.key, p.effects.total_ns) for p in a.phases] == [("decode", 10)]


EXAMPLE = ROOT / "examples" / "cascade"


def test_cascade_attribution_is_exact() -> None:
    _exact(compare(load(EXAMPLE / "bs1.sqlite"), load(EXAMPLE / "bs16.sqlite")))


H100 = traces_dir() / "h100"
PAIRS = [
    ("h100/llm_bs1", "h100/llm_bs16"),
    ("h100/llm_bs1", "h100/llm_bs1_compile"),
    ("h100/example_bs1", "h100/example_bs16"),
    ("fuser_h100_report1", "fuser_h200_report1"),
    ("nsysai_mfu_h100x2_before", "nsysai_mfu_h100x2_after"),
]


@pytest.mark.skipif(not real_traces(), reason="real traces not found")
@pytest.mark.parametrize(("base", "cand"), PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_real_pairs_decompose_exactly(base: str, cand: str) -> None:
    b, c = traces_dir() / f"{base}.sqlite", traces_dir() / f"{cand}.sqlite"
    if not (Path(b).exists() and Path(c).exists()):
        pytest.skip("trace not found")
    _exact(compare(load(b), load(c)))


@pytest.mark.skipif(not (H100 / "llm_bs1.sqlite").exists(), reason="h100 traces not found")
def test_h100_gemm_tile_swap_is_a_replacement() -> None:
    d = compare(load(H100 / "llm_bs1.sqlite"), load(H100 / "llm_bs16.sqlite"))
    swaps = {(p.removed_name, p.new_name) for p in d.attribution.replacements}
    assert (
        "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT",
        "nvjet_sm90_tst_64x16_64x16_2x1_v_bz_splitK_TNT",
    ) in swaps


def test_per_step_parts_sum_to_the_per_step_change() -> None:
    base = dataclasses.replace(
        fingerprint({"a_kernel": (40, 4000), "b_kernel": (8, 80)}), scope=Scope(per="step", steps=4)
    )
    cand = dataclasses.replace(
        fingerprint({"a_kernel": (50, 6000), "c_kernel": (5, 50)}), scope=Scope(per="step", steps=5)
    )
    d = compare(base, cand)
    a = d.attribution
    assert a.delta_ns == pytest.approx((6050 / 5) - (4080 / 4))
    assert a.effects.total_ns == pytest.approx(a.delta_ns)
    parts = {p.key: p.effects for p in a.kernels}
    assert parts["a_kernel"].count_ns == pytest.approx(0.0)  # 10 calls per step on both sides
    assert parts["a_kernel"].per_call_ns == pytest.approx(1200 - 1000)


def test_work_cut_into_thousands_of_calls_is_one_resized_part() -> None:
    # vectorAdd: one 9.10 ms kernel against the same work in 10,000 chunks on 4 streams.
    # Count effect (+9.099 s) and per-call effect (-9.061 s) would be exact and absurd.
    rest = {f"op{i}_kernel": (100, 5 * MS) for i in range(6)}
    base = rest | {"vectorAdd": (1, 9_100_000)}
    cand = rest | {"vectorAdd": (10_000, 47_060_000)}
    d = compare(fingerprint(base), fingerprint(cand))
    _exact(d)
    part = next(p for p in d.attribution.kernels if p.key == "vectorAdd")
    assert part.effects == Effects(resized_ns=37_960_000)
    assert d.attribution.effects.count_ns == 0 and d.attribution.effects.per_call_ns == 0
    top = d.attribution.top[0]
    assert top.kind == "resized" and top.calls == (1, 10_000)
    assert contributor_text(top) == "vectorAdd +37.96 ms (1 call → 10,000 smaller calls)"
    assert effects_text(d.attribution.effects) == "count 0 · per-call 0 · resized +37.96 ms · new 0 · removed 0"
    row = next(r for r in d.kernels if r.name == "vectorAdd")
    assert (row.count_effect_ns, row.per_call_effect_ns, row.resized_ns) == (0, 0, 37_960_000)


def test_sixteen_times_the_calls_at_the_same_size_is_a_count_effect() -> None:
    # A batch of 16 runs a per-request kernel 16x: more calls of the same size, not resized.
    rest = {f"op{i}_kernel": (100, 5 * MS) for i in range(6)}
    d = compare(
        fingerprint(rest | {"per_req_kernel": (10, MS)}), fingerprint(rest | {"per_req_kernel": (160, 16 * MS)})
    )
    part = next(p for p in d.attribution.kernels if p.key == "per_req_kernel")
    assert part.effects == Effects(count_ns=15 * MS, per_call_ns=0)
