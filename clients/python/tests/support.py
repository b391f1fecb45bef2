"""What the tests share: the server under test and bounded waits."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from typing import TypeVar

from echomq import Client

T = TypeVar("T")


def server_url() -> str:
    """The address of the `emq serve` under test (clients/run-tests.sh sets it)."""
    url = os.environ.get("EMQ_HTTP_URL")
    if not url:
        raise RuntimeError("EMQ_HTTP_URL is not set: run the tests with clients/run-tests.sh")
    return url


def guarded(role: str = "operator") -> tuple[str, str]:
    """The address of a server that requires tokens, and a token of it:
    an operator's of every queue, or a producer's of the ``py-scoped-*``
    queues."""
    name = {"operator": "EMQ_HTTP_TOKEN", "producer": "EMQ_HTTP_PRODUCER_TOKEN"}[role]
    url, token = os.environ.get("EMQ_HTTP_TOKEN_URL"), os.environ.get(name)
    if not url or not token:
        raise RuntimeError(f"EMQ_HTTP_TOKEN_URL and {name} are not set: run clients/run-tests.sh")
    return url, token


def client() -> Client:
    """A client of the server under test."""
    return Client(server_url())


def queue_name(test: str) -> str:
    """A queue no other test uses."""
    return f"py-{test}-{uuid.uuid4().hex[:8]}"


def wait_until(what: str, check: Callable[[], T | None], timeout: float = 20.0) -> T:
    """Polls ``check`` until it answers something truthy; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def job_state(client: Client, queue: str, id: str) -> str:
    """The job's state, as its record names it."""
    return str(client.job(queue, id)["state"])
