"""The worker loop against a real `emq serve` on a real Valkey."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import unittest
from pathlib import Path
from typing import Any

from echomq import Cancelled, Client, Delay, Job, NewJob, Permanent, Worker

from .support import client, job_state, queue_name, server_url, wait_until


class CountingClient(Client):
    """A real client that counts its lease extensions."""

    def __init__(self, base_url: str) -> None:
        super().__init__(base_url)
        self.extensions = 0

    def extend(self, queue: str, id: str, token: int, lease_ms: int) -> bool:
        self.extensions += 1
        return super().extend(queue, id, token, lease_ms)


class Running:
    """A worker on its own thread, stopped and joined on exit."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.thread = threading.Thread(target=worker.run)

    def __enter__(self) -> Worker:
        self.thread.start()
        return self.worker

    def __exit__(self, *_: Any) -> None:
        self.worker.stop()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the worker did not stop"


class WorkerLoop(unittest.TestCase):
    def setUp(self) -> None:
        self.client = client()
        self.addCleanup(self.client.close)
        self.queue = queue_name(self._testMethodName[5:20])

    def test_a_worker_completes_retries_and_dead_letters(self) -> None:
        def handler(job: Job) -> Any:
            kind = job.payload["kind"]
            if kind == "flaky" and job.attempt == 1:
                raise ValueError("first try fails")
            if kind == "hopeless":
                raise Permanent("cannot ever work")
            return {"n": job.payload["n"] * 2, "attempt": job.attempt}

        jobs: list[NewJob] = [
            {"payload": {"kind": "fine", "n": 1}, "id": "fine", "attempts": 3},
            {"payload": {"kind": "flaky", "n": 2}, "id": "flaky", "attempts": 3},
            {"payload": {"kind": "hopeless", "n": 3}, "id": "hopeless", "attempts": 3},
        ]
        self.client.enqueue_many(self.queue, jobs)
        with Running(Worker(self.client, self.queue, handler, concurrency=3, lease_ms=10_000, wait_ms=500)):
            fine = self.client.outcome(self.queue, "fine", timeout=20)
            flaky = self.client.outcome(self.queue, "flaky", timeout=20)
            hopeless = self.client.outcome(self.queue, "hopeless", timeout=20)
        self.assertEqual((fine.outcome, fine.result), ("completed", {"n": 2, "attempt": 1}))
        self.assertEqual((flaky.outcome, flaky.result), ("completed", {"n": 4, "attempt": 2}))
        self.assertEqual(self.client.job(self.queue, "flaky")["error"], "first try fails")
        self.assertEqual((hopeless.outcome, hopeless.error), ("dead", "cannot ever work"))
        self.assertEqual(self.client.job(self.queue, "hopeless")["failures"], 1)

    def test_the_lease_is_extended_while_the_handler_runs(self) -> None:
        counting = CountingClient(server_url())
        self.addCleanup(counting.close)

        def handler(job: Job) -> str:
            # Four extensions at a third of the lease each: the handler
            # outlives its first lease.
            wait_until("four extensions", lambda: counting.extensions >= 4, timeout=20)
            return "done"

        id = self.client.enqueue(self.queue, 1).id
        with Running(Worker(counting, self.queue, handler, lease_ms=600, wait_ms=500)):
            outcome = self.client.outcome(self.queue, id, timeout=30)
        self.assertEqual((outcome.outcome, outcome.result), ("completed", "done"))
        record = self.client.job(self.queue, id)
        self.assertEqual((record["claims"], record["stalls"]), (1, 0))

    def test_a_cancel_reaches_the_running_handler(self) -> None:
        started = threading.Event()

        def handler(job: Job) -> None:
            started.set()
            if not job.cancelled.wait(timeout=20):
                raise AssertionError("the cancel never reached the handler")
            raise Cancelled("asked to stop")

        id = self.client.enqueue(self.queue, 1).id
        with Running(Worker(self.client, self.queue, handler, lease_ms=600, wait_ms=500)):
            self.assertTrue(started.wait(timeout=20))
            self.client.cancel(self.queue, id)
            outcome = self.client.outcome(self.queue, id, timeout=20)
        self.assertEqual(outcome.outcome, "cancelled")

    def test_the_time_limit_reaches_the_running_handler(self) -> None:
        def handler(job: Job) -> None:
            # The claim grants 900 ms, not 30 s: extended at 300 ms, until
            # the limit passes and the extension answers TIMELIMIT (at a
            # third of 30 s it would not be asked before 10 s).
            if not job.cancelled.wait(timeout=5):
                raise AssertionError("the time limit never reached the handler")
            raise TimeoutError("over its time limit")

        id = self.client.enqueue(self.queue, 1, attempts=1, time_limit_ms=900).id
        with Running(Worker(self.client, self.queue, handler, lease_ms=30_000, wait_ms=500)):
            outcome = self.client.outcome(self.queue, id, timeout=30)
        self.assertEqual((outcome.outcome, outcome.error), ("dead", "over its time limit"))

    def test_progress_and_log_from_a_handler(self) -> None:
        def handler(job: Job) -> None:
            job.progress(1)
            job.log("from the handler")

        id = self.client.enqueue(self.queue, 1).id
        with Running(Worker(self.client, self.queue, handler, wait_ms=500)):
            self.assertEqual(self.client.outcome(self.queue, id, timeout=20).outcome, "completed")
        self.assertEqual(self.client.log(self.queue, id), ["from the handler"])

    def test_delay_sends_the_job_back_without_using_an_attempt(self) -> None:
        def handler(job: Job) -> None:
            raise Delay(60_000)

        id = self.client.enqueue(self.queue, 1, attempts=1).id
        with Running(Worker(self.client, self.queue, handler, wait_ms=500)):
            wait_until("the job to wait", lambda: job_state(self.client, self.queue, id) == "scheduled")
        record = self.client.job(self.queue, id)
        self.assertEqual((record["claims"], record["failures"]), (1, 0))

    def test_a_result_that_is_not_json_fails_the_job(self) -> None:
        id = self.client.enqueue(self.queue, 1, attempts=1).id
        with Running(Worker(self.client, self.queue, lambda job: object(), wait_ms=500)):
            outcome = self.client.outcome(self.queue, id, timeout=20)
        self.assertEqual(outcome.outcome, "dead")
        self.assertIn("not JSON serializable", outcome.error or "")

    def test_sigterm_finishes_the_job_in_hand_and_claims_no_more(self) -> None:
        slow = self.client.enqueue(self.queue, {"ms": 1500}).id
        program = Path(__file__).with_name("worker_program.py")
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
        process = subprocess.Popen(
            [sys.executable, str(program), server_url(), self.queue], env=env, stdout=subprocess.PIPE, text=True
        )
        try:
            wait_until("the job to run", lambda: job_state(self.client, self.queue, slow) == "active")
            process.send_signal(signal.SIGTERM)
            later = self.client.enqueue(self.queue, {"ms": 0}).id
            stdout, _ = process.communicate(timeout=30)
        finally:
            process.kill()
        self.assertEqual(process.returncode, 0)
        self.assertEqual(stdout.strip(), "stopped")
        self.assertEqual(self.client.outcome(self.queue, slow, timeout=5).outcome, "completed")
        self.assertEqual(job_state(self.client, self.queue, later), "pending")


if __name__ == "__main__":
    unittest.main()
