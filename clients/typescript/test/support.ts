/** What the tests share: the server under test and bounded waits. */

import { randomBytes } from "node:crypto";
import { Client } from "../src/index.js";

/** The address of the `emq serve` under test (clients/run-tests.sh sets it). */
export function serverUrl(): string {
  const url = process.env.EMQ_HTTP_URL;
  if (!url) throw new Error("EMQ_HTTP_URL is not set: run the tests with clients/run-tests.sh");
  return url;
}

/**
 * The address of a server that requires tokens, and a token of it: an
 * operator's of every queue, or a producer's of the `ts-scoped-*` queues.
 */
export function guarded(role: "operator" | "producer" = "operator"): { url: string; token: string } {
  const name = role === "operator" ? "EMQ_HTTP_TOKEN" : "EMQ_HTTP_PRODUCER_TOKEN";
  const url = process.env.EMQ_HTTP_TOKEN_URL;
  const token = process.env[name];
  if (!url || !token) throw new Error(`EMQ_HTTP_TOKEN_URL and ${name} are not set: run clients/run-tests.sh`);
  return { url, token };
}

/** A client of the server under test. */
export function client(): Client {
  return new Client(serverUrl());
}

/** A queue no other test uses. */
export function queueName(test: string): string {
  return `ts-${test}-${randomBytes(4).toString("hex")}`;
}

/** Polls `check` until it answers something truthy; fails after `timeoutMs`. */
export async function waitUntil<T>(what: string, check: () => Promise<T> | T, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The job's state, as its record names it. */
export async function jobState(client: Client, queue: string, id: string): Promise<string> {
  return String((await client.job(queue, id)).state);
}

/** The error a promise rejects with; fails when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}
