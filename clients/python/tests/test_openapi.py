"""Every request the client sends names a path and method of the server's
OpenAPI document, so drift between the two fails here."""

from __future__ import annotations

import json
import re
import unittest
import urllib.request
from collections.abc import Iterator
from typing import Any

from echomq import Client
from echomq._http import Response

from .support import server_url

QUEUE = "QUEUE"
JOB = "JOB"


class Recording:
    """Stands in for the client's transport: records each request's method
    and path, answers an empty body the client's parsing accepts."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def stream(self, path: str, headers: Any, idle: float) -> Iterator[str]:
        self.calls.append(("GET", path))
        yield from ("id: 1-0/0", "event: enqueued", 'data: {"job": "JOB"}', "")

    def request(self, method: str, path: str, body: Any = None, query: Any = None, wait: float = 0.0) -> Response:
        self.calls.append((method, path))
        empty = {
            "id": JOB,
            "outcome": "completed",
            "jobs": [],
            "queues": [],
            "lines": [],
            "name": QUEUE,
            "cancel_requested": False,
        }
        return Response(200, empty)

    def close(self) -> None:
        pass


def every_call(client: Client) -> None:
    """Calls each of the client's endpoints once."""
    client.enqueue(QUEUE, 1)
    client.enqueue_and_wait(QUEUE, 1, timeout=1)
    client.enqueue_many(QUEUE, [{"payload": 1}])
    client.outcome(QUEUE, JOB, timeout=1)
    client.queues()
    client.queue(QUEUE)
    client.jobs(QUEUE)
    client.job(QUEUE, JOB)
    client.log(QUEUE, JOB)
    next(client.events(QUEUE), None)
    client.cancel(QUEUE, JOB)
    client.remove(QUEUE, JOB)
    client.pause(QUEUE)
    client.resume(QUEUE)
    client.drain(QUEUE)
    client.claim(QUEUE)
    client.complete(QUEUE, JOB, 1)
    client.fail(QUEUE, JOB, 1, "error")
    client.extend(QUEUE, JOB, 1, 1000)
    client.delay(QUEUE, JOB, 1, 1000)
    client.progress(QUEUE, JOB, 1, 1)
    client.append_log(QUEUE, JOB, 1, "line")


def documented(document: dict[str, Any]) -> list[tuple[str, re.Pattern[str]]]:
    """Each (method, path pattern) of the document; a `{parameter}` matches one segment."""
    routes = []
    for path, item in document["paths"].items():
        pattern = re.compile("^" + re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(path)) + "$")
        for method in item:
            if method in ("get", "put", "post", "delete", "patch", "head", "options"):
                routes.append((method.upper(), pattern))
    return routes


class OpenApi(unittest.TestCase):
    def test_every_call_of_the_client_is_in_the_openapi_document(self) -> None:
        self.maxDiff = None
        with urllib.request.urlopen(server_url().rstrip("/") + "/api/v1/openapi.json", timeout=10) as answer:
            document = json.load(answer)
        self.assertTrue(str(document.get("openapi", "")).startswith("3.1"), document.get("openapi"))
        routes = documented(document)
        servers: list[dict[str, str]] = document.get("servers") or [{}]
        prefix = servers[0].get("url", "").rstrip("/")

        client = Client("http://client.test")
        recording = Recording()
        client._http = recording  # type: ignore[assignment]
        every_call(client)
        # One request per endpoint method: a method added to the client
        # and not to every_call fails here.
        helpers = {"close", "control", "iter_jobs"}
        endpoints = [name for name in vars(Client) if not name.startswith("_") and name not in helpers]
        self.assertEqual(len(recording.calls), len(endpoints), endpoints)

        missing = []
        for method, path in recording.calls:
            candidates = {"/api/v1" + path, path}
            if prefix and not prefix.startswith("http"):
                candidates.add(prefix + path)
            if not any(m == method and p.match(c) for m, p in routes for c in candidates):
                missing.append(f"{method} /api/v1{path}")
        self.assertEqual(missing, [], "calls of the Python client the OpenAPI document lacks")


if __name__ == "__main__":
    unittest.main()
