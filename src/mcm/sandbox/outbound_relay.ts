/**
 * Outbound HTTP for the sandboxed worker, which has no network permission of its own: its
 * `fetch` and `context.http.request` ask the container process's main thread, whose permission
 * is the node's `mcm.outboundHosts` (or any host). Response bodies come over in chunks as the
 * worker reads them, so a large download is never held whole.
 *
 * @module
 */

/** What the worker sends on the outbound port. */
export type OutboundCall =
  | {
    t: "fetch";
    id: number;
    url: string;
    method: string;
    headers: [string, string][];
    body: Uint8Array | null;
    timeoutMs: number;
  }
  | { t: "pull"; id: number }
  | { t: "cancel"; id: number };

/** What the main thread answers. */
export type OutboundAnswer =
  | {
    t: "head";
    id: number;
    status: number;
    statusText: string;
    headers: [string, string][];
    url: string;
  }
  | { t: "chunk"; id: number; bytes: Uint8Array }
  | { t: "done"; id: number }
  | { t: "error"; id: number; message: string };

/** Serves the worker's outbound calls on `port`. */
export function serveOutbound(port: MessagePort): void {
  const readers = new Map<number, ReadableStreamDefaultReader<Uint8Array>>();
  const answer = (message: OutboundAnswer, transfer: Transferable[] = []) =>
    port.postMessage(message, transfer);

  port.onmessage = async (event: MessageEvent<OutboundCall>) => {
    const call = event.data;
    if (call.t === "fetch") {
      try {
        const url = new URL(call.url);
        if (url.protocol !== "http:" && url.protocol !== "https:") {
          throw new TypeError(`only http: and https: URLs can be fetched, not ${url.protocol}`);
        }
        const response = await fetch(url, {
          method: call.method,
          headers: call.headers,
          body: call.body as Uint8Array<ArrayBuffer> | null,
          signal: AbortSignal.timeout(call.timeoutMs),
        });
        if (response.body) readers.set(call.id, response.body.getReader());
        answer({
          t: "head",
          id: call.id,
          status: response.status,
          statusText: response.statusText,
          headers: [...response.headers],
          url: response.url,
        });
        if (!response.body) answer({ t: "done", id: call.id });
      } catch (error) {
        answer({ t: "error", id: call.id, message: describe(error) });
      }
    } else if (call.t === "pull") {
      const reader = readers.get(call.id);
      if (!reader) return answer({ t: "done", id: call.id });
      try {
        const { value, done } = await reader.read();
        if (done) {
          readers.delete(call.id);
          answer({ t: "done", id: call.id });
        } else {
          answer({ t: "chunk", id: call.id, bytes: value }, [value.buffer as ArrayBuffer]);
        }
      } catch (error) {
        readers.delete(call.id);
        answer({ t: "error", id: call.id, message: describe(error) });
      }
    } else {
      readers.get(call.id)?.cancel().catch(() => {});
      readers.delete(call.id);
    }
  };
}

function describe(error: unknown): string {
  const e = error as Error;
  if (e?.name === "TimeoutError") return "the request timed out";
  if (e?.name === "NotCapable" || /Requires net access/.test(e?.message ?? "")) {
    return `${e.message.split(",")[0]} (the node's mcm.outboundHosts does not list it)`;
  }
  return e?.message ?? String(error);
}
