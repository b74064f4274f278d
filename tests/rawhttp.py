"""A raw HTTP server on 127.0.0.1 that answers whatever bytes it is told to, slowly if
asked: the hostile GitHub API of the comment client's tests and of ``benchmarks/fuzz.py``
(which puts this directory on its path)."""

from __future__ import annotations

import threading
from typing import Any


class RawServer:
    """Answers every connection with ``reply(request_head)``: bytes, or a list of chunks
    sent ``drip`` seconds apart. Records each request's head (to see where the token went)."""

    def __init__(self, reply: Any, drip: float = 0.0) -> None:
        import socket

        self.reply, self.drip = reply, drip
        self.heads: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                head = b""
                try:
                    while b"\r\n\r\n" not in head:
                        got = conn.recv(65536)
                        if not got:
                            break
                        head += got
                    self.heads.append(head)
                    chunks = self.reply(head)
                    for chunk in chunks if isinstance(chunks, list) else [chunks]:
                        if self.stop.is_set():
                            break
                        conn.sendall(chunk)
                        # Not time.sleep: the env fixture makes it return at once.
                        self.stop.wait(self.drip)
                except OSError:
                    continue

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(timeout=10)


def json_reply(status: str, body: bytes, extra: bytes = b"") -> bytes:
    """A whole HTTP answer with a JSON body; ``extra``: header lines of its own."""
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n".encode()
        + extra
        + b"Connection: close\r\n\r\n"
        + body
    )
