/**
 * Serving one request in the sandbox: its body read (bounded), the microservice's model called,
 * the response sent back on the channel, and the request counted in flight until then
 * (request_activity.ts). Runs after the microservice's code loaded, so the runtime's own steps
 * use intrinsics (intrinsics.ts): what the microservice replaces changes its own code only.
 *
 * @module
 */
import { concatBytes } from "../../../tunnel/bytes.ts";
import type { StreamMux } from "../../../tunnel/stream_mux.ts";
import {
  ArrayPrototypePush,
  ErrorPrototypeToString,
  JSONStringify,
  performanceNow,
  randomUUID,
  SafeUint8Array,
  StringPrototypeSlice,
  TextEncoderPrototypeEncode,
} from "./intrinsics.ts";
import type { LogLevel } from "./sandbox_globals.ts";
import type { Incoming, Model, Outgoing } from "./programming_models.ts";
import type { RequestActivity } from "./request_activity.ts";

/** The node's request message (spec/mcm.yaml). */
export interface RequestMessage {
  t: "req";
  s: number;
  method: string;
  path: string;
  headers: [string, string][];
  body: boolean;
  inline?: string;
}

/** What serving needs of the worker. */
export interface Serving {
  mux: StreamMux;
  model: Model;
  maxBodyBytes: number;
  log: (level: LogLevel, line: string) => void;
  activity: RequestActivity;
}

class BodyTooLarge extends Error {}

const encoder = new TextEncoder();
const SafeReadableStream = ReadableStream;
const SafeError = Error;
const SafeString = String;

async function readBody(body: BodyInit | null, max: number): Promise<Uint8Array | null> {
  if (body === null) return null;
  if (body instanceof SafeUint8Array) {
    if (body.length > max) throw new BodyTooLarge();
    return body;
  }
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body as ReadableStream<Uint8Array>) {
    size += chunk.length;
    if (size > max) throw new BodyTooLarge();
    ArrayPrototypePush(parts, chunk);
  }
  return concatBytes(parts);
}

function errorOutgoing(status: number, message: string): Outgoing {
  return {
    status,
    headers: [["content-type", "application/json; charset=utf-8"]],
    body: TextEncoderPrototypeEncode(
      encoder,
      JSONStringify({ error: { code: status, message } }),
    ),
  };
}

/** An error as the log shows it: its stack (without the node's paths: stack_paths.ts). */
export function describe(error: unknown): string {
  if (!(error instanceof SafeError)) return SafeString(error);
  const stack = error.stack;
  return typeof stack === "string" ? stack : ErrorPrototypeToString(error);
}

/**
 * Serves one request. `ended` aborts when the node aborts it (its client went away, or its time
 * ran out): the calls to the node made for it are cancelled (request_scope.ts).
 */
export async function serve(
  message: RequestMessage,
  serving: Serving,
  ended: AbortSignal,
): Promise<void> {
  const { mux, model, maxBodyBytes, log, activity } = serving;
  const s = message.s;
  const body = mux.bodyOf(s, message);
  let out: Outgoing;
  // Counted in shared memory, not by message: a request costs the watchdog nothing.
  activity.begin(s, performanceNow());
  try {
    try {
      const incoming: Incoming = {
        method: message.method,
        path: message.path,
        headers: message.headers,
        body: await readBody(body, maxBodyBytes),
        signal: ended,
      };
      out = await model.handle(incoming);
    } catch (error) {
      if (error instanceof BodyTooLarge) {
        out = errorOutgoing(413, `the request body is over ${maxBodyBytes} bytes`);
      } else {
        // The error's text may hold the microservice's secrets: it goes to the log, which only
        // the deployment's credentials read, and the caller gets the reference to it.
        const reference = StringPrototypeSlice(randomUUID(), 0, 8);
        log("error", `[${reference}] ${message.method} ${message.path} failed: ${describe(error)}`);
        out = errorOutgoing(
          500,
          `the microservice failed (logged as ${reference}; GET /mcm/v1/containers/<id>/logs)`,
        );
      }
    }
    // A whole body is the end of the microservice's work; a stream ends when it is sent.
    const streamed = out.body instanceof SafeReadableStream;
    if (!streamed) activity.end(s);
    try {
      await mux.send(s, {
        t: "res",
        s,
        status: out.status,
        headers: out.headers,
        body: out.body !== null,
      }, out.body);
    } catch {
      // The node aborted the stream (the client left, or the time limit passed).
    }
    if (mux.receiving(s)) mux.cancel(s, "the response is complete");
  } finally {
    activity.end(s);
  }
}
