/**
 * EchoMQ's client over its HTTP API (`emq serve`): enqueue, wait for
 * outcomes, work jobs in a loop, operate queues. No runtime dependencies:
 * the global `fetch` of Node 20.
 */

export { Client, MAX_BATCH, MAX_WAIT_MS, duration } from "./client.js";
export type { ClientOptions } from "./client.js";
export { Cancelled, Delay, EchoMQError, Permanent, RateLimited, Timeout } from "./errors.js";
export type {
  CallOptions,
  Claimed,
  Enqueued,
  FailAction,
  JobOptions,
  JobPage,
  JobRecord,
  NewJob,
  Outcome,
  OutcomeKind,
  QueueEvent,
  QueueInfo,
} from "./types.js";
export { Job, Worker } from "./worker.js";
export type { Handler, WorkerOptions } from "./worker.js";
