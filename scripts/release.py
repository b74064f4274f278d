"""The release step (CHANGELOG.md says why releases are pinned by commit SHA).

``python scripts/release.py cut 2.1.0``: the release commit's changes. The version in
``pyproject.toml`` and ``nsysdiff/__init__.py`` becomes 2.1.0 and CHANGELOG.md's
Unreleased section becomes the entry ``## 2.1.0``. Commit them as "Release 2.1.0".

``python scripts/release.py open 2.2.0.dev0``: the commit after it. The version becomes the
next one's ``.dev0``, so that a checkout between releases says so (``nsysdiff --version``),
CHANGELOG.md opens an empty Unreleased section and names the release's commit under its
entry, and every pinned reference in the docs and examples (the action's ``uses:``, the
example workflow's ``NSYSDIFF_REF``, the ``pip install git+...@REF`` lines) becomes the
release commit's full SHA (HEAD when this runs), with the version it carries beside it.
Where the repository is published, tag that commit ``v2.1.0`` too; the pins do not need
the tag, a SHA resolves in every clone.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASE = re.compile(r"\d+\.\d+\.\d+")
DEV = re.compile(r"\d+\.\d+\.\d+\.dev\d+")
# Every pinned reference, with the version named beside it where it has one.
PINNED = (
    "README.md",
    "action.yml",
    "docs/html.md",
    "examples/github/README.md",
    "examples/github/nsys-regression.yml",
    "examples/github/nsys-history.yml",
)
_PIN = re.compile(r"(nsysdiff/nsysdiff@|NSYSDIFF_REF: )[0-9a-f]{40}(\"?)(\s+# v\d+\.\d+\.\d+)?")


def _read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def _write(name: str, text: str) -> None:
    (ROOT / name).write_text(text, encoding="utf-8")


def _set_version(version: str) -> None:
    _write("pyproject.toml", re.sub(r'(?m)^version = "[^"]+"$', f'version = "{version}"', _read("pyproject.toml")))
    init = "nsysdiff/__init__.py"
    _write(init, re.sub(r'(?m)^__version__ = "[^"]+"$', f'__version__ = "{version}"', _read(init)))


def cut(version: str) -> None:
    text = _read("CHANGELOG.md")
    if "\n## Unreleased\n" not in text:
        raise SystemExit("CHANGELOG.md has no Unreleased section to release")
    _write("CHANGELOG.md", text.replace("\n## Unreleased\n", f"\n## {version}\n", 1))
    _set_version(version)


def open_next(version: str) -> None:
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True)
    commit = sha.stdout.strip()
    released = re.search(r'(?m)^version = "([^"]+)"$', _read("pyproject.toml"))
    if released is None or not RELEASE.fullmatch(released[1]):
        raise SystemExit("HEAD is no release commit: its pyproject.toml carries no release version")
    text = _read("CHANGELOG.md")
    entry = f"\n## {released[1]}\n"
    text = text.replace(entry, f"\n## Unreleased\n\nNothing yet.\n{entry}\nReleased at commit {commit}.\n", 1)
    _write("CHANGELOG.md", text)
    for name in PINNED:
        pinned = _PIN.sub(lambda m: f"{m[1]}{commit}{m[2]}" + (f"  # v{released[1]}" if m[3] else ""), _read(name))
        _write(name, pinned)
    _set_version(version)


def main() -> None:
    if len(sys.argv) != 3 or sys.argv[1] not in ("cut", "open"):
        raise SystemExit("usage: python scripts/release.py cut X.Y.Z | open X.Y.Z.dev0")
    step, version = sys.argv[1:]
    if step == "cut" and not RELEASE.fullmatch(version):
        raise SystemExit(f"{version}: a release is MAJOR.MINOR.PATCH")
    if step == "open" and not DEV.fullmatch(version):
        raise SystemExit(f"{version}: the version between releases is MAJOR.MINOR.PATCH.devN")
    cut(version) if step == "cut" else open_next(version)


if __name__ == "__main__":
    main()
