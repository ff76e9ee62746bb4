/**
 * The worker's side of the services its process's main thread (the host) provides: synchronous storage
 * (the reference's `context.storage` is synchronous) and outbound HTTP (`fetch`).
 *
 * The host's side: host/storage_host.ts and host/outbound_relay.ts; what they say to each
 * other: ../host_protocol.ts.
 *
 * @module
 */
import {
  ANSWER_HEADER_BYTES,
  type OutboundAnswer,
  type OutboundCall,
  type StorageAnswer,
  type StorageCall,
} from "../host_protocol.ts";

/** What the reference's `context.storage` offers. */
export interface Storage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
  eachItem(callback: (key: string, value: string) => void): void;
  setItemWithTag(key: string, value: string, tag: string): void;
  eachItemByTag(tag: string, callback: (key: string, value: string) => void): void;
  removeItemsByTag(tag: string): number;
  /** Saves a file (its bytes in base64) in the container's storage, replacing one of that name. */
  saveFile(name: string, base64: string): void;
  /** Deletes a file of the container's storage; nothing when there is none. */
  deleteFile(name: string): void;
}

/** What `context.http.request` adds to a fetch (all optional). */
export interface FetchExtras {
  /** Save the body (of a status below 400) to this file of the storage instead of passing it. */
  saveTo?: string;
  /** Fail when the response's head has not come within this many milliseconds. */
  connectMs?: number;
  /** Fail when no bytes come for this many milliseconds. */
  idleMs?: number;
}

/** The relayed fetch: `fetch`'s signature plus the extras. */
export type RelayedFetch = (
  input: RequestInfo | URL,
  init?: RequestInit,
  extras?: FetchExtras,
) => Promise<Response>;

const PAGE = 256;
const STORAGE_WAIT_MS = 60_000;

/** `context.storage`, calling the main thread and blocking until it answers. */
export function syncStorage(port: MessagePort, buffer: SharedArrayBuffer): Storage {
  const words = new Int32Array(buffer, 0, 2);
  const decoder = new TextDecoder();
  const call = (request: StorageCall): unknown => {
    Atomics.store(words, 0, 0);
    port.postMessage(request);
    if (Atomics.wait(words, 0, 0, STORAGE_WAIT_MS) === "timed-out") {
      throw new Error("storage did not answer within 60 s");
    }
    // A copy: TextDecoder does not read shared memory.
    const bytes = new Uint8Array(buffer, ANSWER_HEADER_BYTES, words[1]).slice();
    const answer = JSON.parse(decoder.decode(bytes)) as StorageAnswer;
    if ("error" in answer) throw new Error(answer.error);
    return answer.value;
  };
  const key = (value: unknown): string => {
    const text = String(value);
    if (text === "") throw new TypeError("storage keys must not be empty");
    return text;
  };
  const each = (tag: string | null, callback: (key: string, value: string) => void) => {
    let after: string | null = null;
    while (true) {
      const rows = call({ op: "page", after, tag, limit: PAGE }) as [string, string][];
      for (const [k, v] of rows) callback(k, v);
      if (rows.length < PAGE) return;
      after = rows[rows.length - 1][0];
    }
  };
  return {
    getItem: (k) => call({ op: "get", key: key(k) }) as string | null,
    setItem: (k, v) => void call({ op: "set", key: key(k), value: String(v) }),
    removeItem: (k) => void call({ op: "remove", key: key(k) }),
    eachItem: (callback) => each(null, callback),
    setItemWithTag: (k, v, tag) =>
      void call({ op: "set", key: key(k), value: String(v), tag: String(tag) }),
    eachItemByTag: (tag, callback) => each(String(tag), callback),
    removeItemsByTag: (tag) => call({ op: "removeTag", tag: String(tag) }) as number,
    saveFile: (name, base64) =>
      void call({ op: "saveFile", name: String(name), base64: String(base64) }),
    deleteFile: (name) => void call({ op: "deleteFile", name: String(name) }),
  };
}

/** The worker's side of the outbound port: fetches and reads of storage files. */
export function outboundClient(port: MessagePort, timeoutMs: number) {
  let nextId = 1;
  const waiting = new Map<number, (answer: OutboundAnswer) => void>();
  port.onmessage = (event: MessageEvent<OutboundAnswer>) => {
    waiting.get(event.data.id)?.(event.data);
  };
  const ask = (call: OutboundCall) =>
    new Promise<OutboundAnswer>((resolve) => {
      waiting.set(call.id, (answer) => {
        waiting.delete(call.id);
        resolve(answer);
      });
      port.postMessage(call);
    });

  /** The answer to `call` as a Response whose body is pulled chunk by chunk. */
  const respond = async (call: OutboundCall & { id: number }, what: string, nullBody: boolean) => {
    const head = await ask(call);
    if (head.t === "error") throw new TypeError(`${what} failed: ${head.message}`);
    if (head.t !== "head") throw new TypeError(`${what} failed`);
    const id = call.id;
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const answer = await ask({ t: "pull", id });
        if (answer.t === "chunk") controller.enqueue(answer.bytes);
        else if (answer.t === "done") controller.close();
        else if (answer.t === "error") controller.error(new TypeError(answer.message));
      },
      cancel() {
        port.postMessage({ t: "cancel", id } satisfies OutboundCall);
      },
    }, { highWaterMark: 0 });
    const empty = nullBody || head.status === 204 || head.status === 304;
    if (empty) stream.cancel().catch(() => {});
    const response = new Response(empty ? null : stream, {
      status: head.status,
      statusText: head.statusText,
      headers: head.headers,
    });
    Object.defineProperty(response, "url", { value: head.url });
    return response;
  };

  /** A `fetch` that asks the main thread; requests time out after `timeoutMs`. */
  const fetcher: RelayedFetch = async (input, init, extras = {}) => {
    const request = new Request(input, init);
    const body = request.body ? new Uint8Array(await request.arrayBuffer()) : null;
    return await respond(
      {
        t: "fetch",
        id: nextId++,
        url: request.url,
        method: request.method,
        headers: [...request.headers],
        body,
        timeoutMs,
        ...extras,
      },
      `fetch ${request.url}`,
      request.method === "HEAD",
    );
  };

  /** A file of the container's storage as a Response (404 when there is none). */
  const readFile = (name: string) =>
    respond({ t: "file", id: nextId++, name }, `reading file '${name}'`, false);

  return { fetch: fetcher, readFile };
}
