"""The streamed JSON writer: the same bytes as ``json_document(json.dumps(indent=1))``,
a megabyte at a time, with lists that are made only as they are written."""

from __future__ import annotations

import json

import pytest

from nsysdiff.safe import neutral


def _whole(data: object) -> str:
    return neutral.json_document(json.dumps(data, indent=1))


@pytest.mark.parametrize("shift", range(-4, 5))
def test_a_command_marker_split_between_two_megabytes_is_still_escaped(shift: int) -> None:
    # The document's text is cut at 1 MiB; put "##[" (and a U+2028) across that cut.
    head = '{\n "a": "'
    pad = "x" * ((1 << 20) - len(head) + shift)
    data = {"a": pad + "##[error]\u2028tail", "b": [1, 2.5, None, "##["]}
    out = neutral.json_stream(data)
    assert out == _whole(data)
    assert "##[" not in out and json.loads(out) == data


def test_small_documents_and_nan() -> None:
    for data in ({}, [], {"k": [{"x": 1}] * 3}, "plain"):
        assert neutral.json_stream(data) == _whole(data)
    with pytest.raises(ValueError):
        neutral.json_stream({"x": float("nan")}, allow_nan=False)


def test_lazy_rows_are_made_as_they_are_written() -> None:
    made: list[int] = []

    def convert(i: int) -> dict[str, int]:
        made.append(i)
        return {"i": i, "square": i * i}

    rows = neutral.LazyRows(range(5), convert)
    assert made == [] and len(rows) == 5
    out = neutral.json_stream({"rows": rows, "empty": neutral.LazyRows((), convert)})
    assert json.loads(out) == {"rows": [{"i": i, "square": i * i} for i in range(5)], "empty": []}
    assert out == _whole({"rows": [{"i": i, "square": i * i} for i in range(5)], "empty": []})
    assert made == list(range(5))
