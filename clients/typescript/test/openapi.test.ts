/**
 * Every request the client sends names a path and method of the server's
 * OpenAPI document, so drift between the two fails here.
 */

import assert from "node:assert/strict";
import { it } from "node:test";
import { Client } from "../src/index.js";
import { serverUrl } from "./support.js";

const Q = "QUEUE";
const J = "JOB";

/** Calls each of the client's endpoints once. */
async function everyCall(c: Client): Promise<void> {
  await c.enqueue(Q, 1);
  await c.enqueueAndWait(Q, 1, 1_000);
  await c.enqueueMany(Q, [{ payload: 1 }]);
  await c.outcome(Q, J, 1_000);
  await c.queues();
  await c.queue(Q);
  await c.jobs(Q);
  await c.job(Q, J);
  await c.log(Q, J);
  for await (const event of c.events(Q)) if (event) break;
  await c.cancel(Q, J);
  await c.remove(Q, J);
  await c.pause(Q);
  await c.resume(Q);
  await c.drain(Q);
  await c.claim(Q);
  await c.complete(Q, J, 1);
  await c.fail(Q, J, 1, "error");
  await c.extend(Q, J, 1, 1_000);
  await c.delay(Q, J, 1, 1_000);
  await c.progress(Q, J, 1, 1);
  await c.appendLog(Q, J, 1, "line");
}

/** Records each request's method and path, answering a body the client's parsing accepts. */
async function recordCalls(): Promise<Array<[string, string]>> {
  const calls: Array<[string, string]> = [];
  const real = globalThis.fetch;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    calls.push([init?.method ?? "GET", new URL(String(input)).pathname]);
    if (new URL(String(input)).pathname.endsWith("/events")) {
      return new Response('id: 1-0/0\nevent: enqueued\ndata: {"job": "JOB"}\n\n', { status: 200 });
    }
    const body = { id: J, outcome: "completed", jobs: [], queues: [], lines: [], cancel_requested: false };
    return new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
  };
  try {
    await everyCall(new Client("http://client.test"));
  } finally {
    globalThis.fetch = real;
  }
  return calls;
}

it("calls only paths and methods of the OpenAPI document", async () => {
  const response = await fetch(new URL("api/v1/openapi.json", serverUrl().replace(/\/?$/, "/")));
  assert.equal(response.status, 200);
  const document = (await response.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
  assert.match(document.openapi, /^3\.1/);
  const routes = Object.entries(document.paths).flatMap(([path, item]) => {
    const escaped = path.replace(/[.*+?^$()|[\]\\]/g, "\\$&");
    const pattern = new RegExp(`^(/api/v1)?${escaped.replace(/\{[^}]*\}/g, "[^/]+")}$`);
    return Object.keys(item).map((method) => [method.toUpperCase(), pattern] as const);
  });

  const calls = await recordCalls();
  // One request per endpoint method: a method added to the client and
  // not to everyCall fails here.
  const helpers = new Set(["constructor", "request", "control", "iterJobs"]);
  const endpoints = Object.getOwnPropertyNames(Client.prototype).filter((name) => !helpers.has(name));
  assert.equal(calls.length, endpoints.length, endpoints.join(", "));

  const missing = calls
    .filter(([method, path]) => !routes.some(([m, p]) => m === method && p.test(path)))
    .map(([method, path]) => `${method} ${path}`);
  assert.deepEqual(missing, [], "calls of the TypeScript client the OpenAPI document lacks");
});
