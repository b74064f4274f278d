"""The summary's header lines: counts with their nouns, GPU names as one phrase, absent facts named."""

from __future__ import annotations

import dataclasses

from fpspec import fingerprint

from nsysdiff.render.summary import gpu_line, header_lines


def test_one_launch_is_one_launch() -> None:
    lines = header_lines(fingerprint({"k": (1, 1_000)}))
    assert any(line.startswith("1 kernel launch · ") for line in lines), lines
    assert any(line.startswith("2 kernel launches · ") for line in header_lines(fingerprint({"k": (2, 1_000)})))


def test_a_gpu_name_ending_in_spaces_is_one_phrase() -> None:
    assert gpu_line(fingerprint({"k": (1, 1_000)}, gpu="NVIDIA GeForce RTX 3060 Laptop ")) == (
        "NVIDIA GeForce RTX 3060 Laptop (#0)"
    )


def test_an_unrecorded_capture_window_says_so() -> None:
    fp = fingerprint({"k": (1, 1_000)})
    fp = dataclasses.replace(fp, meta=dataclasses.replace(fp.meta, capture_start_ns=None, capture_end_ns=None))
    assert any(line.startswith("capture window not recorded · ") for line in header_lines(fp))
