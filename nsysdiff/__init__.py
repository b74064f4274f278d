"""nsysdiff: diff two Nsight Systems traces and point at the change that is abnormal."""

from __future__ import annotations

__version__ = "2.1.0"
