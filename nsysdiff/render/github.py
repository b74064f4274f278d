"""GitHub Actions: workflow-command annotations, the job summary and step outputs.

:func:`render` prints one ``::error`` / ``::warning`` / ``::notice`` command per active
finding (a finding that decides a FAIL, e.g. a warning under ``--strict``, is an
``::error``), one ``::warning`` per reason the traces can't be compared, one ``::notice``
for the rules that judged nothing and one for those whose subject moved within its
noise (each with the reasons), and a final ``::notice`` carrying the verdict line.

Everything interpolated into a command is escaped the way GitHub's toolkit
(``@actions/core``, ``command.ts``) does: in the message ``%``, ``\\r``, ``\\n`` become
``%25``, ``%0D``, ``%0A``; in a property (``title=``) ``:`` and ``,`` also become ``%3A``
and ``%2C``. A kernel name therefore can't end a command early or start another one.

:func:`publish` appends the Markdown report to ``$GITHUB_STEP_SUMMARY`` and writes
``verdict=`` and ``exit-code=`` to ``$GITHUB_OUTPUT``, each only when set.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from nsysdiff.errors import NsysdiffError
from nsysdiff.render import markdown, phrases
from nsysdiff.rules.report import Finding, Level, Report, remark_notes
from nsysdiff.safe import neutral

_COMMAND = {Level.ERROR: "error", Level.WARNING: "warning", Level.INFO: "notice"}


def escape_data(text: str) -> str:
    """A workflow command's message, as ``escapeData`` in ``@actions/core``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command property value, as ``escapeProperty`` in ``@actions/core``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: str) -> str:
    """``::name key=value,key=value::message``, escaped."""
    props = ",".join(f"{k}={escape_property(v)}" for k, v in properties.items())
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def annotation(f: Finding, failing: bool) -> str:
    # A limit within the noise is a warning whatever its level: it decided nothing.
    name = "error" if failing else ("warning" if f.inconclusive else _COMMAND[f.level])
    message = phrases.finding_text(f)
    if f.message:
        message += f" ({f.message})"
    if not f.statistical:
        message = "[fact] " + message
    return command(name, message, title=f"{f.rule_id}: {f.subject}")


def render(report: Report) -> str:
    # Escaping (escape_data) keeps a name inside its command; neutral.text also keeps ESC and
    # the legacy "##[" prefix out of the log line.
    report = neutral.scrub(report, neutral.text)
    failing = set(report.failed)
    lines = [annotation(f, f in failing) for f in report.active]
    lines += [command("warning", reason, title="nsysdiff: inconclusive") for reason in report.reasons]
    # Rules that judged nothing, or saw a change within its noise: never a silent pass.
    for note in remark_notes(report.rules):
        head, _, body = note.partition(": ")
        lines.append(command("notice", body, title=f"nsysdiff: {head}"))
    lines.append(command("notice", phrases.verdict_line(report), title="nsysdiff"))
    return "\n".join(lines) + "\n"


def _append(path: str, text: str, what: str) -> None:
    try:
        with Path(path).open("a", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise NsysdiffError(f"{path}: can't append the {what} ({e.strerror or e})") from None


def publish(report: Report, environ: Mapping[str, str]) -> None:
    """Append the Markdown report to the job summary and the verdict to the step outputs."""
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        _append(summary, markdown.render(report) + "\n", "job summary ($GITHUB_STEP_SUMMARY)")
    outputs = environ.get("GITHUB_OUTPUT")
    if outputs:
        lines = f"verdict={report.outcome.value}\nexit-code={int(report.exit_code)}\n"
        _append(outputs, lines, "step outputs ($GITHUB_OUTPUT)")
