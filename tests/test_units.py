"""Human-readable numbers: nothing that moved prints as zero."""

from __future__ import annotations

import pytest

from nsysdiff import units as u


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "-"), (0.004, "<0.01x"), (0.0049, "<0.01x"), (0.005, "0.01x"), (1.0, "1.00x"), (0.0, "0.00x")],
)
def test_a_ratio_that_shrank_to_almost_nothing_is_not_printed_as_zero(value: float | None, text: str) -> None:
    assert u.ratio(value) == text


@pytest.mark.parametrize(("value", "text"), [(0.0, "<1e-300"), (3.2e-5, "3.2e-05"), (0.5, "5.0e-01")])
def test_an_underflowed_p_value_is_not_printed_as_zero(value: float, text: str) -> None:
    assert u.pvalue(value) == text


@pytest.mark.parametrize(
    ("word", "plural"),
    [
        ("kernel", "kernels"),
        ("family", "families"),
        ("H2D copy", "H2D copies"),
        ("drifting family", "drifting families"),
        ("launch", "launches"),
        ("key", "keys"),
        ("alloc/free call", "alloc/free calls"),
        ("NVTX range", "NVTX ranges"),
        ("steps table", "steps tables"),
        ("box", "boxes"),
    ],
)
def test_a_noun_is_made_plural_by_one_rule(word: str, plural: str) -> None:
    assert u.many(word) == plural
    assert u.plural(2, word) == f"2 {plural}" and u.plural(1, word) == f"1 {word}"
