/**
 * The TypeScript worker of the end-to-end test (clients/python/tests/test_e2e.py):
 * `e2e-worker.js URL QUEUE`. Doubles each job's `n`; a job with `fail_once`
 * fails its first attempt; one with `until_cancelled` runs until its
 * signal aborts. On SIGTERM it finishes the jobs in hand and prints what
 * its handler did as one JSON line.
 */

import { Cancelled, Client, type Job, Worker } from "../src/index.js";

interface Payload {
  n: number;
  fail_once?: boolean;
  until_cancelled?: boolean;
}

const [url, queue] = process.argv.slice(2) as [string, string];
const counts = { completed: 0, retried: 0, cancelled: 0, other: 0 };

async function handler(job: Job): Promise<unknown> {
  const payload = job.payload as Payload;
  if (payload.until_cancelled) {
    await new Promise((resolve) => job.signal.addEventListener("abort", resolve, { once: true }));
    counts.cancelled += 1;
    throw new Cancelled("cancelled while it ran");
  }
  if (payload.fail_once && job.attempt === 1) {
    counts.retried += 1;
    throw new Error(`job ${payload.n} fails its first attempt`);
  }
  counts.completed += 1;
  return { doubled: payload.n * 2, attempt: job.attempt };
}

const worker = new Worker(new Client(url), queue, handler, {
  concurrency: 32,
  leaseMs: 1_500,
  waitMs: 1_000,
  onError: (error, what) => {
    counts.other += 1;
    console.error(`${what}: ${String(error)}`);
  },
});
await worker.run();
console.log(JSON.stringify(counts));
