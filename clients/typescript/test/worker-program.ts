/**
 * A worker process for the SIGTERM test: `worker-program.js URL QUEUE`.
 * Each job sleeps its payload's `ms`; prints `stopped` once run() resolved.
 */

import { setTimeout as sleep } from "node:timers/promises";
import { Client, type Job, Worker } from "../src/index.js";

const [url, queue] = process.argv.slice(2) as [string, string];
const handler = async (job: Job) => {
  await sleep((job.payload as { ms: number }).ms);
  return "slept";
};
await new Worker(new Client(url), queue, handler, { concurrency: 1, leaseMs: 10_000, waitMs: 500 }).run();
console.log("stopped");
