"""Regular expressions from untrusted rule files, matched in linear time.

Patterns in rule files and ``--phases`` files come from other people's jobs and are
matched against names from other people's traces. Python's ``re`` backtracks: ``(a+)+$``
against a long kernel name runs for minutes. RE2 guarantees time linear in the input, at
the price of the features that need backtracking (lookaround and backreferences), which
are refused when the pattern is read.
"""

from __future__ import annotations

import functools

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print its own message on stderr; ours is one line


class RegexError(ValueError):
    """The pattern is invalid or uses a feature RE2 does not have."""

    @property
    def unsupported(self) -> bool:
        """A Perl feature RE2 leaves out (lookaround, backreferences), not a typo."""
        return str(self).startswith(("invalid perl operator", "invalid escape sequence"))


class Regex:
    """A compiled pattern: ``search`` and ``fullmatch`` like ``re``, answering True or False."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        try:
            self._compiled = re2.compile(pattern, _OPTIONS)
        except re2.error as e:
            reason = e.args[0].decode("utf-8", "replace") if e.args and isinstance(e.args[0], bytes) else str(e)
            raise RegexError(reason) from None
        self.pattern = pattern

    def search(self, text: str) -> bool:
        return self._compiled.search(text) is not None

    def fullmatch(self, text: str) -> bool:
        return self._compiled.fullmatch(text) is not None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Regex) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"Regex({self.pattern!r})"


@functools.lru_cache(maxsize=1024)
def compile(pattern: str) -> Regex:
    return Regex(pattern)
