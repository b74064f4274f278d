"""``nsysdiff comment`` against a small fake of GitHub's REST API on 127.0.0.1, started and
stopped by each test: create, update in place, never a duplicate, permission refused (a
fork's read-only token), rate limited (429, and 403 with the rate-limit headers)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from conftest import Result, run_cli
from rawhttp import RawServer, json_reply

from nsysdiff.cli import github_api

REPO = "octo/gpu-model"
PR = 7
TOKEN = "ghs_test-token"


@dataclass
class Fake:
    """The state of the fake API and what it was asked."""

    comments: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    refuse_writes: bool = False  # a fork's pull request: reading works, writing is 403
    limited: list[tuple[int, dict[str, str]]] = field(default_factory=list)  # answers before serving
    next_id: int = 100
    url: str = ""


class _Handler(BaseHTTPRequestHandler):
    fake: Fake

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def _handle(self, method: str) -> None:
        f = self.fake
        f.requests.append((method, self.path))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(401, {"message": "Bad credentials"})
        if f.limited:
            status, headers = f.limited.pop(0)
            return self._send(status, {"message": "API rate limit exceeded"}, headers)
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length)) if length else None
        if method != "GET" and f.refuse_writes:
            return self._send(403, {"message": "Resource not accessible by integration"})
        if parts.path == f"/repos/{REPO}/issues/{PR}/comments":
            if method == "GET":
                q = parse_qs(parts.query)
                per, page = int(q["per_page"][0]), int(q["page"][0])
                return self._send(200, f.comments[(page - 1) * per : page * per])
            f.next_id += 1
            made = {"id": f.next_id, "body": payload["body"], "user": {"login": "github-actions[bot]"}}
            f.comments.append(made)
            return self._send(201, made)
        if parts.path.startswith(f"/repos/{REPO}/issues/comments/") and method == "PATCH":
            ident = int(parts.path.rsplit("/", 1)[1])
            for c in f.comments:
                if c["id"] == ident:
                    c["body"] = payload["body"]
                    return self._send(200, c)
        return self._send(404, {"message": "Not Found"})

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")


@pytest.fixture
def fake() -> Iterator[Fake]:
    state = Fake()
    handler = type("Handler", (_Handler,), {"fake": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def env(fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pull_request run of the Action: its environment and event payload."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR}}))
    summary = tmp_path / "summary.md"
    summary.write_text("report already here\n")
    for k, v in {
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_ACTIONS": "true",
    }.items():
        monkeypatch.setenv(k, v)
    # Rate-limit waits are real seconds; the tests wait none.
    monkeypatch.setattr(github_api.time, "sleep", lambda s: None)
    report = tmp_path / "report.md"
    report.write_text("**nsysdiff: FAIL** (exit 1) · 1 failed rule\n\n| a | b |\n|--|--|\n| 1 | 2 |\n")
    return tmp_path


def _comment(tmp: Path, *extra: str) -> Result:
    return run_cli(
        "comment",
        tmp / "report.md",
        "--report-url",
        "https://github.com/octo/gpu-model/actions/runs/1/artifacts/2",
        *extra,
    )


def test_creates_then_updates_in_place(fake: Fake, env: Path) -> None:
    fake.comments.append({"id": 5, "body": "LGTM", "user": {"login": "someone"}})
    code, out, err = _comment(env)
    assert (code, out) == (0, "")
    assert "pull-request comment created" in err
    assert [c["id"] for c in fake.comments] == [5, 101]
    body = fake.comments[1]["body"]
    assert body.startswith(github_api.marker() + "\n**nsysdiff: FAIL**")
    assert "[The full HTML report](https://github.com/octo/gpu-model/actions/runs/1/artifacts/2)" in body

    (env / "report.md").write_text("**nsysdiff: PASS** (exit 0)\n")
    code, out, err = _comment(env)
    assert code == 0 and "pull-request comment updated (#7, comment 101" in err
    assert [c["id"] for c in fake.comments] == [5, 101]  # no duplicate
    assert "nsysdiff: PASS" in fake.comments[1]["body"] and fake.comments[0]["body"] == "LGTM"
    assert [m for m, _ in fake.requests] == ["GET", "POST", "GET", "PATCH"]


def test_finds_its_comment_past_the_first_page(fake: Fake, env: Path) -> None:
    fake.comments += [{"id": i, "body": f"comment {i}"} for i in range(1, 151)]
    fake.comments.insert(120, {"id": 999, "body": github_api.marker() + "\nold report"})
    # A comment that only quotes the marker further down is someone else's.
    fake.comments.insert(3, {"id": 998, "body": "> see\n" + github_api.marker()})
    code, _, err = _comment(env)
    assert code == 0 and "updated (#7, comment 999" in err
    assert len(fake.comments) == 152
    assert ("PATCH", f"/repos/{REPO}/issues/comments/999") in fake.requests


def test_keys_keep_comments_apart(fake: Fake, env: Path) -> None:
    for _ in range(2):
        _comment(env, "--key", "h100")
        _comment(env, "--key", "a100")
    assert [c["body"].split("\n", 1)[0] for c in fake.comments] == [
        "<!-- nsysdiff:comment h100 -->",
        "<!-- nsysdiff:comment a100 -->",
    ]


def test_permission_refused_falls_back_to_the_step_summary(fake: Fake, env: Path) -> None:
    fake.refuse_writes = True
    code, out, err = _comment(env)
    assert code == 0 and fake.comments == []
    why = (
        "no pull-request comment: the token may not write to pull request #7 (HTTP 403: Resource not "
        "accessible by integration); a pull request from a fork gets a read-only token"
    )
    assert err.startswith(f"nsysdiff: {why}") and len(err.splitlines()) == 1
    assert out.startswith("::warning title=nsysdiff comment::no pull-request comment") and out.count("\n") == 1
    summary = (env / "summary.md").read_text()
    assert summary.startswith("report already here\n") and why in summary
    assert TOKEN not in out + err + summary


@pytest.mark.parametrize(
    ("status", "headers"),
    [(429, {"Retry-After": "3"}), (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"})],
    ids=["429", "403-primary"],
)
def test_a_short_rate_limit_is_waited_out(
    fake: Fake,
    env: Path,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    headers: dict[str, str],
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(github_api.time, "sleep", waits.append)
    fake.limited = [(status, headers)]
    code, _, err = _comment(env)
    assert code == 0 and "comment created" in err and len(fake.comments) == 1
    assert len(waits) == 1 and waits[0] <= github_api.MAX_WAIT


@pytest.mark.parametrize(
    ("status", "headers", "said"),
    [
        (429, {"Retry-After": "3600"}, "HTTP 429: API rate limit exceeded; retry in 3600 s"),
        (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "99999999999"}, "HTTP 403: API rate limit"),
        (403, {"Retry-After": "60"}, "HTTP 403: API rate limit exceeded; retry in 60 s"),
    ],
    ids=["429", "403-primary", "403-secondary"],
)
def test_a_long_rate_limit_falls_back(
    fake: Fake,
    env: Path,
    status: int,
    headers: dict[str, str],
    said: str,
) -> None:
    fake.limited = [(status, headers)] * 5
    code, _, err = _comment(env)
    assert code == 0 and fake.comments == []
    assert err.startswith("nsysdiff: no pull-request comment: GitHub's API is rate limited (") and said in err
    assert "rate limited" in (env / "summary.md").read_text()


def test_rate_limit_that_never_ends_is_not_retried_forever(fake: Fake, env: Path) -> None:
    fake.limited = [(429, {"Retry-After": "1"})] * 10
    code, _, err = _comment(env)
    assert code == 0 and "rate limited" in err
    assert len(fake.requests) == github_api.RETRIES + 1


def test_not_a_pull_request(fake: Fake, env: Path) -> None:
    (env / "event.json").write_text(json.dumps({"ref": "refs/heads/main"}))  # a push
    code, out, err = _comment(env)
    assert (code, out, fake.requests) == (0, "", [])
    assert err == "nsysdiff: no pull-request comment: this run is not for a pull request\n"


def test_no_token_falls_back(fake: Fake, env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    code, _, err = _comment(env)
    assert code == 0 and fake.requests == [] and "no GITHUB_TOKEN" in err


def test_unreachable_api_falls_back(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9")  # discard port: nothing listens
    code, _, err = _comment(env)
    assert code == 0 and "GitHub's API failed (http://127.0.0.1:9 did not answer" in err


def test_bad_report_is_exit_2(env: Path) -> None:
    (env / "report.md").write_bytes(b"\xff\xfe binary")
    code, _, err = _comment(env)
    assert code == 2 and err.strip().endswith("report.md: not UTF-8 text; not a Markdown report of nsysdiff")


def test_body_fits_one_comment() -> None:
    huge = "| row |\n" * 20_000 + "<details>\n<summary>x</summary>\n\n" + "y\n" * 5000
    body = github_api.comment_body(huge, "k", "https://example.invalid/a")
    assert len(body) <= github_api.COMMENT_LIMIT
    assert body.startswith("<!-- nsysdiff:comment k -->\n") and body.rstrip().endswith("(an artifact of this run)")
    assert "65,536-character comment limit" in body
    small = github_api.comment_body("ok\n")
    assert small == "<!-- nsysdiff:comment -->\nok\n"


def test_marker_keys_are_inert() -> None:
    assert github_api.marker("a --> <script>") == "<!-- nsysdiff:comment a------script- -->"


# -- hostile servers: raw sockets on 127.0.0.1 ------------------------------------------


DEEP = b"[" * 200_000 + b"]" * 200_000
HOSTILE_REPLIES: dict[str, bytes] = {
    "deeply nested JSON": json_reply("200 OK", DEEP),
    "a 500 with deeply nested JSON": json_reply("500 Internal Server Error", DEEP),
    "a bad status line": b"HTTP/1.1 \x1b]0;x\x07 WHAT\r\n\r\n",
    "a cut-short body": json_reply("200 OK", b"[]")[:-2].replace(b"Content-Length: 2", b"Content-Length: 900"),
    "a header line over 64 KiB": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n[]",
    "more than 100 headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: 1\r\n" % i for i in range(120)) + b"\r\n[]",
    "Retry-After: nan": json_reply("429 Too Many Requests", b'{"message": "slow"}', b"Retry-After: nan\r\n"),
    "X-RateLimit-Reset: nan": json_reply(
        "403 Forbidden", b'{"message": "slow"}', b"X-RateLimit-Remaining: 0\r\nX-RateLimit-Reset: nan\r\n"
    ),
    "terminal bytes in the error": b"HTTP/1.1 500 \x1b[2J\x07\r::error::PWNED\r\n\r\n",
}


@pytest.mark.parametrize("case", list(HOSTILE_REPLIES))
def test_a_hostile_server_is_one_neutral_line(case: str, env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = RawServer(lambda head: HOSTILE_REPLIES[case])
    monkeypatch.setenv("GITHUB_API_URL", server.url)
    try:
        code, out, err = _comment(env)
    finally:
        server.close()
    assert code == 0, err
    assert "Traceback" not in err and err.count("\n") == 1 and "no pull-request comment" in err
    for stream in (out, err):
        assert "\x1b" not in stream and "\x07" not in stream and "\r" not in stream
        assert not any(line.lstrip().startswith("::error") for line in stream.splitlines())


@pytest.mark.parametrize("where", ["another host", "another port"])
def test_the_token_never_follows_a_redirect_to_another_origin(
    where: str, env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catcher = RawServer(lambda head: json_reply("200 OK", b"[]"))
    port = catcher.url.rsplit(":", 1)[1]
    target = f"http://localhost:{port}" if where == "another host" else catcher.url
    api = RawServer(lambda head: f"HTTP/1.1 302 Found\r\nLocation: {target}/x\r\nContent-Length: 0\r\n\r\n".encode())
    if where == "another host":
        # The same server under another name: only the host differs.
        api.close()
        api = RawServer(
            lambda head: f"HTTP/1.1 302 Found\r\nLocation: {target}/x\r\nContent-Length: 0\r\n\r\n".encode()
        )
    monkeypatch.setenv("GITHUB_API_URL", api.url)
    try:
        code, _, err = _comment(env)
    finally:
        api.close()
        catcher.close()
    assert code == 0 and "another origin" in err, err
    assert not any(TOKEN.encode() in h for h in catcher.heads), "the token left the API's origin"


def test_a_dripping_server_meets_the_deadline(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    reply = json_reply("200 OK", b"[]")
    server = RawServer(lambda head: [reply[i : i + 1] for i in range(len(reply))], drip=0.3)
    monkeypatch.setenv("GITHUB_API_URL", server.url)
    monkeypatch.setattr(github_api, "DEADLINE", 2.0)
    started = time.monotonic()
    try:
        code, _, err = _comment(env)
    finally:
        server.close()
    assert code == 0 and "no complete answer within" in err, err
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("which", ["report", "event"])
def test_fifos_and_deep_payloads_are_refused_at_once(which: str, env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    fifo = env / "fifo"
    os.mkfifo(fifo)
    if which == "report":
        code, _, err = run_cli("comment", fifo)
        assert code == 2 and "not a regular file" in err, err
        return
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(fifo))
    code, _, err = _comment(env)
    assert code == 2 and "not a regular file" in err, err
    deep = env / "deep.json"
    deep.write_bytes(DEEP)
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(deep))
    code, _, err = _comment(env)
    assert code == 2 and "nested too deeply" in err and "Traceback" not in err, err
