/** The errors the client throws, and the ones a worker's handler throws. */

/**
 * A request the server refused, in the API's one error shape. `code` is
 * the protocol's refusal code (`BADSTATE`, `NOTACTIVE`, ...) or the HTTP
 * layer's own (`BADREQUEST`, `UNAUTHORIZED`, ...); `status` the HTTP status
 * (0 when the server could not be reached, with the code `UNREACHABLE`);
 * `field`, `job` and `state` are set when the server named them, `line`
 * (the protocol's error line, `BADSTATE completed`) for a refused transition.
 */
export class EchoMQError extends Error {
  override name = "EchoMQError";

  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly field?: string,
    readonly job?: string,
    readonly state?: string,
    readonly line?: string,
  ) {
    super(message ? `${code}: ${message}` : code);
  }

  /** The error an answer with a non-2xx status carries. */
  static fromResponse(status: number, text: string): EchoMQError {
    let error: unknown;
    try {
      error = (JSON.parse(text) as { error?: unknown })?.error;
    } catch {
      error = undefined;
    }
    if (typeof error !== "object" || error === null) {
      return new EchoMQError(`HTTP${status}`, text.trim() || `HTTP status ${status}`, status);
    }
    const e = error as Record<string, unknown>;
    const optional = (v: unknown) => (v === undefined || v === null ? undefined : String(v));
    return new EchoMQError(
      String(e.code ?? `HTTP${status}`),
      String(e.message ?? ""),
      status,
      optional(e.field),
      optional(e.job),
      optional(e.state),
      optional(e.line),
    );
  }

  /** The message without the code, as the server wrote it. */
  get serverMessage(): string {
    const prefix = `${this.code}: `;
    return this.message.startsWith(prefix) ? this.message.slice(prefix.length) : this.message;
  }
}

/** The outcome wait ran out (the server answered 202): the job runs on. */
export class Timeout extends Error {
  override name = "Timeout";

  constructor(readonly id: string) {
    super(`job ${id} has no outcome yet`);
  }
}

/** Thrown by a handler: retrying will not help, the job is dead now. */
export class Permanent extends Error {
  override name = "Permanent";
}

/** Thrown by a handler that stopped because its job was cancelled. */
export class Cancelled extends Error {
  override name = "Cancelled";
}

/** Thrown by a handler whose job should run again later: it waits `delayMs`, without using an attempt. */
export class Delay extends Error {
  override name = "Delay";

  constructor(readonly delayMs: number) {
    super(`delayed by ${delayMs} ms`);
  }
}

/**
 * Thrown by a handler that met a rate limit: the job goes back to pending
 * without counting an attempt, and the whole queue is held for
 * `retryAfterMs`.
 */
export class RateLimited extends Error {
  override name = "RateLimited";

  constructor(
    readonly retryAfterMs: number,
    message = "rate limited",
  ) {
    super(message);
  }
}
