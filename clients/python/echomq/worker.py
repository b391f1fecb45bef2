"""A worker loop over the HTTP API: claim with a long-poll, run a function,
complete or fail, extend the lease while it runs, stop on SIGTERM."""

from __future__ import annotations

import logging
import signal
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .client import Client
from .errors import Cancelled, Delay, EchoMQError, Permanent, RateLimited
from .models import Claimed

log = logging.getLogger("echomq.worker")


class Job:
    """A job in hand, as a handler sees it."""

    def __init__(self, client: Client, queue: str, claimed: Claimed) -> None:
        self.queue = queue
        self.claimed = claimed
        self._client = client
        self._cancel = threading.Event()
        # Held by an extension; the job's end takes it to mark it ended, so
        # no extension is sent past its completion or failure.
        self._lease = threading.Lock()
        self._ended = False

    @property
    def id(self) -> str:
        """The job's id."""
        return self.claimed.id

    @property
    def payload(self) -> Any:
        """The job's payload."""
        return self.claimed.payload

    @property
    def attempt(self) -> int:
        """This run's attempt, from 1."""
        return self.claimed.attempt

    @property
    def max_attempts(self) -> int:
        """How many attempts the job has."""
        return self.claimed.max_attempts

    @property
    def cancelled(self) -> threading.Event:
        """Set when someone asked the job to stop (the lease's extension
        said so), its lease was lost or its time limit passed; a handler
        that stops because it was asked raises :class:`Cancelled`."""
        return self._cancel

    def progress(self, value: Any) -> None:
        """Records the job's progress (any JSON value)."""
        self._client.progress(self.queue, self.id, self.claimed.token, value)

    def log(self, line: str) -> None:
        """Appends a line to the job's log."""
        self._client.append_log(self.queue, self.id, self.claimed.token, line)


Handler = Callable[[Job], Any]
"""A job's function: its return value (any JSON value) is the result."""


class Worker:
    """Works ``queue``'s jobs with ``handler``, ``concurrency`` at a time.

    A handler's return value completes the job; an exception fails it:
    :class:`Permanent` dead, :class:`Cancelled` cancelled,
    :class:`RateLimited` back to pending with the queue held,
    :class:`Delay` back to wait without using an attempt, any other
    retried (while attempts remain) with the exception's message. Each
    job's lease (``lease_ms``) is extended at a third of it while the
    handler runs. :meth:`run` stops on SIGTERM or SIGINT (or
    :meth:`stop`): it claims no more, and returns once the jobs in hand
    are finished. A claim waits up to ``wait_ms`` for a job (a long-poll),
    so the loop notices a stop within that time.
    """

    def __init__(
        self,
        client: Client,
        queue: str,
        handler: Handler,
        concurrency: int = 1,
        lease_ms: int = 30_000,
        wait_ms: int = 5_000,
        name: str | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency is at least 1")
        if lease_ms < 3:
            raise ValueError("lease_ms is at least 3")
        self.client = client
        self.queue = queue
        self.handler = handler
        self.concurrency = concurrency
        self.lease_ms = lease_ms
        self.wait_ms = wait_ms
        self.name = name or f"{socket.gethostname()}:python"
        self._stop = threading.Event()
        self._slots = threading.Semaphore(concurrency)
        self._held: dict[str, tuple[Job, float]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()

    def stop(self) -> None:
        """Claims no more; :meth:`run` returns once the jobs in hand end."""
        self._stop.set()
        self._wake.set()

    @property
    def stopping(self) -> bool:
        """Whether the worker was asked to stop."""
        return self._stop.is_set()

    def run(self) -> None:
        """Works jobs until stopped; installs SIGTERM and SIGINT handlers
        when called from the main thread (the previous ones are restored)."""
        restore = self._install_signals()
        heartbeat = threading.Thread(target=self._heartbeat, name="echomq-extend", daemon=True)
        heartbeat.start()
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="echomq-job")
        try:
            self._claim_loop(pool)
        finally:
            pool.shutdown(wait=True)
            self.stop()
            heartbeat.join()
            self.client._http.prune()  # the pool's threads have ended
            restore()

    def _claim_loop(self, pool: ThreadPoolExecutor) -> None:
        while not self._stop.is_set():
            self._slots.acquire()
            if self._stop.is_set():
                self._slots.release()
                return
            free = 1
            while self._slots.acquire(blocking=False):
                free += 1
            try:
                jobs = self.client.claim(
                    self.queue, count=free, lease_ms=self.lease_ms, wait_ms=self.wait_ms, worker=self.name
                )
            except EchoMQError as err:
                log.warning("claim on %s failed: %s", self.queue, err)
                jobs = []
                self._stop.wait(1.0)
            for _ in range(free - len(jobs)):
                self._slots.release()
            for claimed in jobs:
                job = Job(self.client, self.queue, claimed)
                with self._lock:
                    self._held[job.id] = (job, time.monotonic())
                self._wake.set()  # its lease may be due before the next wake-up
                pool.submit(self._work, job)

    def _work(self, job: Job) -> None:
        try:
            self._finish(job)
        finally:
            with self._lock:
                self._held.pop(job.id, None)
            self._slots.release()

    def _finish(self, job: Job) -> None:
        token = job.claimed.token
        try:
            result = self.handler(job)
        except Exception as err:  # a handler's failure, whatever it is
            self._end(job)
            self._fail(job, err)
            return
        self._end(job)
        try:
            self.client.complete(self.queue, job.id, token, result)
        except EchoMQError as err:
            log.warning("completing job %s failed: %s", job.id, err)
        except (TypeError, ValueError) as err:  # the result is not JSON
            self._fail(job, err)

    @staticmethod
    def _end(job: Job) -> None:
        with job._lease:
            job._ended = True

    def _fail(self, job: Job, err: Exception) -> None:
        message = str(err) or type(err).__name__
        try:
            if isinstance(err, Permanent):
                self.client.fail(self.queue, job.id, job.claimed.token, message, "dead")
            elif isinstance(err, Delay):
                self.client.delay(self.queue, job.id, job.claimed.token, err.delay_ms)
            elif isinstance(err, Cancelled):
                self.client.fail(self.queue, job.id, job.claimed.token, message, "cancelled")
            elif isinstance(err, RateLimited):
                self.client.fail(
                    self.queue, job.id, job.claimed.token, message, "rate_limited", err.retry_after_ms
                )
            else:
                self.client.fail(self.queue, job.id, job.claimed.token, message, "retry")
        except EchoMQError as failed:
            log.warning("failing job %s failed: %s", job.id, failed)

    def _heartbeat(self) -> None:
        """Extends every held job's lease once a third of it has passed
        since its claim or its last extension (the lease the claim
        granted: shorter than ``lease_ms`` under a time limit); ends once
        stopped with no job in hand."""
        while True:
            with self._lock:
                if not self._held and self._stop.is_set():
                    return
                now = time.monotonic()
                idle = now + self.lease_ms / 3000
                due = min((since + _third(job) for job, since in self._held.values()), default=idle)
            self._wake.wait(max(0.0, due - now))
            self._wake.clear()
            now = time.monotonic()
            with self._lock:
                expiring = [job for job, since in self._held.values() if now - since >= _third(job)]
            for job in expiring:
                self._extend(job, now)

    def _extend(self, job: Job, now: float) -> None:
        with job._lease:
            if job._ended:
                return
            try:
                if self.client.extend(self.queue, job.id, job.claimed.token, self.lease_ms):
                    job.cancelled.set()
            except EchoMQError as err:
                # The lease was lost, or the job's time limit has passed.
                if err.code in ("NOTACTIVE", "TIMELIMIT") or err.status == 404:
                    job.cancelled.set()
                log.warning("extending job %s failed: %s", job.id, err)
        with self._lock:
            if job.id in self._held:
                self._held[job.id] = (job, now)

    def _install_signals(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
        for sig in previous:
            signal.signal(sig, lambda _sig, _frame: self.stop())

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        return restore


def _third(job: Job) -> float:
    """A third of the lease the job's claim granted, in seconds."""
    return max(job.claimed.lease_ms, 3) / 3000
