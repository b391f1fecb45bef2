"""A worker process for the SIGTERM test: `worker_program.py URL QUEUE`.
Each job sleeps its payload's `ms`; prints `stopped` once run() returned."""

from __future__ import annotations

import sys
import time

from echomq import Client, Job, Worker


def handler(job: Job) -> str:
    time.sleep(job.payload["ms"] / 1000)
    return "slept"


if __name__ == "__main__":
    url, queue = sys.argv[1], sys.argv[2]
    Worker(Client(url), queue, handler, concurrency=1, lease_ms=10_000, wait_ms=500).run()
    print("stopped", flush=True)
