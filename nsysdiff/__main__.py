"""``python -m nsysdiff`` and the ``nsysdiff`` console script.

Importing the CLI (click, numpy, the renderers) takes a few tenths of a second; Ctrl-C then must
exit 130 with one line, not a traceback, so this module imports nothing heavy itself.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    # numpy's OpenBLAS starts a thread per core at import, and they spin: 0.12 s of CPU per
    # command on two cores (a third of the start-up) for linear algebra nsysdiff never does.
    # Set before numpy loads; a value the user set is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from nsysdiff import cli

        cli.main()
    except KeyboardInterrupt:
        sys.stderr.write("nsysdiff: interrupted\n")
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
