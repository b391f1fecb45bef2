/** The client's calls against a real `emq serve` on a real Valkey. */

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Client, EchoMQError, type QueueEvent, Timeout, duration } from "../src/index.js";
import { serverSentEvents } from "../src/sse.js";
import { client, guarded, jobState, queueName, rejection, waitUntil } from "./support.js";

async function refusal(promise: Promise<unknown>): Promise<EchoMQError> {
  const error = await rejection(promise);
  assert.ok(error instanceof EchoMQError, `not an EchoMQError: ${String(error)}`);
  return error;
}

describe("producing", () => {
  it("enqueues a job that reads back", async () => {
    const c = client();
    const q = queueName("enqueue");
    const answer = await c.enqueue(q, { to: "ada" }, { priority: 3 });
    assert.equal(answer.outcome, "created");
    const job = await c.job(q, answer.id);
    assert.equal(job.state, "pending");
    assert.deepEqual(job.payload, { to: "ada" });
    assert.equal(job.priority, 3);
  });

  it("enqueues many past a thousand, in order", async () => {
    const c = client();
    const q = queueName("many");
    const jobs = Array.from({ length: 1001 }, (_, n) => ({ payload: n, id: `n${n}` }));
    const answers = await c.enqueueMany(q, jobs);
    assert.deepEqual(
      answers.map((a) => a.id),
      jobs.map((j) => j.id),
    );
    assert.equal((await c.queue(q)).counts.pending, 1001);
  });

  it("refuses an unknown option, naming it, and writes nothing", async () => {
    const c = client();
    const q = queueName("unknown");
    const error = await refusal(c.enqueue(q, 1, { colour: "red" } as never));
    assert.equal(error.status, 400);
    assert.equal(error.code, "BADREQUEST");
    assert.equal(error.field, "colour");
    assert.deepEqual((await c.jobs(q)).jobs, []);
  });
});

describe("refusals", () => {
  it("refuses a body over the limit with TOOLARGE", async () => {
    const c = client();
    const q = queueName("toolarge");
    // Just over the default 1 MiB: the server answers before reading a
    // far larger body and closes, and fetch then loses its answer to the
    // reset now and then (3 in 20 at 8 and 32 MiB).
    const error = await refusal(c.enqueue(q, "x".repeat(1536 << 10)));
    assert.deepEqual([error.status, error.code], [413, "TOOLARGE"]);
    assert.equal((await c.enqueue(q, "small")).outcome, "created");
    assert.equal((await c.queue(q)).counts.pending, 1);
  });
});

describe("outcomes", () => {
  it("throws Timeout when the outcome wait runs out", async () => {
    const c = client();
    const q = queueName("timeout");
    const { id } = await c.enqueue(q, 1);
    const error = await rejection(c.outcome(q, id, 300));
    assert.ok(error instanceof Timeout);
    assert.equal(error.id, id);
  });

  it("answers a completed outcome with its result", async () => {
    const c = client();
    const q = queueName("completed");
    const { id } = await c.enqueue(q, { n: 2 });
    const [job] = await c.claim(q, { lease_ms: 30_000 });
    assert.equal(job?.id, id);
    await c.complete(q, id, job.token, { doubled: 4 });
    assert.deepEqual(await c.outcome(q, id, 5_000), { id, outcome: "completed", result: { doubled: 4 } });
  });

  it("enqueues and waits for the outcome", async () => {
    const c = client();
    const q = queueName("andwait");
    const working = (async () => {
      const jobs = await c.claim(q, { wait_ms: 10_000 });
      for (const job of jobs) await c.complete(q, job.id, job.token, (job.payload as number) * 10);
    })();
    const outcome = await c.enqueueAndWait(q, 7, 15_000);
    await working;
    assert.equal(outcome.outcome, "completed");
    assert.equal(outcome.result, 70);
  });

  it("answers a dead outcome with the error and attempts", async () => {
    const c = client();
    const q = queueName("dead");
    const { id } = await c.enqueue(q, 1, { attempts: 1 });
    const [job] = await c.claim(q);
    assert.equal(await c.fail(q, id, job!.token, "boom"), "dead");
    const outcome = await c.outcome(q, id, 5_000);
    assert.equal(outcome.outcome, "dead");
    assert.equal(outcome.error, "boom");
    assert.equal(outcome.attempts, 1);
  });

  it("refuses to cancel a finished job with BADSTATE", async () => {
    const c = client();
    const q = queueName("badstate");
    const { id } = await c.enqueue(q, 1);
    const [job] = await c.claim(q);
    await c.complete(q, id, job!.token);
    const error = await refusal(c.cancel(q, id));
    assert.deepEqual([error.status, error.code, error.job, error.state], [409, "BADSTATE", id, "completed"]);
    assert.equal(error.line, "BADSTATE completed");
  });

  it("answers cancelled and removed outcomes", async () => {
    const c = client();
    const q = queueName("ended");
    const pending = await c.enqueue(q, 1);
    const scheduled = await c.enqueue(q, 2, { delay_ms: 60_000 });
    await c.cancel(q, pending.id);
    await c.remove(q, scheduled.id);
    assert.equal((await c.outcome(q, pending.id, 5_000)).outcome, "cancelled");
    assert.equal((await c.outcome(q, scheduled.id, 5_000)).outcome, "removed");
  });

  it("answers 404 for a missing job", async () => {
    const error = await refusal(client().job(queueName("missing"), "no-such-job"));
    assert.equal(error.status, 404);
    assert.ok(["NOTFOUND", "NOJOB"].includes(error.code), error.code);
  });
});

describe("working", () => {
  it("holds a claim until a job comes", async () => {
    const c = client();
    const q = queueName("longpoll");
    const started = Date.now();
    assert.deepEqual(await c.claim(q, { wait_ms: 400 }), []);
    assert.ok(Date.now() - started >= 350);
    const claiming = c.claim(q, { wait_ms: 20_000 });
    const { id } = await c.enqueue(q, 1);
    assert.deepEqual(
      (await claiming).map((j) => j.id),
      [id],
    );
  });

  it("aborts a long-poll with an AbortSignal", async () => {
    const c = client();
    const q = queueName("abort");
    const started = Date.now();
    const error = await rejection(c.claim(q, { wait_ms: 30_000 }, { signal: AbortSignal.timeout(200) }));
    assert.equal((error as Error).name, "TimeoutError");
    assert.ok(Date.now() - started < 10_000);
  });

  it("refuses a stale token with NOTACTIVE", async () => {
    const c = client();
    const q = queueName("stale");
    const { id } = await c.enqueue(q, 1);
    const [job] = await c.claim(q);
    const error = await refusal(c.complete(q, id, job!.token + 1, "late"));
    assert.deepEqual([error.status, error.code], [409, "NOTACTIVE"]);
    assert.equal(await jobState(c, q, id), "active");
  });

  it("says on extend that a cancel was requested", async () => {
    const c = client();
    const q = queueName("extend");
    const { id } = await c.enqueue(q, 1);
    const [job] = await c.claim(q, { lease_ms: 5_000 });
    assert.equal(await c.extend(q, id, job!.token, 5_000), false);
    await c.cancel(q, id);
    assert.equal(await c.extend(q, id, job!.token, 5_000), true);
    assert.equal(await c.fail(q, id, job!.token, "stopped", "cancelled"), "cancelled");
    assert.equal((await c.outcome(q, id, 5_000)).outcome, "cancelled");
  });

  it("reads back progress and log lines", async () => {
    const c = client();
    const q = queueName("log");
    const { id } = await c.enqueue(q, 1);
    const [job] = await c.claim(q);
    await c.progress(q, id, job!.token, { done: 50 });
    await c.appendLog(q, id, job!.token, "half way");
    assert.deepEqual(await c.log(q, id), ["half way"]);
    const progress = (await c.job(q, id)).progress;
    assert.ok(JSON.stringify(progress) === '{"done":50}' || progress === '{"done":50}', String(progress));
  });

  it("retries a failed job", async () => {
    const c = client();
    const q = queueName("retry");
    const { id } = await c.enqueue(q, 1, { attempts: 2 });
    const [job] = await c.claim(q);
    assert.equal(await c.fail(q, id, job!.token, "flaky", "retry", 0), "retry");
    const again = await waitUntil("the retry", async () => (await c.claim(q))[0]);
    assert.deepEqual([again.id, again.attempt], [id, 2]);
  });
});

describe("events", () => {
  it("streams a job's life and resumes after an event id", async () => {
    const c = client();
    const q = queueName("events");
    const seen: QueueEvent[] = [];
    const reading = (async () => {
      for await (const event of c.events(q)) {
        seen.push(event);
        if (event.name === "completed" && event.data.job === "watched") return;
      }
    })();
    // The stream reads from now: enqueue until the reader sees an event.
    await waitUntil("the stream to open", async () => (await c.enqueue(q, "marker")) && seen.length > 0);
    await c.enqueue(q, "watched", { id: "watched" });
    const watched = (await c.claim(q, { count: 1000 })).find((job) => job.id === "watched");
    await c.complete(q, "watched", watched!.token, "done");
    await reading;

    const life = seen.filter((event) => event.data.job === "watched");
    assert.deepEqual([life[0]?.name, life.at(-1)?.name], ["enqueued", "completed"]);
    const at = seen.indexOf(life[0]!);
    for await (const event of c.events(q, { lastEventId: seen[at]!.id })) {
      assert.equal(event.id, seen[at + 1]!.id);
      break;
    }
  });
});

describe("operating", () => {
  it("lists queues, pauses and resumes", async () => {
    const c = client();
    const q = queueName("pause");
    await c.enqueueMany(q, [{ payload: 1 }, { payload: 2 }]);
    const listed = (await c.queues()).find((info) => info.name === q);
    assert.equal(listed?.counts.pending, 2);
    await c.pause(q);
    assert.equal((await c.queue(q)).paused, true);
    assert.deepEqual(await c.claim(q), []);
    await c.resume(q);
    assert.equal((await c.queue(q)).paused, false);
    assert.equal((await c.claim(q)).length, 1);
  });

  it("pages jobs with a cursor", async () => {
    const c = client();
    const q = queueName("pages");
    const ids = (await c.enqueueMany(q, Array.from({ length: 7 }, (_, n) => ({ payload: n })))).map((a) => a.id);
    const first = await c.jobs(q, { limit: 3 });
    assert.equal(first.jobs.length, 3);
    assert.notEqual(first.next, null);
    const seen: string[] = [];
    for await (const job of c.iterJobs(q, "pending", 3)) seen.push(job.id);
    assert.deepEqual(seen.sort(), ids.sort());
  });

  it("drains pending jobs", async () => {
    const c = client();
    const q = queueName("drain");
    await c.enqueueMany(q, [{ payload: 1 }, { payload: 2 }]);
    await c.drain(q);
    assert.equal((await c.queue(q)).counts.pending, 0);
  });
});

describe("tokens", () => {
  it("sends a token as a bearer token", async () => {
    const { url, token } = guarded();
    const c = new Client(url, { token });
    const q = queueName("token");
    assert.equal((await c.enqueue(q, 1)).outcome, "created");
    assert.ok((await c.queues()).some((info) => info.name === q));
  });

  it("is unauthorized without a token or with a wrong one", async () => {
    const { url, token } = guarded();
    for (const sent of [undefined, `${token}0`]) {
      const error = await refusal(new Client(url, sent === undefined ? {} : { token: sent }).queues());
      assert.deepEqual([error.status, error.code], [401, "UNAUTHORIZED"]);
    }
  });
});

describe("scoped tokens", () => {
  it("lets a producer enqueue to its queues and claim nothing", async () => {
    const { url, token } = guarded("producer");
    const producer = new Client(url, { token });
    const mine = queueName("scoped");
    const other = queueName("unscoped");
    assert.equal((await producer.enqueue(mine, 1)).outcome, "created");
    for (const refused of [producer.claim(mine), producer.enqueue(other, 1)]) {
      const error = await refusal(refused);
      assert.deepEqual([error.status, error.code], [403, "FORBIDDEN"]);
    }
    assert.equal((await client().queue(mine)).counts.pending, 1);
  });
});

describe("addressing", () => {
  it("parses server-sent events with comments, CRLF and split data", async () => {
    const text = ': keep-alive\r\nid: 5-0/1\r\nevent: retried\r\ndata: {"job": "7",\r\ndata: "n": 1}\r\n\r\n';
    const bytes = new TextEncoder().encode(text);
    // Two chunks split inside a line, as a network may deliver them.
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, 30));
        controller.enqueue(bytes.slice(30));
        controller.close();
      },
    });
    const events = [];
    for await (const event of serverSentEvents(body)) events.push(event);
    assert.deepEqual(events, [{ id: "5-0/1", name: "retried", data: { job: "7", n: 1 } }]);
  });

  it("throws UNREACHABLE when no server answers", async () => {
    const error = await refusal(new Client("http://127.0.0.1:9", { timeoutMs: 2_000 }).queues());
    assert.deepEqual([error.code, error.status], ["UNREACHABLE", 0]);
  });

  it("refuses a base URL that is not http", () => {
    assert.throws(() => new Client("redis://127.0.0.1:6379"), TypeError);
  });

  it("writes durations in whole milliseconds", () => {
    assert.equal(duration(1500), "1500ms");
    assert.throws(() => duration(-1), RangeError);
  });
});
