/** The worker loop against a real `emq serve` on a real Valkey. */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { Cancelled, Client, Delay, type Job, Permanent, Worker, type WorkerOptions } from "../src/index.js";
import { client, jobState, queueName, serverUrl, waitUntil } from "./support.js";

/** Runs a worker while `body` runs, then stops it and waits for its end. */
async function running<T>(worker: Worker, body: () => Promise<T>): Promise<T> {
  const loop = worker.run();
  try {
    return await body();
  } finally {
    worker.stop();
    await loop;
  }
}

const quick: WorkerOptions = { waitMs: 500, handleSignals: false };

/** A real client that counts its lease extensions. */
class CountingClient extends Client {
  extensions = 0;

  override extend(queue: string, id: string, token: number, leaseMs: number): Promise<boolean> {
    this.extensions += 1;
    return super.extend(queue, id, token, leaseMs);
  }
}

describe("worker", () => {
  it("completes, retries and dead-letters", async () => {
    const c = client();
    const q = queueName("loop");
    const handler = (job: Job) => {
      const { kind, n } = job.payload as { kind: string; n: number };
      if (kind === "flaky" && job.attempt === 1) throw new Error("first try fails");
      if (kind === "hopeless") throw new Permanent("cannot ever work");
      return { n: n * 2, attempt: job.attempt };
    };
    await c.enqueueMany(q, [
      { id: "fine", payload: { kind: "fine", n: 1 }, attempts: 3 },
      { id: "flaky", payload: { kind: "flaky", n: 2 }, attempts: 3 },
      { id: "hopeless", payload: { kind: "hopeless", n: 3 }, attempts: 3 },
    ]);
    const [fine, flaky, hopeless] = await running(new Worker(c, q, handler, { ...quick, concurrency: 3 }), () =>
      Promise.all(["fine", "flaky", "hopeless"].map((id) => c.outcome(q, id, 20_000))),
    );
    assert.deepEqual(fine?.result, { n: 2, attempt: 1 });
    assert.deepEqual(flaky?.result, { n: 4, attempt: 2 });
    assert.equal((await c.job(q, "flaky")).error, "first try fails");
    assert.deepEqual([hopeless?.outcome, hopeless?.error], ["dead", "cannot ever work"]);
  });

  it("extends the lease while the handler runs", async () => {
    const counting = new CountingClient(serverUrl());
    const c = client();
    const q = queueName("extend");
    const { id } = await c.enqueue(q, 1);
    const handler = async () => {
      // Four extensions at a third of the lease each: the handler outlives its first lease.
      await waitUntil("four extensions", () => counting.extensions >= 4);
      return "done";
    };
    const outcome = await running(new Worker(counting, q, handler, { ...quick, leaseMs: 600 }), () =>
      c.outcome(q, id, 30_000),
    );
    assert.deepEqual([outcome.outcome, outcome.result], ["completed", "done"]);
    const record = await c.job(q, id);
    assert.deepEqual([record.claims, record.stalls], [1, 0]);
  });

  it("aborts the handler's signal when the job is cancelled", async () => {
    const c = client();
    const q = queueName("cancel");
    const { id } = await c.enqueue(q, 1);
    let started = false;
    const handler = async (job: Job) => {
      started = true;
      await new Promise((resolve, reject) => {
        job.signal.addEventListener("abort", resolve, { once: true });
        setTimeout(() => reject(new Error("the cancel never reached the handler")), 20_000);
      });
      throw new Cancelled("asked to stop");
    };
    const outcome = await running(new Worker(c, q, handler, { ...quick, leaseMs: 600 }), async () => {
      await waitUntil("the handler to start", () => started);
      await c.cancel(q, id);
      return c.outcome(q, id, 20_000);
    });
    assert.equal(outcome.outcome, "cancelled");
  });

  it("aborts the handler's signal when its time limit passes", async () => {
    const c = client();
    const q = queueName("timelimit");
    const { id } = await c.enqueue(q, 1, { attempts: 1, time_limit_ms: 900 });
    // The claim grants 900 ms, not 30 s: extended at 300 ms, until the
    // limit passes and the extension answers TIMELIMIT (at a third of 30 s
    // it would not be asked before 10 s).
    const handler = async (job: Job) => {
      await new Promise((resolve, reject) => {
        job.signal.addEventListener("abort", resolve, { once: true });
        setTimeout(() => reject(new Error("the time limit never reached the handler")), 5_000);
      });
      throw new Error("over its time limit");
    };
    const outcome = await running(new Worker(c, q, handler, { ...quick, leaseMs: 30_000 }), () =>
      c.outcome(q, id, 30_000),
    );
    assert.deepEqual([outcome.outcome, outcome.error], ["dead", "over its time limit"]);
  });

  it("sends a job back to wait on Delay, no attempt used", async () => {
    const c = client();
    const q = queueName("delay");
    const { id } = await c.enqueue(q, 1, { attempts: 1 });
    const handler = () => {
      throw new Delay(60_000);
    };
    await running(new Worker(c, q, handler, quick), () =>
      waitUntil("the job to wait", async () => (await jobState(c, q, id)) === "scheduled"),
    );
    const record = await c.job(q, id);
    assert.deepEqual([record.claims, record.failures], [1, 0]);
  });

  it("fails a job whose result is not JSON", async () => {
    const c = client();
    const q = queueName("notjson");
    const { id } = await c.enqueue(q, 1, { attempts: 1 });
    const outcome = await running(new Worker(c, q, () => BigInt(1), quick), () => c.outcome(q, id, 20_000));
    assert.equal(outcome.outcome, "dead");
    assert.match(outcome.error ?? "", /BigInt/);
  });

  it("finishes the job in hand on SIGTERM and claims no more", async () => {
    const c = client();
    const q = queueName("sigterm");
    const { id: slow } = await c.enqueue(q, { ms: 1500 });
    const program = fileURLToPath(new URL("./worker-program.js", import.meta.url));
    const child = spawn(process.execPath, [program, serverUrl(), q], { stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = once(child, "exit");
    try {
      await waitUntil("the job to run", async () => (await jobState(c, q, slow)) === "active");
      child.kill("SIGTERM");
      const { id: later } = await c.enqueue(q, { ms: 0 });
      const [code] = await exited;
      assert.equal(code, 0);
      assert.equal(stdout.trim(), "stopped");
      assert.equal((await c.outcome(q, slow, 5_000)).outcome, "completed");
      assert.equal(await jobState(c, q, later), "pending");
    } finally {
      child.kill("SIGKILL");
    }
  });
});
