/** The client of EchoMQ's HTTP API (docs/http.md). */

import { EchoMQError, Timeout } from "./errors.js";
import { serverSentEvents } from "./sse.js";
import type {
  CallOptions,
  Claimed,
  Enqueued,
  FailAction,
  JobOptions,
  JobPage,
  JobRecord,
  NewJob,
  Outcome,
  QueueEvent,
  QueueInfo,
} from "./types.js";

/** The most jobs one request enqueues; `enqueueMany` splits. */
export const MAX_BATCH = 1000;

/** The longest outcome wait the server takes, in milliseconds (`5m`). */
export const MAX_WAIT_MS = 300_000;

const API_PREFIX = "/api/v1";

/** How a client reaches the server. */
export interface ClientOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** How long a request may take, on top of any wait the server holds (30 s). */
  timeoutMs?: number;
}

interface Request extends CallOptions {
  body?: unknown;
  query?: Record<string, string>;
  /** How long the server may hold the answer (a long-poll). */
  waitMs?: number;
}

/** A query string's duration: whole milliseconds (`1500ms`). */
export function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`a duration is not negative: ${ms}`);
  return `${Math.round(ms)}ms`;
}

/**
 * EchoMQ's HTTP API at `baseUrl` (the server's address, as `emq serve`
 * prints it; `/api/v1` is added unless it ends with it). Every call takes
 * an `AbortSignal` in its last argument.
 */
export class Client {
  private readonly prefix: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;

  constructor(baseUrl: string, options: ClientOptions = {}) {
    const url = new URL(baseUrl);
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new TypeError(`baseUrl must be an http:// or https:// URL, not ${baseUrl}`);
    }
    const path = url.pathname.replace(/\/+$/, "");
    this.prefix = url.origin + (path.endsWith(API_PREFIX) ? path : path + API_PREFIX);
    this.headers = { Accept: "application/json" };
    if (options.token !== undefined) this.headers.Authorization = `Bearer ${options.token}`;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  // Producers

  /** Enqueues one job with its options (`priority`, `delay_ms`, `dedup`, ...). */
  async enqueue(queue: string, payload: unknown, options: JobOptions = {}, call: CallOptions = {}): Promise<Enqueued> {
    const { body } = await this.request("POST", jobsPath(queue), { ...call, body: { ...options, payload } });
    return enqueued(body);
  }

  /**
   * Enqueues one job and waits up to `timeoutMs` for its outcome; throws
   * `Timeout` when it has none by then.
   */
  async enqueueAndWait(
    queue: string,
    payload: unknown,
    timeoutMs = 30_000,
    options: JobOptions = {},
    call: CallOptions = {},
  ): Promise<Outcome> {
    const answer = await this.request("POST", jobsPath(queue), {
      ...call,
      body: { ...options, payload },
      query: { wait: duration(checkWait(timeoutMs)) },
      waitMs: timeoutMs,
    });
    return outcomeOf(answer);
  }

  /** Enqueues jobs, at most 1,000 a request; the answers are in the jobs' order. */
  async enqueueMany(queue: string, jobs: Iterable<NewJob>, call: CallOptions = {}): Promise<Enqueued[]> {
    const all = [...jobs];
    const answers: Enqueued[] = [];
    for (let start = 0; start < all.length; start += MAX_BATCH) {
      const batch = all.slice(start, start + MAX_BATCH);
      const { body } = await this.request("POST", jobsPath(queue), { ...call, body: batch });
      answers.push(...(body as { jobs: unknown[] }).jobs.map(enqueued));
    }
    return answers;
  }

  /** Waits up to `timeoutMs` (at most 5 minutes) for the job's outcome; throws `Timeout` when it has none by then. */
  async outcome(queue: string, id: string, timeoutMs = 30_000, call: CallOptions = {}): Promise<Outcome> {
    const answer = await this.request("GET", `${jobPath(queue, id)}/outcome`, {
      ...call,
      query: { timeout: duration(checkWait(timeoutMs)) },
      waitMs: timeoutMs,
    });
    return outcomeOf(answer);
  }

  // Reading

  /** Every queue, with its counts and settings. */
  async queues(call: CallOptions = {}): Promise<QueueInfo[]> {
    const { body } = await this.request("GET", "/queues", call);
    return (body as { queues: QueueInfo[] }).queues;
  }

  /** One queue, with its counts and settings. */
  async queue(queue: string, call: CallOptions = {}): Promise<QueueInfo> {
    return (await this.request("GET", queuePath(queue), call)).body as QueueInfo;
  }

  /** One page of the queue's jobs in `state` (`limit` at most 1,000); pass `next` as `cursor` for the following one. */
  async jobs(
    queue: string,
    page: { state?: string; limit?: number; cursor?: string | null } = {},
    call: CallOptions = {},
  ): Promise<JobPage> {
    const query: Record<string, string> = { state: page.state ?? "pending", limit: String(page.limit ?? 50) };
    if (page.cursor != null) query.cursor = page.cursor;
    const body = (await this.request("GET", jobsPath(queue), { ...call, query })).body as JobPage;
    return { jobs: body.jobs, next: body.next ?? null };
  }

  /** Every job of the queue in `state`, page after page. */
  async *iterJobs(queue: string, state = "pending", limit = 200, call: CallOptions = {}): AsyncGenerator<JobRecord> {
    let cursor: string | null = null;
    do {
      const page: JobPage = await this.jobs(queue, { state, limit, cursor }, call);
      yield* page.jobs;
      cursor = page.next;
    } while (cursor !== null);
  }

  /** One job: every field of the library's `JobRecord`. */
  async job(queue: string, id: string, call: CallOptions = {}): Promise<JobRecord> {
    return (await this.request("GET", jobPath(queue, id), call)).body as JobRecord;
  }

  /** The job's log lines. */
  async log(queue: string, id: string, call: CallOptions = {}): Promise<string[]> {
    return ((await this.request("GET", `${jobPath(queue, id)}/log`, call)).body as { lines: string[] }).lines;
  }

  /**
   * The queue's events as they happen (from now, or just after
   * `lastEventId`), for as long as the caller reads (`break`, or abort the
   * signal): a stream the server ends is resumed after the last event read.
   */
  async *events(queue: string, options: { lastEventId?: string } = {}, call: CallOptions = {}): AsyncGenerator<QueueEvent> {
    let last = options.lastEventId;
    for (;;) {
      const headers: Record<string, string> = { ...this.headers, Accept: "text/event-stream" };
      if (last !== undefined) headers["Last-Event-ID"] = last;
      let response: Response;
      try {
        response = await fetch(`${this.prefix}${queuePath(queue)}/events`, { headers, signal: call.signal });
      } catch (err) {
        if (call.signal?.aborted) throw call.signal.reason;
        throw new EchoMQError("UNREACHABLE", `the server could not be reached: ${String((err as Error).cause ?? err)}`, 0);
      }
      if (!response.ok || !response.body) throw EchoMQError.fromResponse(response.status, await response.text());
      let read = false;
      try {
        for await (const event of serverSentEvents(response.body)) {
          last = event.id;
          read = true;
          yield event;
        }
      } catch (err) {
        if (call.signal?.aborted) throw call.signal.reason;
        // The stream broke: resume after the last event read.
      }
      if (!read) await new Promise((resolve) => setTimeout(resolve, 1_000)); // ended at once: no tight loop
    }
  }

  // Operating

  /**
   * Sends a control of the registry: a queue's (`pause`, `drain`, ...) or,
   * with `id`, a job's (`cancel`, `remove`, ...). The verb is lower case,
   * `.` written `-` (`group-pause`); `fields` are its arguments and
   * options (`undefined` and `false` ones are left out). Answers the
   * server's JSON.
   */
  async control(
    queue: string,
    verb: string,
    target: { id?: string; fields?: Record<string, unknown> } = {},
    call: CallOptions = {},
  ): Promise<unknown> {
    const body = Object.fromEntries(
      Object.entries(target.fields ?? {}).filter(([, value]) => value !== undefined && value !== false),
    );
    const base = target.id === undefined ? queuePath(queue) : jobPath(queue, target.id);
    return (await this.request("POST", `${base}/controls/${seg(verb)}`, { ...call, body })).body;
  }

  /** Cancels a waiting job, or asks a running one to stop. */
  cancel(queue: string, id: string, call: CallOptions = {}): Promise<unknown> {
    return this.control(queue, "cancel", { id }, call);
  }

  /** Deletes a job (a running one only with `force`). */
  remove(queue: string, id: string, options: { force?: boolean } = {}, call: CallOptions = {}): Promise<unknown> {
    return this.control(queue, "remove", { id, fields: { force: options.force } }, call);
  }

  /** Stops claims on the queue; running jobs run on. */
  pause(queue: string, call: CallOptions = {}): Promise<unknown> {
    return this.control(queue, "pause", {}, call);
  }

  /** Resumes claims on the queue. */
  resume(queue: string, call: CallOptions = {}): Promise<unknown> {
    return this.control(queue, "resume", {}, call);
  }

  /** Deletes the queue's pending jobs (with `scheduled` and `blocked` those too). */
  drain(
    queue: string,
    options: { scheduled?: boolean; blocked?: boolean } = {},
    call: CallOptions = {},
  ): Promise<unknown> {
    return this.control(queue, "drain", { fields: { ...options } }, call);
  }

  // Workers

  /**
   * Claims up to `count` jobs for `lease_ms`; with `wait_ms` (at most
   * 60,000) waits that long for one when none is pending.
   */
  async claim(
    queue: string,
    options: { count?: number; lease_ms?: number; wait_ms?: number; worker?: string } = {},
    call: CallOptions = {},
  ): Promise<Claimed[]> {
    const body = { count: 1, lease_ms: 30_000, ...options };
    const answer = await this.request("POST", `${queuePath(queue)}/claim`, {
      ...call,
      body,
      waitMs: options.wait_ms ?? 0,
    });
    return (answer.body as { jobs: Claimed[] }).jobs;
  }

  /** Completes a job in hand with `result`. */
  async complete(queue: string, id: string, token: number, result: unknown = null, call: CallOptions = {}): Promise<void> {
    await this.request("POST", `${jobPath(queue, id)}/complete`, { ...call, body: { token, result } });
  }

  /**
   * Fails a job in hand: `retry` (while attempts remain, after `delayMs`
   * or the queue's backoff), `dead`, `cancelled` or `rate_limited` (the
   * queue held for `delayMs`). Answers what happened.
   */
  async fail(
    queue: string,
    id: string,
    token: number,
    error: string,
    action: FailAction = "retry",
    delayMs?: number,
    call: CallOptions = {},
  ): Promise<FailAction> {
    const body: Record<string, unknown> = { token, error, action };
    if (delayMs !== undefined) body.delay_ms = delayMs;
    const answer = await this.request("POST", `${jobPath(queue, id)}/fail`, { ...call, body });
    return (answer.body as { outcome: FailAction }).outcome;
  }

  /** Extends a job's lease to `leaseMs` from now; answers whether someone asked the job to stop. */
  async extend(queue: string, id: string, token: number, leaseMs: number, call: CallOptions = {}): Promise<boolean> {
    const answer = await this.request("POST", `${jobPath(queue, id)}/extend`, {
      ...call,
      body: { token, lease_ms: leaseMs },
    });
    return Boolean((answer.body as { cancel_requested: boolean }).cancel_requested);
  }

  /** Sends a job in hand back to wait `delayMs`, no attempt used. */
  async delay(queue: string, id: string, token: number, delayMs: number, call: CallOptions = {}): Promise<void> {
    await this.request("POST", `${jobPath(queue, id)}/delay`, { ...call, body: { token, delay_ms: delayMs } });
  }

  /** Records a job's progress (any JSON value). */
  async progress(queue: string, id: string, token: number, progress: unknown, call: CallOptions = {}): Promise<void> {
    await this.request("POST", `${jobPath(queue, id)}/progress`, { ...call, body: { token, progress } });
  }

  /** Appends a line to a job's log. */
  async appendLog(queue: string, id: string, token: number, line: string, call: CallOptions = {}): Promise<void> {
    await this.request("POST", `${jobPath(queue, id)}/log`, { ...call, body: { token, line } });
  }

  /** Sends one request; answers a 2xx, throws `EchoMQError` otherwise. */
  private async request(method: string, path: string, request: Request): Promise<{ status: number; body: unknown }> {
    let url = this.prefix + path;
    if (request.query) url += `?${new URLSearchParams(request.query)}`;
    const headers = { ...this.headers };
    let data: string | undefined;
    if (request.body !== undefined) {
      data = JSON.stringify(request.body);
      headers["Content-Type"] = "application/json";
    }
    const limit = AbortSignal.timeout(this.timeoutMs + (request.waitMs ?? 0));
    const signal = request.signal ? AbortSignal.any([request.signal, limit]) : limit;
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, { method, headers, body: data, signal });
      text = await response.text();
    } catch (err) {
      if (request.signal?.aborted) throw request.signal.reason;
      const why = limit.aborted ? "no answer in time" : String((err as Error).cause ?? err);
      throw new EchoMQError("UNREACHABLE", `the server could not be reached: ${why}`, 0);
    }
    if (!response.ok) throw EchoMQError.fromResponse(response.status, text);
    return { status: response.status, body: text ? JSON.parse(text) : null };
  }
}

function checkWait(ms: number): number {
  if (!(ms >= 0 && ms <= MAX_WAIT_MS)) throw new RangeError(`a wait is 0 to ${MAX_WAIT_MS} ms, not ${ms}`);
  return ms;
}

function enqueued(value: unknown): Enqueued {
  const v = value as Enqueued;
  return { id: String(v.id), outcome: String(v.outcome) };
}

function outcomeOf(answer: { status: number; body: unknown }): Outcome {
  const body = answer.body as Outcome & { outcome: string };
  if (answer.status === 202) throw new Timeout(String(body.id));
  if (!["completed", "dead", "cancelled", "removed"].includes(body.outcome)) {
    throw new EchoMQError("BADANSWER", `not an outcome: ${JSON.stringify(body.outcome)}`, answer.status);
  }
  return body;
}

function seg(value: string): string {
  return encodeURIComponent(value);
}

function queuePath(queue: string): string {
  return `/queues/${seg(queue)}`;
}

function jobsPath(queue: string): string {
  return `${queuePath(queue)}/jobs`;
}

function jobPath(queue: string, id: string): string {
  return `${jobsPath(queue)}/${seg(id)}`;
}
