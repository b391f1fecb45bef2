/**
 * A worker loop over the HTTP API: claim with a long-poll, run a function,
 * complete or fail, extend the lease while it runs, stop on SIGTERM.
 */

import { hostname } from "node:os";
import type { Client } from "./client.js";
import { Cancelled, Delay, EchoMQError, Permanent, RateLimited } from "./errors.js";
import type { Claimed } from "./types.js";

/** A job in hand, as a handler sees it. */
export class Job {
  private readonly controller = new AbortController();

  constructor(
    private readonly client: Client,
    readonly queue: string,
    readonly claimed: Claimed,
  ) {}

  /** The job's id. */
  get id(): string {
    return this.claimed.id;
  }

  /** The job's payload. */
  get payload(): unknown {
    return this.claimed.payload;
  }

  /** This run's attempt, from 1. */
  get attempt(): number {
    return this.claimed.attempt;
  }

  /** How many attempts the job has. */
  get maxAttempts(): number {
    return this.claimed.max_attempts;
  }

  /**
   * Aborted when someone asked the job to stop (the lease's extension said
   * so), its lease was lost or its time limit passed; a handler that stops
   * because it was asked throws `Cancelled`.
   */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Records the job's progress (any JSON value). */
  progress(value: unknown): Promise<void> {
    return this.client.progress(this.queue, this.id, this.claimed.token, value);
  }

  /** Appends a line to the job's log. */
  log(line: string): Promise<void> {
    return this.client.appendLog(this.queue, this.id, this.claimed.token, line);
  }

  /** @internal Asks the handler to stop. */
  cancel(reason: string): void {
    this.controller.abort(new Cancelled(reason));
  }
}

/** A job's function: its value (any JSON value) is the result. */
export type Handler = (job: Job) => unknown | Promise<unknown>;

/** How a worker works. */
export interface WorkerOptions {
  /** Jobs run at once (1). */
  concurrency?: number;
  /** Each job's lease, extended at a third of it while it runs (30,000). */
  leaseMs?: number;
  /** How long a claim waits for a job (a long-poll, 5,000; at most 60,000). */
  waitMs?: number;
  /** The worker's name, as claims record it. */
  name?: string;
  /** Stop on SIGTERM and SIGINT (true). */
  handleSignals?: boolean;
  /** Told of calls that failed (a claim, a completion, an extension); `console.warn` by default. */
  onError?: (error: unknown, what: string) => void;
}

/**
 * Works `queue`'s jobs with `handler`. A handler's value completes the job;
 * a throw fails it: `Permanent` dead, `Cancelled` cancelled, `RateLimited`
 * back to pending with the queue held, `Delay` back to wait without using
 * an attempt, any other retried (while attempts remain) with its message.
 * `run()` resolves once stopped (SIGTERM, SIGINT or `stop()`) and the jobs
 * in hand are finished; a claim in flight ends within `waitMs`.
 */
export class Worker {
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly waitMs: number;
  readonly name: string;
  private readonly handleSignals: boolean;
  private readonly onError: (error: unknown, what: string) => void;
  private readonly held = new Set<Promise<void>>();
  private readonly stopping = new AbortController();

  constructor(
    readonly client: Client,
    readonly queue: string,
    readonly handler: Handler,
    options: WorkerOptions = {},
  ) {
    this.concurrency = options.concurrency ?? 1;
    this.leaseMs = options.leaseMs ?? 30_000;
    this.waitMs = options.waitMs ?? 5_000;
    this.name = options.name ?? `${hostname()}:node:${process.pid}`;
    this.handleSignals = options.handleSignals ?? true;
    this.onError = options.onError ?? ((error, what) => console.warn(`echomq worker: ${what}: ${String(error)}`));
    if (!(this.concurrency >= 1)) throw new RangeError("concurrency is at least 1");
    if (!(this.leaseMs >= 3)) throw new RangeError("leaseMs is at least 3");
  }

  /** Claims no more; `run()` resolves once the jobs in hand end. */
  stop(): void {
    this.stopping.abort();
  }

  /** Whether the worker was asked to stop. */
  get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /** Works jobs until stopped. */
  async run(): Promise<void> {
    const stop = () => this.stop();
    if (this.handleSignals) {
      process.on("SIGTERM", stop);
      process.on("SIGINT", stop);
    }
    try {
      while (!this.stopped) {
        if (this.held.size >= this.concurrency) {
          await Promise.race(this.held);
          continue;
        }
        for (const claimed of await this.claim(this.concurrency - this.held.size)) {
          const work: Promise<void> = this.work(new Job(this.client, this.queue, claimed)).finally(() =>
            this.held.delete(work),
          );
          this.held.add(work);
        }
      }
      await Promise.all(this.held);
    } finally {
      if (this.handleSignals) {
        process.off("SIGTERM", stop);
        process.off("SIGINT", stop);
      }
    }
  }

  private async claim(count: number): Promise<Claimed[]> {
    try {
      return await this.client.claim(this.queue, {
        count,
        lease_ms: this.leaseMs,
        wait_ms: this.waitMs,
        worker: this.name,
      });
    } catch (error) {
      this.onError(error, `claim on ${this.queue}`);
      await pause(1_000, this.stopping.signal);
      return [];
    }
  }

  private async work(job: Job): Promise<void> {
    // Extensions run one after another, and the last one ends before the
    // job's completion or failure is sent.
    let extending = Promise.resolve();
    // A third of the lease the claim granted (shorter under a time limit).
    const timer = setInterval(
      () => (extending = extending.then(() => this.extend(job))),
      Math.max(1, Math.floor(job.claimed.lease_ms / 3)),
    );
    let ended: { result: unknown } | { error: unknown };
    try {
      ended = { result: await this.handler(job) };
    } catch (error) {
      ended = { error };
    }
    clearInterval(timer);
    await extending;
    if ("error" in ended) {
      await this.fail(job, ended.error);
      return;
    }
    try {
      await this.client.complete(this.queue, job.id, job.claimed.token, ended.result ?? null);
    } catch (error) {
      // Not the server's refusal: the result is not JSON (a BigInt, a cycle).
      if (!(error instanceof EchoMQError)) await this.fail(job, error);
      else this.onError(error, `completing job ${job.id}`);
    }
  }

  private async fail(job: Job, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message || error.name : String(error);
    const token = job.claimed.token;
    try {
      if (error instanceof Permanent) {
        await this.client.fail(this.queue, job.id, token, message, "dead");
      } else if (error instanceof Delay) {
        await this.client.delay(this.queue, job.id, token, error.delayMs);
      } else if (error instanceof Cancelled) {
        await this.client.fail(this.queue, job.id, token, message, "cancelled");
      } else if (error instanceof RateLimited) {
        await this.client.fail(this.queue, job.id, token, message, "rate_limited", error.retryAfterMs);
      } else {
        await this.client.fail(this.queue, job.id, token, message, "retry");
      }
    } catch (failed) {
      this.onError(failed, `failing job ${job.id}`);
    }
  }

  private async extend(job: Job): Promise<void> {
    try {
      if (await this.client.extend(this.queue, job.id, job.claimed.token, this.leaseMs)) {
        job.cancel("cancel requested");
      }
    } catch (error) {
      if (error instanceof EchoMQError && (error.code === "NOTACTIVE" || error.status === 404)) {
        job.cancel("the lease was lost");
      } else if (error instanceof EchoMQError && error.code === "TIMELIMIT") {
        job.cancel("the time limit passed");
      }
      this.onError(error, `extending job ${job.id}`);
    }
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
