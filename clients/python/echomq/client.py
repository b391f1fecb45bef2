"""The client of EchoMQ's HTTP API (docs/http.md)."""

from __future__ import annotations

import json
import time
from collections.abc import Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ._http import Transport, segment
from .errors import Timeout
from .models import Claimed, Enqueued, Event, FailAction, JobPage, NewJob, Outcome, QueueInfo

if TYPE_CHECKING:
    from typing import Unpack

    from .models import JobOptions

MAX_BATCH = 1000
"""The most jobs one request enqueues; :meth:`Client.enqueue_many` splits."""

MAX_WAIT = 300.0
"""The longest outcome wait the server takes, in seconds (``5m``)."""


def duration(seconds: float) -> str:
    """A query string's duration: whole milliseconds (``1500ms``)."""
    if seconds < 0:
        raise ValueError(f"a duration is not negative: {seconds}")
    return f"{round(seconds * 1000)}ms"


class Client:
    """EchoMQ's HTTP API at ``base_url`` (the server's address, as
    ``emq serve`` prints it; ``/api/v1`` is added unless it ends with it).

    ``token`` is sent as ``Authorization: Bearer <token>``; ``timeout`` is
    the socket timeout in seconds on top of any wait the server holds.
    Safe to share between threads (each thread keeps its own connection).
    """

    def __init__(self, base_url: str, token: str | None = None, timeout: float = 30.0) -> None:
        self._http = Transport(base_url, token, timeout)

    def close(self) -> None:
        """Closes the client's connections (each thread's); a later call
        opens a new one."""
        self._http.close()

    # Producers

    def enqueue(self, queue: str, payload: Any, **options: Unpack[JobOptions]) -> Enqueued:
        """Enqueues one job; ``options`` are the job's fields (``priority``,
        ``delay_ms``, ``dedup``, ...: :class:`JobOptions`)."""
        job = {"payload": payload, **options}
        return Enqueued.parse(self._http.request("POST", _jobs(queue), job).body)

    def enqueue_and_wait(
        self, queue: str, payload: Any, timeout: float = 30.0, **options: Unpack[JobOptions]
    ) -> Outcome:
        """Enqueues one job and waits up to ``timeout`` seconds for its
        outcome; raises :class:`Timeout` when it has none by then."""
        job = {"payload": payload, **options}
        answer = self._http.request(
            "POST", _jobs(queue), job, {"wait": duration(_wait(timeout))}, wait=timeout
        )
        if answer.status == 202:
            raise Timeout(str(answer.body["id"]))
        return Outcome.parse(answer.body)

    def enqueue_many(self, queue: str, jobs: Iterable[NewJob]) -> list[Enqueued]:
        """Enqueues jobs (each ``{"payload": ..., **options}``), at most
        1,000 a request; the answers are in the jobs' order."""
        answers: list[Enqueued] = []
        batch: list[NewJob] = []
        for job in jobs:
            batch.append(job)
            if len(batch) == MAX_BATCH:
                answers += self._enqueue_batch(queue, batch)
                batch = []
        if batch:
            answers += self._enqueue_batch(queue, batch)
        return answers

    def _enqueue_batch(self, queue: str, jobs: list[NewJob]) -> list[Enqueued]:
        body = self._http.request("POST", _jobs(queue), jobs).body
        return [Enqueued.parse(job) for job in body["jobs"]]

    def outcome(self, queue: str, id: str, timeout: float = 30.0) -> Outcome:
        """Waits up to ``timeout`` seconds (at most 300) for the job's
        outcome; raises :class:`Timeout` when it has none by then."""
        answer = self._http.request(
            "GET", _job(queue, id) + "/outcome", query={"timeout": duration(_wait(timeout))}, wait=timeout
        )
        if answer.status == 202:
            raise Timeout(str(answer.body["id"]))
        return Outcome.parse(answer.body)

    # Reading

    def queues(self) -> list[QueueInfo]:
        """Every queue, with its counts and settings."""
        body = self._http.request("GET", "/queues").body
        return [QueueInfo.parse(queue) for queue in body["queues"]]

    def queue(self, queue: str) -> QueueInfo:
        """One queue, with its counts and settings."""
        return QueueInfo.parse(self._http.request("GET", _queue(queue)).body)

    def jobs(
        self, queue: str, state: str = "pending", limit: int = 50, cursor: str | None = None
    ) -> JobPage:
        """One page of the queue's jobs in ``state`` (``limit`` at most 1,000);
        pass the page's ``next`` as ``cursor`` for the following one."""
        query = {"state": state, "limit": str(limit)}
        if cursor is not None:
            query["cursor"] = cursor
        body = self._http.request("GET", _jobs(queue), query=query).body
        next_cursor = body.get("next")
        return JobPage(jobs=list(body["jobs"]), next=None if next_cursor is None else str(next_cursor))

    def iter_jobs(self, queue: str, state: str = "pending", limit: int = 200) -> Iterator[dict[str, Any]]:
        """Every job of the queue in ``state``, page after page."""
        cursor: str | None = None
        while True:
            page = self.jobs(queue, state, limit, cursor)
            yield from page.jobs
            if page.next is None:
                return
            cursor = page.next

    def job(self, queue: str, id: str) -> dict[str, Any]:
        """One job: every field of the library's ``JobRecord``."""
        body: dict[str, Any] = self._http.request("GET", _job(queue, id)).body
        return body

    def log(self, queue: str, id: str) -> list[str]:
        """The job's log lines."""
        return [str(line) for line in self._http.request("GET", _job(queue, id) + "/log").body["lines"]]

    def events(
        self, queue: str, last_event_id: str | None = None, idle: float = 60.0
    ) -> Generator[Event, None, None]:
        """The queue's events as they happen (from now, or just after
        ``last_event_id``), for as long as the caller reads: a stream the
        server ends is resumed after the last event read. ``idle`` is how
        long a read waits (the server sends a keep-alive every 15 s)."""
        last = last_event_id
        while True:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = last
            read = False
            for event in _sse(self._http.stream(_queue(queue) + "/events", headers, idle)):
                last, read = event.id, True
                yield event
            if not read:
                time.sleep(1.0)  # ended at once: not in a tight loop

    # Operating

    def control(self, queue: str, verb: str, id: str | None = None, **fields: Any) -> Any:
        """Sends a control of the registry: a queue's (``pause``, ``drain``,
        ...) or, with ``id``, a job's (``cancel``, ``remove``, ...). The
        control's verb is lower case, ``.`` written ``-`` (``group-pause``);
        ``fields`` are its arguments and options; ``None`` and ``False``
        ones are left out. Answers the server's JSON."""
        body = {name: value for name, value in fields.items() if value is not None and value is not False}
        path = (_queue(queue) if id is None else _job(queue, id)) + "/controls/" + segment(verb)
        return self._http.request("POST", path, body).body

    def cancel(self, queue: str, id: str) -> Any:
        """Cancels a waiting job, or asks a running one to stop."""
        return self.control(queue, "cancel", id)

    def remove(self, queue: str, id: str, force: bool = False) -> Any:
        """Deletes a job (a running one only with ``force``)."""
        return self.control(queue, "remove", id, force=force)

    def pause(self, queue: str) -> Any:
        """Stops claims on the queue; running jobs run on."""
        return self.control(queue, "pause")

    def resume(self, queue: str) -> Any:
        """Resumes claims on the queue."""
        return self.control(queue, "resume")

    def drain(self, queue: str, scheduled: bool = False, blocked: bool = False) -> Any:
        """Deletes the queue's pending jobs (with ``scheduled`` and
        ``blocked`` those too)."""
        return self.control(queue, "drain", scheduled=scheduled, blocked=blocked)

    # Workers

    def claim(
        self,
        queue: str,
        count: int = 1,
        lease_ms: int = 30_000,
        wait_ms: int | None = None,
        worker: str | None = None,
    ) -> list[Claimed]:
        """Claims up to ``count`` jobs for ``lease_ms``; with ``wait_ms``
        (at most 60,000) waits that long for one when none is pending."""
        body: dict[str, Any] = {"count": count, "lease_ms": lease_ms}
        if wait_ms is not None:
            body["wait_ms"] = wait_ms
        if worker is not None:
            body["worker"] = worker
        wait = (wait_ms or 0) / 1000
        answer = self._http.request("POST", _queue(queue) + "/claim", body, wait=wait)
        return [Claimed.parse(job) for job in answer.body["jobs"]]

    def complete(self, queue: str, id: str, token: int, result: Any = None) -> None:
        """Completes a job in hand with ``result``."""
        self._http.request("POST", _job(queue, id) + "/complete", {"token": token, "result": result})

    def fail(
        self,
        queue: str,
        id: str,
        token: int,
        error: str,
        action: FailAction = "retry",
        delay_ms: int | None = None,
    ) -> str:
        """Fails a job in hand: ``retry`` (while attempts remain, after
        ``delay_ms`` or the queue's backoff), ``dead``, ``cancelled`` or
        ``rate_limited`` (the queue held for ``delay_ms``). Answers what
        happened: ``retry``, ``dead``, ``cancelled`` or ``rate_limited``."""
        body: dict[str, Any] = {"token": token, "error": error, "action": action}
        if delay_ms is not None:
            body["delay_ms"] = delay_ms
        return str(self._http.request("POST", _job(queue, id) + "/fail", body).body["outcome"])

    def extend(self, queue: str, id: str, token: int, lease_ms: int) -> bool:
        """Extends a job's lease to ``lease_ms`` from now; answers whether
        someone asked the job to stop."""
        body = {"token": token, "lease_ms": lease_ms}
        return bool(self._http.request("POST", _job(queue, id) + "/extend", body).body["cancel_requested"])

    def delay(self, queue: str, id: str, token: int, delay_ms: int) -> None:
        """Sends a job in hand back to wait ``delay_ms``, no attempt used."""
        self._http.request("POST", _job(queue, id) + "/delay", {"token": token, "delay_ms": delay_ms})

    def progress(self, queue: str, id: str, token: int, progress: Any) -> None:
        """Records a job's progress (any JSON value)."""
        self._http.request("POST", _job(queue, id) + "/progress", {"token": token, "progress": progress})

    def append_log(self, queue: str, id: str, token: int, line: str) -> None:
        """Appends a line to a job's log."""
        self._http.request("POST", _job(queue, id) + "/log", {"token": token, "line": line})


def _wait(timeout: float) -> float:
    if not 0 <= timeout <= MAX_WAIT:
        raise ValueError(f"a wait is 0 to {MAX_WAIT:g} seconds, not {timeout}")
    return timeout


def _queue(queue: str) -> str:
    return "/queues/" + segment(queue)


def _jobs(queue: str) -> str:
    return _queue(queue) + "/jobs"


def _job(queue: str, id: str) -> str:
    return _jobs(queue) + "/" + segment(id)


def _sse(lines: Iterator[str]) -> Iterator[Event]:
    """Server-sent events from their lines: ``id:``, ``event:`` and
    ``data:`` (JSON) fields, each event ended by a blank line."""
    id, name = "", "message"
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield Event(id=id, name=name, data=json.loads("\n".join(data)))
            name, data = "message", []
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "id":
            id = value
        elif field == "event":
            name = value
        elif field == "data":
            data.append(value)
