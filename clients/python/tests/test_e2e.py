"""The issue's end-to-end test: a Python producer and a TypeScript worker
(clients/typescript/test/e2e-worker.ts, a separate node process) work
1,000 jobs together through one `emq serve`, some failing once and
retried, one cancelled while scheduled and one while it runs."""

from __future__ import annotations

import json
import subprocess
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from echomq import NewJob, Outcome

from .support import client, job_state, queue_name, server_url, wait_until

JOBS = 1000
WORKER = Path(__file__).resolve().parents[2] / "typescript" / "dist" / "test" / "e2e-worker.js"


def fails_once(n: int) -> bool:
    return n % 7 == 0


class PythonProducerTypeScriptWorker(unittest.TestCase):
    def test_a_thousand_jobs_with_retries_and_cancels(self) -> None:
        self.assertTrue(WORKER.exists(), f"{WORKER} is missing: build the TypeScript client (npm run build)")
        producer = client()
        self.addCleanup(producer.close)
        queue = queue_name("e2e")
        jobs: list[NewJob] = [{"id": f"j{n}", "payload": {"n": n, "fail_once": fails_once(n)}, "attempts": 3} for n in range(JOBS)]
        jobs.append({"id": "scheduled", "payload": {"n": -1}, "delay_ms": 600_000})
        jobs.append({"id": "running", "payload": {"n": -2, "until_cancelled": True}, "attempts": 3})
        answers = producer.enqueue_many(queue, jobs)
        self.assertEqual([a.outcome for a in answers], ["created"] * len(jobs))
        producer.cancel(queue, "scheduled")

        worker = subprocess.Popen(
            ["node", str(WORKER), server_url(), queue], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            wait_until("the job to run", lambda: job_state(producer, queue, "running") == "active", timeout=60)
            producer.cancel(queue, "running")

            def outcome(id: str) -> Outcome:
                return producer.outcome(queue, id, timeout=120)

            with ThreadPoolExecutor(16) as pool:
                outcomes = {o.id: o for o in pool.map(outcome, [job["id"] for job in jobs])}
        finally:
            worker.terminate()
            stdout, stderr = worker.communicate(timeout=60)
        self.assertEqual(worker.returncode, 0, stderr)

        for n in range(JOBS):
            got = outcomes[f"j{n}"]
            attempt = 2 if fails_once(n) else 1
            self.assertEqual((got.outcome, got.result), ("completed", {"doubled": 2 * n, "attempt": attempt}), n)
        self.assertEqual(outcomes["scheduled"].outcome, "cancelled")
        self.assertEqual(outcomes["running"].outcome, "cancelled")
        self.assertEqual(producer.job(queue, "j7")["failures"], 1)
        self.assertEqual(producer.job(queue, "j7")["error"], "job 7 fails its first attempt")
        self.assertEqual(producer.queue(queue).counts.get("active", 0), 0)

        retried = sum(fails_once(n) for n in range(JOBS))
        counts = json.loads(stdout.strip().splitlines()[-1])
        self.assertEqual(counts, {"completed": JOBS, "retried": retried, "cancelled": 1, "other": 0})


if __name__ == "__main__":
    unittest.main()
