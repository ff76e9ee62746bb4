/**
 * Reads a download's Server-Sent Events the way clients do, with the SDK's event iterator
 * (eventsource-parser, each message checked against the spec).
 *
 * @module
 */
import assert from "node:assert/strict";
import { downloadEvents, type DownloadMessage } from "../src/sdk/download_events.ts";
import { wire } from "./contract.ts";
import type { TestNode } from "./node.ts";

export type { DownloadMessage };

/** POST /models/{id}/download without an Accept header, as the reference's clients send it. */
export function startDownload(
  node: TestNode,
  id: string,
  body: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<Response> {
  return wire((wired) =>
    node.store.POST("/models/{id}/download", {
      params: { path: { id } },
      body: body as never,
      signal,
      ...wired,
    })
  );
}

/** The messages of an event stream, each checked against the spec's message schemas. */
export async function* messages(response: Response): AsyncGenerator<DownloadMessage> {
  assert.equal(response.status, 200, `expected an event stream, got ${response.status}`);
  assert.equal(response.headers.get("content-type"), "text/event-stream");
  yield* downloadEvents(response);
}

/** Every message until the stream ends. */
export async function allMessages(response: Response): Promise<DownloadMessage[]> {
  const all: DownloadMessage[] = [];
  for await (const message of messages(response)) all.push(message);
  return all;
}

/** The last message, asserted to be `done`; returns its model. */
export function doneModel(all: DownloadMessage[]) {
  const last = all.at(-1);
  assert.ok(last && "done" in last, `the stream did not end with done: ${JSON.stringify(all)}`);
  return last.model;
}

/** The last message, asserted to be an error with this code; returns its message. */
export function streamError(all: DownloadMessage[], code: number, message?: RegExp): string {
  const last = all.at(-1);
  assert.ok(
    last && "error" in last,
    `the stream did not end with an error: ${JSON.stringify(all)}`,
  );
  assert.equal(last.error.code, code, last.error.message);
  if (message) assert.match(last.error.message, message);
  return last.error.message;
}
