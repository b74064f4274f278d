"""Kernel families: one key for the variants of one operation.

A GEMM library picks a tile shape, stage count, raster order and layout per problem
size, so ``nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN`` and
``nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NTT`` are the same operation in different
clothes. Folding those tokens lets a diff say "variant drift" instead of listing
unrelated new and removed kernels.
"""

from __future__ import annotations

import re

_WILD = "*"

# Whole ``_``-separated tokens that describe how, not what.
_FOLD_TOKEN = re.compile(
    r"""^(
        \d+(x\d+)+          # tile / cluster / warp shapes: 192x192, 64x4, 2x1
      | \d+                 # bare indices and sizes
      | [hv]                # raster order
      | coop[AB]?           # cooperative variant
      | [TN]{2,4}|[tn]{1,3} # operand layouts: TNN, NT, tn, n
      | (tilesize|warpsize|tensor|stages?|cluster|tile|align|ldg|swizzle|mma|wgmma|cta|warps?)
        \d[\dx]*            # shape-like parameters with a prefix
      | stages
    )$""",
    re.VERBOSE,
)


def strip_templates(name: str) -> str:
    """Drop ``<...>`` and ``(...)`` groups (nested), and a leading return type."""
    out: list[str] = []
    depth = 0
    for ch in name:
        if ch in "<(":
            depth += 1
        elif ch in ">)" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    text = "".join(out).strip()
    # "void ns::kernel" -> "ns::kernel": a return type says nothing about the operation.
    if " " in text:
        text = text.rsplit(" ", 1)[-1]
    return text


def family(short: str) -> str:
    """The family key of a kernel's short name."""
    base = strip_templates(short) if ("<" in short or "(" in short) else short
    tokens = base.split("_")
    folded: list[str] = []
    for tok in tokens:
        mark = _WILD if _FOLD_TOKEN.match(tok) else tok
        if mark == _WILD and folded and folded[-1] == _WILD:
            continue
        folded.append(mark)
    while len(folded) > 1 and folded[-1] == _WILD:
        folded.pop()
    key = "_".join(folded)
    return key if key and key != _WILD else base
