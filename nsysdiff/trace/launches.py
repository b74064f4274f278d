"""Kernels grouped by name *and* launch shape, as ``nsys stats``' ``gpukernsum`` groups them.

``nsysdiff`` keys a kernel by its demangled name; ``gpukernsum`` prints one row per
(name, grid, block). With ``--by name+launch`` each launch shape becomes a kernel of its
own, its key the demangled name followed by ``[grid X,Y,Z, block X,Y,Z]``, so a diff shows
a kernel that kept its name but changed its launch (a split-K factor, a batch dimension in
the grid) as one shape gone and one new. The reader's kernel scan does the grouping
(:meth:`nsysdiff.trace.kernels.KernelReader.kernels` with ``shapes=True``).
"""

from __future__ import annotations

import enum
import re

from nsysdiff.trace.names import suffix

__all__ = ["LAUNCH_SUFFIX", "Grouping", "suffix"]

LAUNCH_SUFFIX = re.compile(r" \[grid -?\d+,-?\d+,-?\d+, block -?\d+,-?\d+,-?\d+\]$")


class Grouping(str, enum.Enum):
    """What makes two launches the same kernel (``--by``)."""

    name = "name"  # the demangled name, as nsys stats' cudagpukernsum without shapes
    name_launch = "name+launch"  # name, grid and block, as gpukernsum
