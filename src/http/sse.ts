/**
 * Server-Sent Events responses: one `data: <json>` line and a blank line per message, a comment
 * now and then so that idle proxies keep the stream open, and a callback when the client goes.
 *
 * @module
 */

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

/** Opens an event stream; `onDisconnect` runs when the client closes it first. */
export function eventStream(onDisconnect: () => void): EventStream {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  const keepAlive = setInterval(() => write(": keep-alive\n\n"), KEEP_ALIVE_MS);
  const finish = () => {
    open = false;
    clearInterval(keepAlive);
  };
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
      finish();
      onDisconnect();
    },
  });
  return {
    response: new Response(body, {
      headers: {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        // nginx and similar proxies buffer responses unless told not to.
        "x-accel-buffering": "no",
      },
    }),
    send: (data) => write(`data: ${JSON.stringify(data)}\n\n`),
    sendText: (text) => write(`data: ${text}\n\n`),
    close() {
      if (!open) return;
      finish();
      controller.close();
    },
  };
}

/**
 * An event stream answer that sends each event of `source` as one message (`encode` turns an
 * event into what is sent), and ends with it. A client that goes cancels `source`.
 */
export function sseResponse<T>(
  source: ReadableStream<T>,
  encode: (event: T) => unknown = (event) => event,
): Response {
  const reader = source.getReader();
  const stream = eventStream(() => {
    reader.cancel().catch(() => {});
  });
  (async () => {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      if (!stream.send(encode(read.value))) return;
    }
    stream.close();
  })().catch((error) => {
    console.error("event stream source failed:", error);
    stream.close();
  });
  return stream.response;
}
