/** The typed answers of the API (docs/http.md). */

/** How a job ended. */
export type OutcomeKind = "completed" | "dead" | "cancelled" | "removed";

/** What a worker's failure asks for. */
export type FailAction = "retry" | "dead" | "cancelled" | "rate_limited";

/** A new job's options, as the server's job object names them. */
export interface JobOptions {
  id?: string;
  priority?: number;
  attempts?: number;
  delay_ms?: number;
  run_at?: number;
  dedup?: string;
  dedup_for_ms?: number;
  debounce_ms?: number;
  group?: string;
  time_limit_ms?: number;
  start_by?: number;
  start_within_ms?: number;
  lifo?: boolean;
  traceparent?: string;
}

/** One job of `enqueueMany`: its payload and options. */
export interface NewJob extends JobOptions {
  payload: unknown;
}

/**
 * An enqueue's answer: the job's id and what happened: `created`, or
 * `existed`, `deduplicated` or `debounced` (the id is then the holder's).
 */
export interface Enqueued {
  id: string;
  outcome: string;
}

/** How a job ended: `result` when completed, `error` and `attempts` when dead. */
export interface Outcome {
  id: string;
  outcome: OutcomeKind;
  result?: unknown;
  error?: string;
  attempts?: number;
}

/**
 * A queue: its counts per state, whether it is paused, its settings, how
 * long its oldest pending job has waited; or, for a queue the server could
 * not read, `unreadable` saying why (and no counts).
 */
export interface QueueInfo {
  name: string;
  counts: Record<string, number>;
  paused: boolean;
  settings: Record<string, unknown>;
  oldest_pending_ms?: number | null;
  unreadable?: string;
}

/** A job's record: every field of the library's `JobRecord`. */
export type JobRecord = Record<string, unknown> & { id: string; state?: string };

/** A page of jobs and the cursor of the next page, `null` at the end. */
export interface JobPage {
  jobs: JobRecord[];
  next: string | null;
}

/** A job a claim handed out, with the fencing token its calls need. */
export interface Claimed {
  id: string;
  token: number;
  payload: unknown;
  attempt: number;
  max_attempts: number;
  lease_ms: number;
  time_limit_ms?: number | null;
  traceparent?: string | null;
  dependencies?: unknown;
  /** Whether the payload was not JSON (written by another client): it is then a string. */
  payload_raw?: boolean;
}

/**
 * One of a queue's lifecycle events: its id (to resume after), its name
 * (`completed`, `retried`, ...) and its fields (`job` among them).
 */
export interface QueueEvent {
  id: string;
  name: string;
  data: Record<string, unknown>;
}

/** What every call takes: an `AbortSignal` that cancels the request. */
export interface CallOptions {
  signal?: AbortSignal;
}
