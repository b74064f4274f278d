"""nsysdiff: diff two Nsight Systems traces and point at the change that is abnormal."""

from __future__ import annotations

__version__ = "2.2.0.dev0"
