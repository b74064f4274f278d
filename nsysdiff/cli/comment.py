"""``nsysdiff comment``: the Markdown report as one sticky pull-request comment.

Run by the GitHub Action (``comment: true``) after the diff. It creates the comment, or
updates the one that carries its hidden marker, so a pull request never collects one
comment per push. Where it may not (a fork's pull request gets a read-only token) or GitHub
refuses for now (rate limits), it says why in one line, in the log and in the step summary
beside the report, and exits 0: a comment that could not be posted is no failed rule.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import click

from nsysdiff.cli import github_api, options
from nsysdiff.cli.root import app, handled
from nsysdiff.errors import UsageError
from nsysdiff.render import github
from nsysdiff.safe import neutral

DEFAULT_API = "https://api.github.com"
REPORT_LIMIT = 8 * 1024 * 1024  # bytes of Markdown read; the renderer caps its own at 1 MB
EVENT_LIMIT = 64 * 1024 * 1024  # bytes of an event payload; GitHub's are far smaller


@app.command("comment")
@handled
@click.argument(
    "report", type=options.PATH, metavar="REPORT.md", help="The Markdown report (nsysdiff ... -o REPORT.md)."
)
@click.option("--report-url", metavar="URL", help="Where the HTML report is (the uploaded artifact).")
@click.option(
    "--key",
    metavar="KEY",
    default="",
    show_default=False,
    help="Tells several nsysdiff comments on one pull request apart.",
)
@click.option(
    "--pr",
    type=options.at_least(1, "give the pull request's number, at least 1"),
    metavar="N",
    help="The pull request (default: from GITHUB_EVENT_PATH).",
)
@click.option("--repo", metavar="OWNER/NAME", help="The repository (default: GITHUB_REPOSITORY).")
def comment(report: Path, report_url: str | None, key: str, pr: int | None, repo: str | None) -> None:
    """Post the Markdown report as one pull-request comment, updated in place on every run
    (GITHUB_TOKEN with pull-requests: write; GITHUB_API_URL)."""
    markdown = _read(report)
    env = os.environ
    number = pr if pr is not None else _pull_request(env.get("GITHUB_EVENT_PATH"))
    repository = repo or env.get("GITHUB_REPOSITORY", "")
    if number is None:
        _say("no pull-request comment: this run is not for a pull request", env, summary=False)
        return
    if not repository or "/" not in repository:
        raise UsageError("comment: no repository; give --repo OWNER/NAME or set GITHUB_REPOSITORY")
    token = env.get("GITHUB_TOKEN", "")
    if not token:
        _fallback("no GITHUB_TOKEN to post with", env)
        return
    body = github_api.comment_body(markdown, key, report_url)
    try:
        client = github_api.GitHub(env.get("GITHUB_API_URL") or DEFAULT_API, token)
        done, ident = client.upsert(repository, number, body, key)
    except github_api.Refused as e:
        _fallback(
            f"the token may not write to pull request #{number} ({e}); a pull request from a fork "
            "gets a read-only token, and other pull requests need 'permissions: pull-requests: write'",
            env,
        )
        return
    except github_api.RateLimited as e:
        wait = f"; retry in {e.wait:.0f} s" if e.wait is not None else ""
        _fallback(f"GitHub's API is rate limited ({e}{wait})", env)
        return
    except github_api.ApiError as e:
        _fallback(f"GitHub's API failed ({e})", env)
        return
    _say(f"pull-request comment {done} (#{number}, comment {ident}, {len(body):,} characters)", env, summary=False)


def _regular(path: Path, limit: int, what: str) -> bytes:
    """At most ``limit + 1`` bytes of a regular file, opened without blocking: a FIFO
    given as the report or the event payload would otherwise wait for a writer for ever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise UsageError(f"{path}: can't read {what} ({e.strerror or e})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"{path}: {what} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit + 1)
    except OSError as e:
        raise UsageError(f"{path}: can't read {what} ({e.strerror or e})") from None
    finally:
        os.close(fd)


def _read(path: Path) -> str:
    data = _regular(path, REPORT_LIMIT, "the report")
    if len(data) > REPORT_LIMIT:
        raise UsageError(f"{path}: over {REPORT_LIMIT:,} bytes; not a Markdown report of nsysdiff")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text; not a Markdown report of nsysdiff") from None


def _pull_request(event_path: str | None) -> int | None:
    """The pull request's number from the event payload (pull_request, pull_request_target)."""
    if not event_path:
        return None
    data = _regular(Path(event_path), EVENT_LIMIT, "the event payload (GITHUB_EVENT_PATH)")
    try:
        if len(data) > EVENT_LIMIT:
            raise ValueError(f"over {EVENT_LIMIT:,} bytes")
        event = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise UsageError(f"{event_path}: the event payload (GITHUB_EVENT_PATH) is nested too deeply") from None
    except ValueError as e:
        raise UsageError(
            f"{event_path}: can't read the event payload (GITHUB_EVENT_PATH): {' '.join(str(e).split())[:200]}"
        ) from None
    pull = event.get("pull_request") if isinstance(event, dict) else None
    number = pull.get("number") if isinstance(pull, dict) else None
    return number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None


def _say(line: str, env: os._Environ[str] | dict[str, str], *, summary: bool) -> None:
    sys.stderr.write(f"nsysdiff: {neutral.text(line)}\n")
    if summary and env.get("GITHUB_STEP_SUMMARY"):
        with open(env["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
            fh.write(neutral.lines(f"\n> [!NOTE]\n> nsysdiff: {neutral.text(line)}; the report is above.\n"))


def _fallback(why: str, env: os._Environ[str] | dict[str, str]) -> None:
    """One line saying why, in the log (a warning annotation) and in the step summary."""
    line = f"no pull-request comment: {why}"
    if env.get("GITHUB_ACTIONS") == "true":
        sys.stdout.write(github.command("warning", neutral.text(line), title="nsysdiff comment") + "\n")
    _say(line, env, summary=True)
