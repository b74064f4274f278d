"""Fingerprints round-trip through JSON, and a diff of saved fingerprints equals a diff of traces."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import ROOT
from fpspec import fingerprint, kernel

from nsysdiff.api import load
from nsysdiff.compare.diff import compare
from nsysdiff.errors import FingerprintError
from nsysdiff.fingerprint.model import FORMAT_VERSION, fingerprint_from_json, fingerprint_to_json

EXAMPLE = ROOT / "examples" / "cascade"


def test_round_trip_is_exact() -> None:
    fp = load(EXAMPLE / "bs16.sqlite")
    assert fingerprint_from_json(fingerprint_to_json(fp), "x.json") == fp


def test_diff_of_saved_fingerprints_equals_diff_of_traces(tmp_path) -> None:  # type: ignore[no-untyped-def]
    paths = []
    for name in ("bs1", "bs16"):
        p = tmp_path / f"{name}.json"
        p.write_text(fingerprint_to_json(load(EXAMPLE / f"{name}.sqlite")))
        paths.append(p)
    from_traces = compare(load(EXAMPLE / "bs1.sqlite"), load(EXAMPLE / "bs16.sqlite"))
    from_json = compare(load(paths[0]), load(paths[1]))
    assert from_json == from_traces
    mixed = compare(load(EXAMPLE / "bs1.sqlite"), load(paths[1]))
    assert mixed == from_traces


def test_fingerprint_is_small() -> None:
    assert len(fingerprint_to_json(load(EXAMPLE / "bs1.sqlite"))) < 100_000


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{", "x.json: not valid JSON (line 1: Expecting property name enclosed in double quotes)"),
        ("[]", 'x.json: not an nsysdiff fingerprint (no "format": "nsysdiff-fingerprint")'),
        (
            json.dumps({"format": "nsysdiff-fingerprint", "version": 99}),
            "x.json: fingerprint format version 99 is not supported (this nsysdiff reads versions 1, 2); "
            "re-create it with `nsysdiff fingerprint`",
        ),
        (
            json.dumps({"format": "nsysdiff-fingerprint", "version": FORMAT_VERSION, "kernels": []}),
            "x.json: malformed fingerprint at $: 'meta' is a required property",
        ),
    ],
)
def test_bad_fingerprints_say_what_is_wrong(doc: str, message: str) -> None:
    with pytest.raises(FingerprintError) as e:
        fingerprint_from_json(doc, "x.json")
    assert str(e.value) == message


def test_fingerprint_without_mangled_names_stays_valid() -> None:
    # Fingerprints saved before the mangled name was kept have no "mangled" key.
    fp = fingerprint({"gemm": (2, 20)})
    doc = json.loads(fingerprint_to_json(fp))
    assert doc["kernels"][0]["mangled"] is None
    del doc["kernels"][0]["mangled"]
    assert fingerprint_from_json(json.dumps(doc), "old.json") == fp
    doc["kernels"][0]["mangled"] = "_Z4gemmv"
    assert fingerprint_from_json(json.dumps(doc), "new.json").kernels[0].mangled == "_Z4gemmv"


def test_a_fingerprint_saved_under_an_earlier_taxonomy_loads_under_this_one() -> None:
    # Saved when a cuDNN convolution fused with its ReLU was classed element-wise: a
    # baseline and its candidate must meet under the same categories.
    conv = kernel("volta_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1", 10, 5_000_000, category="elementwise")
    old = fingerprint([conv, kernel("reduce_kernel", 10, 1_000_000)])
    assert [g.name for g in old.categories] == ["elementwise", "reduction"]
    loaded = fingerprint_from_json(fingerprint_to_json(old), "old.json")
    assert [k.category for k in loaded.kernels] == ["convolution", "reduction"]
    assert [(g.name, g.total_ns) for g in loaded.categories] == [("convolution", 5_000_000), ("reduction", 1_000_000)]


def test_configs_saved_before_their_calls_read_as_unknown() -> None:
    """A fingerprint saved before launch configurations kept their local memory and calls
    reads them as None (unknown), never as 0, and diffs as it did."""
    fp = load(EXAMPLE / "bs16.sqlite")
    assert all(c.calls is not None and c.local_mem_total is not None for k in fp.kernels for c in k.configs)
    assert all(sum(c.calls or 0 for c in k.configs) == k.calls for k in fp.kernels)
    doc = json.loads(fingerprint_to_json(fp))
    for k in doc["kernels"]:
        for c in k["configs"]:
            for field in ("calls", "local_mem_per_thread", "local_mem_total"):
                del c[field]
    old = fingerprint_from_json(json.dumps(doc), "old.json")
    assert {(c.calls, c.local_mem_per_thread, c.local_mem_total) for k in old.kernels for c in k.configs} == {
        (None, None, None)
    }
    assert dataclasses.replace(compare(old, old), base=fp, candidate=fp) == compare(fp, fp)
