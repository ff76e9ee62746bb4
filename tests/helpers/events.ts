/**
 * Reads a download's Server-Sent Events the way clients do: any `fetch` response, parsed with
 * eventsource-parser, each message's data as JSON.
 *
 * @module
 */
import assert from "node:assert/strict";
import { EventSourceParserStream } from "eventsource-parser/stream";
import * as v from "valibot";
import {
  DownloadDoneSchema,
  DownloadProgressSchema,
  ErrorSchema,
  MmprojProgressSchema,
} from "../../gen/store/validators.ts";
import type { TestNode } from "./node.ts";

/** Any message a download stream may carry, as the spec shapes them. */
const MessageSchema = v.union([
  DownloadProgressSchema,
  MmprojProgressSchema,
  DownloadDoneSchema,
  ErrorSchema,
]);
/** One message of a download stream. */
export type DownloadMessage = v.InferOutput<typeof MessageSchema>;

/** POST /models/{id}/download without an Accept header, as the reference's clients send it. */
export function startDownload(
  node: TestNode,
  id: string,
  body: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${node.storeUrl}/models/${id}/download`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify(body),
    signal,
  });
}

/** The messages of an event stream, each checked against the spec's message schemas. */
export async function* messages(response: Response): AsyncGenerator<DownloadMessage> {
  assert.equal(response.status, 200, `expected an event stream, got ${response.status}`);
  assert.equal(response.headers.get("content-type"), "text/event-stream");
  const events = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(
    new EventSourceParserStream(),
  );
  for await (const event of events) {
    const data = JSON.parse(event.data);
    const result = v.safeParse(MessageSchema, data);
    assert.ok(result.success, `message does not match the spec: ${event.data}`);
    yield result.output;
  }
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
