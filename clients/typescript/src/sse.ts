/** Server-sent events (`GET /queues/{q}/events`), parsed from a response body. */

import type { QueueEvent } from "./types.js";

/** Server-sent events from a body: `id:`, `event:` and `data:` (JSON) fields, each event ended by a blank line. */
export async function* serverSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<QueueEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let id = "";
  let name = "message";
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end).replace(/\r$/, "");
        buffer = buffer.slice(end + 1);
        if (line === "") {
          if (data.length > 0) yield { id, name, data: JSON.parse(data.join("\n")) as Record<string, unknown> };
          name = "message";
          data = [];
          continue;
        }
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") id = text;
        else if (field === "event") name = text;
        else if (field === "data") data.push(text);
      }
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
