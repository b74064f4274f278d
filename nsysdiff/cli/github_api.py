"""One sticky pull-request comment through GitHub's REST API, with the standard library only.

The comment is found again by a hidden marker on its first line
(``<!-- nsysdiff:comment KEY -->``), so a second run edits it in place instead of adding
another. The API's base address comes from ``GITHUB_API_URL`` (GitHub Enterprise Server has
its own); the token is sent in a header and never printed.

Two refusals are told apart, because they call for different words: the token may not
write to the pull request (403 or 404: a fork's pull request gets a read-only token), and
the API is rate limited (429, or 403 with ``x-ratelimit-remaining: 0`` or ``retry-after``).
A short rate-limit wait is waited out (at most :data:`MAX_WAIT` seconds, twice); a longer
one is reported.
"""

from __future__ import annotations

import http.client
import json
import math
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from email.message import Message
from typing import Any

from nsysdiff import __version__
from nsysdiff.safe import neutral

API_VERSION = "2022-11-28"
COMMENT_LIMIT = 65_536  # characters GitHub accepts in one comment body
PAGE = 100  # comments per page (GitHub's maximum)
MAX_PAGES = 50  # 5,000 comments: a pull request with more is not searched further
MAX_WAIT = 10.0  # seconds of a rate-limit wait worth waiting out
RETRIES = 2
TIMEOUT = 30.0
# The whole exchange, every request and wait included: a server that drips one byte at a
# time never trips the per-read timeout, and a CI step must not wait on it for ever.
DEADLINE = 120.0


class ApiError(Exception):
    """A request GitHub answered with an error, or never answered."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status
        self.message = message


class Refused(ApiError):
    """The token may not do this (403, 404): read-only on a fork's pull request."""


class RateLimited(ApiError):
    """Too many requests; ``wait`` is how long GitHub asks to wait, when it says."""

    def __init__(self, status: int, message: str, wait: float | None) -> None:
        super().__init__(status, message)
        self.wait = wait


def marker(key: str = "") -> str:
    """The hidden first line that finds the comment again; ``key`` tells several apart
    (one per job or matrix entry), letters, digits and ``._-`` only."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "-", key)[:100]
    return f"<!-- nsysdiff:comment{' ' + safe if safe else ''} -->"


def comment_body(markdown: str, key: str = "", report_url: str | None = None) -> str:
    """The marker, the Markdown report cut to fit one comment, and a link to the HTML report."""
    head = marker(key) + "\n"
    link = f"\n**[The full HTML report]({report_url})** (an artifact of this run)\n" if report_url else ""
    # cap_markdown counts bytes of UTF-8, never fewer than characters: what fits, fits.
    room = COMMENT_LIMIT - len(head) - len(link)
    body = neutral.cap_markdown(markdown, room, limit_name="GitHub's 65,536-character comment limit")
    return head + body + link


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: Mapping[str, str]
    data: Any


class GitHub:
    """The few REST calls a sticky comment needs."""

    def __init__(
        self,
        api_url: str,
        token: str,
        *,
        timeout: float = TIMEOUT,
        sleep: Callable[[float], None] | None = None,
        deadline: float | None = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(api_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ApiError(0, f"GITHUB_API_URL {api_url!r} is not an http(s) address")
        self.api_url = api_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.sleep = sleep or (lambda seconds: time.sleep(seconds))
        self.allowed = DEADLINE if deadline is None else deadline
        self.deadline = time.monotonic() + self.allowed
        self.opener = urllib.request.build_opener(_SameOrigin())

    def request(self, method: str, path: str, payload: Any = None) -> Response:
        """One call, a short rate-limit wait waited out up to :data:`RETRIES` times."""
        for attempt in range(RETRIES + 1):
            try:
                return self._once(method, path, payload)
            except RateLimited as e:
                if attempt == RETRIES or e.wait is None or e.wait > MAX_WAIT:
                    raise
                if time.monotonic() + e.wait > self.deadline:
                    raise
                self.sleep(e.wait)
        raise AssertionError("unreachable")

    def _once(self, method: str, path: str, payload: Any) -> Response:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        req = urllib.request.Request(f"{self.api_url}{path}", data=data, method=method)
        req.add_header("Accept", "application/vnd.github+json")
        req.add_header("X-GitHub-Api-Version", API_VERSION)
        req.add_header("User-Agent", f"nsysdiff/{__version__}")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ApiError(0, f"{self.api_url} gave no complete answer within {self.allowed:g} s")
        # On a worker thread, so that the deadline holds however slowly the answer drips.
        box: list[Response | ApiError] = []
        worker = threading.Thread(target=lambda: box.append(self._exchange(req)), daemon=True)
        worker.start()
        worker.join(left)
        if not box:
            raise ApiError(0, f"{self.api_url} gave no complete answer within {self.allowed:g} s")
        if isinstance(box[0], ApiError):
            raise box[0]
        return box[0]

    def _exchange(self, req: urllib.request.Request) -> Response | ApiError:
        """One request and its whole answer, or the reason there is none: whatever the
        server sends (a bad status line, a header over 64 KiB, more than 100 headers, a
        body cut short, JSON nested past the parser's depth), one :class:`ApiError`."""
        try:
            with self.opener.open(req, timeout=self.timeout) as resp:
                body = resp.read()
                return Response(resp.status, _headers(resp.headers), json.loads(body) if body else None)
        except urllib.error.HTTPError as e:
            try:
                return _error(e.code, _headers(e.headers), e.read())
            except (http.client.HTTPException, OSError) as inner:
                return ApiError(e.code, f"the error's body could not be read ({_reason(inner)})")
        except ApiError as e:
            return e
        except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError) as e:
            return ApiError(0, f"{self.api_url} did not answer properly ({_reason(getattr(e, 'reason', e))})")
        except (ValueError, RecursionError) as e:  # not JSON, or nested too deeply
            return ApiError(0, f"{self.api_url} answered with something other than JSON ({_reason(e)})")

    def comments(self, repo: str, number: int) -> Iterator[dict[str, Any]]:
        """The pull request's comments, oldest first."""
        for page in range(1, MAX_PAGES + 1):
            got = self.request("GET", f"/repos/{repo}/issues/{number}/comments?per_page={PAGE}&page={page}").data
            if not isinstance(got, list):
                raise ApiError(0, "the list of comments is not a list")
            yield from (c for c in got if isinstance(c, dict))
            if len(got) < PAGE:
                return

    def upsert(self, repo: str, number: int, body: str, key: str = "") -> tuple[str, int]:
        """Update the comment that starts with the marker, else create one: ("updated" or
        "created", its id)."""
        first = marker(key)
        for c in self.comments(repo, number):
            text = c.get("body")
            if isinstance(text, str) and text.split("\n", 1)[0] == first and isinstance(c.get("id"), int):
                self.request("PATCH", f"/repos/{repo}/issues/comments/{c['id']}", {"body": body})
                return "updated", int(c["id"])
        made = self.request("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body}).data
        return "created", int(made["id"]) if isinstance(made, dict) and isinstance(made.get("id"), int) else 0


def _reason(e: object) -> str:
    """An exception's text as one neutral line of bounded length: it may quote the server."""
    return neutral.text(" ".join(str(e).split()) or type(e).__name__, 200)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # a port that is no number: no origin to match
        port = -1
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), port if port is not None else default


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only within the API's origin (scheme, host and port): the token
    rides in every request's header, and must never reach another server."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: http.client.HTTPMessage, newurl: str
    ) -> urllib.request.Request | None:
        if _origin(newurl) != _origin(req.full_url):
            shown = neutral.text(urllib.parse.urlsplit(newurl).netloc, 120)
            raise ApiError(code, f"redirected to another origin ({shown}); the token is never sent there")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _headers(message: Message | Mapping[str, str] | None) -> dict[str, str]:
    return {k.lower(): v for k, v in (message or {}).items()}


def _error(status: int, headers: Mapping[str, str], raw: bytes) -> ApiError:
    try:
        message = str(json.loads(raw).get("message", "")) if raw else ""
    except (ValueError, AttributeError, RecursionError):
        message = ""
    message = neutral.text(message or "no message", 300)
    wait = _wait(headers)
    limited = status == 429 or (
        status == 403 and (headers.get("x-ratelimit-remaining") == "0" or "retry-after" in headers)
    )
    if limited:
        return RateLimited(status, message, wait)
    if status in (401, 403, 404):
        return Refused(status, message)
    return ApiError(status, message)


def _wait(headers: Mapping[str, str]) -> float | None:
    """Seconds GitHub asks to wait: ``retry-after``, else until ``x-ratelimit-reset``."""
    try:
        if "retry-after" in headers:
            wait = float(headers["retry-after"])
        elif headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
            wait = float(headers["x-ratelimit-reset"]) - time.time()
        else:
            return None
    except ValueError:
        return None
    # "nan" and "inf" parse as floats; a wait that is no finite number is no wait said.
    return max(wait, 0.0) if math.isfinite(wait) else None
