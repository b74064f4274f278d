"""JUnit XML, for CI dashboards that read test reports.

One ``<testsuite name="nsysdiff">`` inside ``<testsuites>``:

* one test case per finding (``classname="nsysdiff.<kind>"``,
  ``name="<rule id>[<subject>]"``): a ``<failure>`` carrying the evidence for a finding
  that decides the FAIL (errors, and warnings under ``--strict``), ``<skipped>`` for a
  waived finding, ``<system-out>`` otherwise;
* one test case per rule that ran without a finding (``name="<rule id>"``): passed, or
  ``<skipped>`` when it was not judged. A rule with findings is the cases of its findings,
  so that each failure is counted once (a case for the rule too would count it twice);
* when the traces can't be compared, an ``<error>`` test case named ``comparability``
  with the reasons; under ``--no-rules``, a skipped test case named ``rules``.

The counts on ``<testsuites>`` and ``<testsuite>`` are computed from the cases written.
Characters XML 1.0 can't carry (control characters in a hostile kernel name) are
replaced with U+FFFD so that the document always parses.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

from nsysdiff import units as u
from nsysdiff.render import phrases
from nsysdiff.rules.report import NOT_JUDGED, Finding, Outcome, Report
from nsysdiff.safe import neutral


def _x(text: str) -> str:
    return neutral.xml(text)


def _case(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=_x(classname), name=_x(name))


def _finding_body(f: Finding) -> str:
    lines = [
        f"level: {f.level.value}{'' if f.statistical else ' (fact, not a statistic)'}",
        f"subject: {f.subject}",
        f"observed: {f.observed}",
        f"limit: {f.limit or '-'}",
        f"evidence: {f.evidence or '-'}",
    ]
    if f.message:
        lines.append(f"message: {f.message}")
    if f.waived:
        lines.append(f"waived: {f.waiver_reason or 'no reason given'}")
    return _x("\n".join(lines))


def render(report: Report) -> str:
    failing = set(report.failed)
    suite = ET.Element("testsuite", name="nsysdiff")
    props = ET.SubElement(suite, "properties")
    h = report.diff.headline
    for key, value in (
        ("outcome", report.outcome.value),
        ("exit_code", str(int(report.exit_code))),
        ("verdict", phrases.verdict_line(report)),
        ("base", report.diff.base_meta.source),
        ("candidate", report.diff.candidate_meta.source),
        ("base_total_ns", str(h.base_total_ns)),
        ("candidate_total_ns", str(h.candidate_total_ns)),
        ("scale", f"{h.scale:.4f}"),
        ("strict", str(report.strict).lower()),
    ):
        ET.SubElement(props, "property", name=key, value=_x(value))

    if report.outcome is Outcome.INCONCLUSIVE:
        case = _case(suite, "nsysdiff.compare.comparability", "comparability")
        err = ET.SubElement(case, "error", message=_x("; ".join(report.reasons)), type="inconclusive")
        err.text = _x("\n".join(report.reasons))
    if report.outcome is Outcome.UNJUDGED:
        case = _case(suite, "nsysdiff", "rules")
        ET.SubElement(case, "skipped", message="not judged (--no-rules)")

    # A set once: a scan of every finding per rule was quadratic with many rules.
    with_findings = {f.rule_id for f in report.findings}
    for rule in report.rules:
        if rule.rule_id in with_findings:
            continue  # its findings' cases stand for it
        case = _case(suite, f"nsysdiff.{rule.kind}", rule.rule_id)
        if rule.remark == NOT_JUDGED:
            # A test runner shows a skipped case as such, never as passed.
            ET.SubElement(case, "skipped", message=_x(f"not judged: {rule.remark_reason}"))
        else:
            out = ET.SubElement(case, "system-out")
            out.text = _x(f"{rule.description} ({u.plural(rule.findings, 'active finding')})")

    seen: Counter[str] = Counter()
    for f in report.findings:
        name = f"{f.rule_id}[{f.subject}]"
        seen[name] += 1
        if seen[name] > 1:
            name += f" #{seen[name]}"
        case = _case(suite, f"nsysdiff.{f.kind}", name)
        if f.waived:
            ET.SubElement(case, "skipped", message=_x(f"waived: {f.waiver_reason or 'no reason given'}"))
            out = ET.SubElement(case, "system-out")
            out.text = _finding_body(f)
        elif f in failing:
            fail = ET.SubElement(case, "failure", message=_x(phrases.finding_text(f)), type=f.level.value)
            fail.text = _finding_body(f)
        else:
            out = ET.SubElement(case, "system-out")
            out.text = _finding_body(f)

    cases = suite.findall("testcase")
    counts = {
        "tests": str(len(cases)),
        "failures": str(sum(1 for c in cases if c.find("failure") is not None)),
        "errors": str(sum(1 for c in cases if c.find("error") is not None)),
        "skipped": str(sum(1 for c in cases if c.find("skipped") is not None)),
    }
    root = ET.Element("testsuites", {"name": "nsysdiff", **counts})
    for key, count in counts.items():
        suite.set(key, count)
    root.append(suite)
    ET.indent(root, space="  ")
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + neutral.xml_document(body) + "\n"
