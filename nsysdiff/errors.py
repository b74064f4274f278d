"""One exception root and the exit codes, defined once for the whole tool."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit status. In CI, 1 means "regression" and nothing else."""

    PASS = 0
    REGRESSION = 1
    BAD_INPUT = 2
    INCONCLUSIVE = 3
    INTERNAL = 70


class NsysdiffError(Exception):
    """A problem the user can act on; the message says what and where."""

    exit_code: ExitCode = ExitCode.BAD_INPUT

    @property
    def lines(self) -> tuple[str, ...]:
        """The message as the lines to show: one, unless the error gathers several."""
        return (str(self),)


class TraceError(NsysdiffError):
    """The input trace is missing, unreadable, or not an Nsight Systems export."""


class FingerprintError(NsysdiffError):
    """A saved fingerprint is malformed or from an unsupported format version."""


class RuleError(NsysdiffError):
    """A rule file is invalid; raised before any trace is read."""


class RuleErrors(RuleError):
    """Every problem found in the rule files, each one line (``FILE:LINE: ...``): a file
    is fixed in one pass, not one error per run."""

    def __init__(self, errors: tuple[str, ...]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors

    @property
    def lines(self) -> tuple[str, ...]:
        return self.errors


class UsageError(NsysdiffError):
    """A command-line option has a value nsysdiff can't use."""


class InconclusiveError(NsysdiffError):
    """The two sides can't be compared meaningfully."""

    exit_code = ExitCode.INCONCLUSIVE
