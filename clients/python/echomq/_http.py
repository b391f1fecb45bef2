"""JSON over HTTP with the standard library: one kept-alive connection per
thread, so a worker's threads never share one."""

from __future__ import annotations

import http.client
import json
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from .errors import EchoMQError

API_PREFIX = "/api/v1"

# Errors of a kept-alive connection the server closed while it sat idle:
# the request never reached it, so it is sent again on a new connection.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, http.client.ImproperConnectionState)


_Open = tuple["weakref.ref[threading.Thread]", http.client.HTTPConnection]
"""An open connection and the thread it belongs to."""


@dataclass(frozen=True)
class Response:
    """A 2xx answer: its status and its JSON body (``None`` when empty)."""

    status: int
    body: Any


def segment(value: str) -> str:
    """One path segment, percent-encoded (a job id may hold ``/``)."""
    return quote(value, safe="")


class Transport:
    """Sends JSON requests under ``<base_url>/api/v1``."""

    def __init__(self, base_url: str, token: str | None, timeout: float) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL, not {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        path = parts.path.rstrip("/")
        self._prefix = path if path.endswith(API_PREFIX) else path + API_PREFIX
        self._headers = {"Accept": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = timeout
        self._local = threading.local()
        # Every open connection, with its thread: a thread's connection is
        # closed once the thread has ended, not left to the collector.
        self._open: list[_Open] = []
        self._open_lock = threading.Lock()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, str] | None = None,
        wait: float = 0.0,
    ) -> Response:
        """Sends one request; answers a 2xx, raises :class:`EchoMQError`
        otherwise. ``wait`` is how long the server may hold the answer (a
        long-poll), added to the socket's timeout."""
        target = self._prefix + path
        if query:
            target += "?" + urlencode(query)
        headers = dict(self._headers)
        data: bytes | None = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        timeout = self._timeout + wait
        for attempt in range(2):
            conn, reused = self._connection()
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                try:
                    conn.request(method, target, body=data, headers=headers)
                except (BrokenPipeError, ConnectionResetError):
                    # The server may have answered before reading the
                    # whole body (413) and closed: its answer is read below.
                    pass
                answer = conn.getresponse()
                raw = answer.read()
            except _STALE as err:
                self._drop()
                if reused and attempt == 0:
                    continue
                raise _unreachable(err) from err
            except (OSError, http.client.HTTPException) as err:
                self._drop()
                raise _unreachable(err) from err
            if answer.will_close:
                self._drop()
            if not 200 <= answer.status < 300:
                raise EchoMQError.from_response(answer.status, raw)
            return Response(answer.status, json.loads(raw) if raw else None)
        raise AssertionError("unreachable")

    def stream(self, path: str, headers: dict[str, str], idle: float) -> Iterator[str]:
        """GETs ``path`` on a connection of its own and yields the answer's
        lines, without their line ends, until the server ends it; ``idle``
        is how long a read may wait. The connection closes with the
        iterator."""
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=idle)
        try:
            try:
                conn.request("GET", self._prefix + path, headers={**self._headers, **headers})
                answer = conn.getresponse()
            except (OSError, http.client.HTTPException) as err:
                raise _unreachable(err) from err
            if not 200 <= answer.status < 300:
                raise EchoMQError.from_response(answer.status, answer.read())
            while True:
                try:
                    line = answer.readline()
                except (OSError, http.client.HTTPException):
                    return  # the stream broke: the caller resumes
                if not line:
                    return
                yield line.decode("utf-8", "replace").rstrip("\r\n")
        finally:
            conn.close()

    def close(self) -> None:
        """Closes every connection, of every thread."""
        with self._open_lock:
            closing, self._open = self._open, []
        for _, conn in closing:
            conn.close()
        self._local = threading.local()

    def prune(self) -> None:
        """Closes the connections of threads that have ended."""
        keep: list[_Open] = []
        ended: list[_Open] = []
        with self._open_lock:
            for entry in self._open:
                thread = entry[0]()
                (keep if thread is not None and thread.is_alive() else ended).append(entry)
            self._open = keep
        for _, conn in ended:
            conn.close()

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn, True
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self._timeout)
        self._local.conn = conn
        self.prune()
        with self._open_lock:
            self._open.append((weakref.ref(threading.current_thread()), conn))
        return conn, False

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            with self._open_lock:
                self._open = [(t, c) for t, c in self._open if c is not conn]


def _unreachable(err: Exception) -> EchoMQError:
    return EchoMQError("UNREACHABLE", f"the server could not be reached: {err}", 0)
