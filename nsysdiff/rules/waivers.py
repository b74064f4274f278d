"""Waivers: silence a rule's findings on a subject, with a reason, until a date."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date

from nsysdiff.rules import options as opt
from nsysdiff.rules.model import Option, Section, Waiver
from nsysdiff.rules.report import Finding, Level

OPTIONS = (
    Option(
        "rule",
        "string",
        opt.nonempty_string,
        "The id of the rule whose findings are waived.",
        required=True,
    ),
    Option(
        "subject",
        "string",
        opt.string,
        "The exact subject of the findings (as the report prints it).",
    ),
    Option("subject_regex", "regex", opt.regex, "Or: a regex searched in the subject."),
    Option(
        "reason",
        "string",
        opt.nonempty_string,
        "Why the finding is accepted (shown in the report).",
        required=True,
    ),
    Option(
        "expires",
        "date",
        opt.iso_date,
        "Last day the waiver applies (YYYY-MM-DD); after it the finding is active again.",
        required=True,
    ),
)

SECTION = Section(
    name="waivers",
    summary="Accept a known finding for a while: rule id + subject, a reason and an expiry date.",
    doc="""\
A top-level `waivers:` list. Each waiver names a rule id and the subject of its findings,
either exactly (`subject`) or by regex (`subject_regex`); exactly one of the two is
required, and so are a non-empty `reason` and an `expires` date (YYYY-MM-DD). The rule id
must be a rule of the loaded rule set.

A waived finding stays in the report, marked waived with the reason, and does not count
towards the outcome. A waiver applies through its expiry date; from the next day on it
stops waiving (the findings it covered count again) and it is reported as a warning
finding of kind `waiver`, so that nobody forgets to renew or remove it.
""",
    options=OPTIONS,
)


def apply(findings: Sequence[Finding], waivers: Sequence[Waiver], today: date) -> list[Finding]:
    """The findings with active waivers applied (first matching waiver wins)."""
    active = [w for w in waivers if not w.expired(today)]
    out = []
    for f in findings:
        w = next((w for w in active if w.matches(f)), None)
        out.append(replace(f, waived=True, waiver_reason=w.reason) if w else f)
    return out


def expired(waivers: Sequence[Waiver], today: date) -> list[Finding]:
    """One warning per expired waiver."""
    return [
        Finding(
            level=Level.WARNING,
            rule_id=w.rule,
            kind="waiver",
            subject=w.subject_text,
            # Today against the date it was valid until: the date twice said nothing.
            observed=f"today {today.isoformat()}, {_days((today - w.expires).days)} past",
            limit=f"valid until {w.expires.isoformat()}",
            evidence=f"{w.source}:{w.line}: reason: {w.reason}",
            message="this waiver has expired and no longer waives; renew its date or remove it",
            statistical=False,
        )
        for w in waivers
        if w.expired(today)
    ]


def unmatched(findings: Sequence[Finding], waivers: Sequence[Waiver], today: date) -> list[Waiver]:
    """Active waivers that match no finding: a typo in a subject, or a fixed problem."""
    return [w for w in waivers if not w.expired(today) and not any(w.matches(f) for f in findings)]


def _days(n: int) -> str:
    return f"{n:,} day" if n == 1 else f"{n:,} days"
