"""``python -m nsysdiff`` and the ``nsysdiff`` console script.

Importing the CLI (typer, rich, numpy) takes a few tenths of a second; Ctrl-C then must
exit 130 with one line, not a traceback, so this module imports nothing heavy itself.
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from nsysdiff import cli

        cli.main()
    except KeyboardInterrupt:
        sys.stderr.write("nsysdiff: interrupted\n")
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
