/**
 * Server-Sent Events responses: one `data: <json>` line and a blank line per message, a comment
 * now and then so that idle proxies keep the stream open, and a callback when the client goes.
 *
 * @module
 */
import { type ErrorPayload, errorPayload } from "./errors.ts";

/** How often an idle stream gets a keep-alive comment. */
export const KEEP_ALIVE_MS = 15_000;

/** An open event stream. */
export interface EventStream {
  /** The response to return to the client. */
  response: Response;
  /** Sends one message; false once the stream is closed. */
  send(data: unknown): boolean;
  /** Sends one message of text as it is (OpenAI's `[DONE]`); false once closed. */
  sendText(text: string): boolean;
  /** Ends the stream (after the messages already sent). */
  close(): void;
}

const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(": keep-alive\n\n");

/**
 * The answer of an event stream whose messages `body` writes: the headers proxies need, and a
 * keep-alive comment every KEEP_ALIVE_MS while the client reads (a client that stalls gets
 * none queued for it; one that left is noticed at the next write). Cancelling the answer
 * (the client goes) cancels `body`.
 */
export function eventStreamResponse(body: ReadableStream<Uint8Array>): Response {
  const reader = body.getReader();
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  const stop = () => clearInterval(keepAlive);
  const kept = new ReadableStream<Uint8Array>({
    start(controller) {
      keepAlive = setInterval(() => {
        if ((controller.desiredSize ?? 0) > 0) controller.enqueue(KEEP_ALIVE);
      }, KEEP_ALIVE_MS);
    },
    async pull(controller) {
      try {
        const read = await reader.read();
        if (!read.done) return controller.enqueue(read.value);
        stop();
        controller.close();
      } catch (error) {
        stop();
        throw error;
      }
    },
    cancel(reason) {
      stop();
      return reader.cancel(reason);
    },
  });
  return new Response(kept, {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      // nginx and similar proxies buffer responses unless told not to.
      "x-accel-buffering": "no",
    },
  });
}

/** Opens an event stream; `onDisconnect` runs when the client closes it first. */
export function eventStream(onDisconnect: () => void): EventStream {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  const write = (text: string) => {
    if (!open) return false;
    controller.enqueue(encoder.encode(text));
    return true;
  };
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
    },
    cancel() {
      if (!open) return;
      open = false;
      onDisconnect();
    },
  });
  return {
    response: eventStreamResponse(body),
    send: (data) => write(`data: ${JSON.stringify(data)}\n\n`),
    sendText: (text) => write(`data: ${text}\n\n`),
    close() {
      if (!open) return;
      open = false;
      controller.close();
    },
  };
}

/** How a stream's failure becomes its last message: the service's error shape. */
export type StreamErrorFormat = (payload: ErrorPayload) => unknown;

/** The standard error message of a stream: `{ error: { code, message } }`. */
export const streamErrorMessage: StreamErrorFormat = ({ body }) => ({ error: body });

/** How runStream ends a stream. */
export interface RunStreamOptions {
  /** The shape of the error message (streamErrorMessage by default). */
  onError?: StreamErrorFormat;
  /** What runs, for the log line of an unexpected failure. */
  what?: string;
  /** Text sent as it is after everything else, error or not (OpenAI's `[DONE]`). */
  last?: string;
}

/**
 * Runs `run`, the producer of an open stream, as Hono's `streamSSE(c, run, onError)` does: what
 * it throws becomes the stream's last message through errorPayload and `onError`, and the
 * stream closes when it is done either way.
 */
export function runStream(
  stream: EventStream,
  run: (stream: EventStream) => Promise<void>,
  options: RunStreamOptions = {},
): Promise<void> {
  const { onError = streamErrorMessage, what = "event stream", last } = options;
  return run(stream).catch((error) => {
    stream.send(onError(errorPayload(error, what)));
  }).finally(() => {
    if (last !== undefined) stream.sendText(last);
    stream.close();
  });
}

/** An event of a source that failed, sent as the error message of the stream. */
export interface Failed {
  /** What went wrong (a domain error, or anything else: logged, answered 500). */
  failed: unknown;
}

/**
 * An event stream answer that sends each event of `source` as one message and ends with it. An
 * event `{ failed }` and a source that errors become the standard error message (errorPayload);
 * `what` names the work for the log line of an unexpected failure. A client that goes cancels
 * `source`.
 */
export function sseResponse<T extends object>(
  source: ReadableStream<T | Failed>,
  what = "event stream",
): Response {
  const reader = source.getReader();
  const stream = eventStream(() => {
    reader.cancel().catch(() => {});
  });
  runStream(stream, async () => {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      const event = read.value;
      const message = "failed" in event
        ? streamErrorMessage(errorPayload(event.failed, what))
        : event;
      if (!stream.send(message)) return;
    }
  }, { what });
  return stream.response;
}
