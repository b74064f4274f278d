from __future__ import annotations

from nsysdiff.cli import main

main()
