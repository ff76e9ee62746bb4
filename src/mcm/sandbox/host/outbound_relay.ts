/**
 * Outbound HTTP and file reads for the sandboxed worker, which has no permission of its own:
 * its `fetch`, `context.http.request` and `res.writeMimeFile` ask the container process's main
 * thread. Where requests may go is decided twice: here, with a clear message, and by the
 * process's own Deno permissions (container_channel.ts), which also hold for names that
 * resolve to a refused address. Bodies come over in chunks as the worker reads them, or go
 * straight to a storage file (`outputFile`), so a large download is never held whole.
 *
 * What a container's requests hold on this thread is bounded and its own (issue 34): at most
 * `limits.requests` requests (and storage file reads) are open at once, and their request
 * bodies together at most `limits.bodyBytes`; over either, the call fails at once (the worker's
 * `fetch` throws a TypeError naming the cap), nothing waits in a queue. Each request has a
 * deadline (its `timeoutMs`, the execution time; a download to a file: its idle time), and
 * `close` (the container ended) aborts every one of them at once. The bytes held count against
 * the container's memory (`heldBytes`, tenant_host.ts).
 *
 * @module
 */
import type { NetworkPolicy } from "../network_policy.ts";
import { describe, followed, idleWatch, watched } from "./outbound_fetch.ts";
import type { StorageFiles } from "./storage_files.ts";
import type { OutboundAnswer, OutboundCall } from "../host_protocol.ts";

/** A fetch call. */
export type FetchCall = Extract<OutboundCall, { t: "fetch" }>;

/** How a response's body is handed over: read by the worker, or saved to a file first. */
type Body = ReadableStreamDefaultReader<Uint8Array> | Promise<number>;

/** How much one container's outbound requests may hold at once. */
export interface OutboundLimits {
  /** Requests and storage file reads open at once (MCM.MAX_OUTBOUND_REQUESTS). */
  requests: number;
  /** Bytes of request bodies held at once. */
  bodyBytes: number;
  /**
   * The longest deadline a request may ask for (its total time, or a download's time without
   * data, or its time to connect), milliseconds: what the worker asks is its own to choose below
   * this, never above.
   */
  deadlineMs: number;
}

/** A container's outbound relay, as its host sees it. */
export interface OutboundRelay {
  /** Requests (and file reads) open now. */
  inFlight(): number;
  /** Bytes this thread holds for them now (request bodies not yet sent). */
  heldBytes(): number;
  /** Aborts every open request and refuses new ones (the container ended). */
  close(): void;
}

/** One open request: how to abort it, and what it holds. */
interface Open {
  abort(reason: unknown): void;
  bytes: number;
}

/** Serves the worker's outbound calls on `port`, within `limits`. */
export function serveOutbound(
  port: MessagePort,
  files: StorageFiles,
  policy: NetworkPolicy,
  limits: OutboundLimits,
): OutboundRelay {
  const bodies = new Map<number, Body>();
  const open = new Map<number, Open>();
  let held = 0;
  let closed = false;
  const answer = (message: OutboundAnswer, transfer: Transferable[] = []) => {
    if (!closed) port.postMessage(message, transfer);
  };
  /** Frees request `id`'s place and bytes, and drops its body if it still has one. */
  /** Bodies of requests that ended (their deadline) before the worker read them to the end. */
  const orphans = new Set<number>();
  const drop = (id: number) => {
    const body = bodies.get(id);
    bodies.delete(id);
    orphans.delete(id);
    if (body && !(body instanceof Promise)) body.cancel().catch(() => {});
  };
  /**
   * Frees request `id`'s place and bytes, and drops its body; or keeps the body (`keepBody`:
   * its deadline passed) so that the worker's next read gets the timeout, not a clean end.
   */
  const release = (id: number, keepBody = false) => {
    const entry = open.get(id);
    if (entry) {
      open.delete(id);
      held -= entry.bytes;
    }
    if (!keepBody) return drop(id);
    if (!bodies.has(id)) return;
    orphans.add(id);
    // A worker that never reads them does not pile them up.
    if (orphans.size > limits.requests * 4) drop(orphans.values().next().value!);
  };
  /** Takes a place for request `id`, or says why there is none. */
  const admit = (id: number, bytes: number, abort: Open["abort"]): string | undefined => {
    if (closed) return "the container is stopping";
    // The worker names its requests: one id open twice would hold two places as one.
    if (open.has(id) || bodies.has(id)) return `request ${id} is open already`;
    if (open.size >= limits.requests) {
      return `over the limit of ${limits.requests} outbound requests at once ` +
        `(MCM.MAX_OUTBOUND_REQUESTS): wait for one to end`;
    }
    if (held + bytes > limits.bodyBytes) {
      return `over the limit of ${limits.bodyBytes} bytes of request bodies in flight at once ` +
        `(a quarter of MCM.MEMORY_MB): send smaller bodies or fewer at once`;
    }
    open.set(id, { abort, bytes });
    held += bytes;
    return undefined;
  };

  const head = (id: number, response: Response) =>
    answer({
      t: "head",
      id,
      status: response.status,
      statusText: response.statusText,
      headers: [...response.headers],
      url: response.url,
    });

  const fetchFor = async (asked: FetchCall) => {
    const bound = (ms: number | undefined) =>
      ms === undefined ? undefined : Math.min(Math.max(0, ms), limits.deadlineMs);
    const call = {
      ...asked,
      timeoutMs: bound(asked.timeoutMs)!,
      idleMs: bound(asked.idleMs),
      connectMs: bound(asked.connectMs),
    };
    // A name the storage refuses is refused before anything is sent.
    if (call.saveTo !== undefined) files.path(call.saveTo);
    const own = new AbortController();
    const refused = admit(call.id, call.body?.byteLength ?? 0, (reason) => own.abort(reason));
    if (refused) return answer({ t: "error", id: call.id, message: refused });
    // Downloads to a file are bounded by their idle time (socketTimeout, else the execution
    // time), not their total time: a large model takes minutes.
    const idle = idleWatch(call.idleMs ?? (call.saveTo !== undefined ? call.timeoutMs : undefined));
    const signals = [idle.signal, own.signal];
    if (call.saveTo === undefined) signals.push(AbortSignal.timeout(call.timeoutMs));
    const connect = new AbortController();
    const connectTimer = call.connectMs === undefined ? undefined : setTimeout(
      () =>
        connect.abort(new DOMException(`no response within ${call.connectMs} ms`, "TimeoutError")),
      call.connectMs,
    );
    signals.push(connect.signal);
    const signal = AbortSignal.any(signals);
    // At its deadline (or `close`) its place is free at once, read or not.
    signal.addEventListener("abort", () => {
      idle.stop();
      release(call.id, true);
    }, { once: true });
    idle.touch();
    let response: Response;
    try {
      response = await followed(call, policy, signal).finally(() => clearTimeout(connectTimer));
    } catch (error) {
      idle.stop();
      release(call.id);
      throw error;
    }
    // Sent: the body is the fetch's, no longer held here.
    const entry = open.get(call.id);
    if (entry) {
      held -= entry.bytes;
      entry.bytes = 0;
    }
    // Connected: from now on only the idle time and the total time count.
    head(call.id, response);
    if (!response.body || !open.has(call.id)) {
      idle.stop();
      release(call.id);
      await response.body?.cancel().catch(() => {});
      return answer({ t: "done", id: call.id });
    }
    if (call.saveTo !== undefined && response.status < 400) {
      const saving = files.write(call.saveTo, response.body, idle.touch).finally(idle.stop);
      // Its failure is answered when the worker pulls; unheard it must not end the process.
      saving.catch(() => {});
      bodies.set(call.id, saving);
    } else {
      bodies.set(call.id, watched(response.body, idle).getReader());
    }
  };

  const openFile = async (id: number, name: string) => {
    // Aborted, its reader (once it has one) is cancelled by `release`.
    const refused = admit(id, 0, () => {});
    if (refused) return answer({ t: "error", id, message: refused });
    let file;
    try {
      file = await files.open(name);
    } catch (error) {
      release(id);
      throw error;
    }
    if (!open.has(id)) return void file?.body.cancel().catch(() => {});
    if (!file) {
      release(id);
      answer({
        t: "head",
        id,
        status: 404,
        statusText: "Not Found",
        headers: [],
        url: `file:${name}`,
      });
      return answer({ t: "done", id });
    }
    answer({
      t: "head",
      id,
      status: 200,
      statusText: "OK",
      headers: [["content-length", String(file.size)]],
      url: `file:${name}`,
    });
    bodies.set(id, file.body.getReader());
  };

  const pull = async (id: number) => {
    const body = bodies.get(id);
    if (!body) return answer({ t: "done", id });
    try {
      if (body instanceof Promise) {
        await body;
        release(id);
        return answer({ t: "done", id });
      }
      const { value, done } = await body.read();
      if (done) {
        release(id);
        answer({ t: "done", id });
      } else {
        answer({ t: "chunk", id, bytes: value }, [value.buffer as ArrayBuffer]);
      }
    } catch (error) {
      release(id);
      answer({ t: "error", id, message: describe(error) });
    }
  };

  port.onmessage = async (event: MessageEvent<OutboundCall>) => {
    const call = event.data;
    if (call.t === "pull") return await pull(call.id);
    if (call.t === "cancel") {
      // Aborted too, not only forgotten: a cancelled request holds no socket on.
      open.get(call.id)?.abort(new DOMException("cancelled by the microservice", "AbortError"));
      return release(call.id);
    }
    try {
      if (call.t === "fetch") await fetchFor(call);
      else await openFile(call.id, call.name);
    } catch (error) {
      answer({ t: "error", id: call.id, message: describe(error) });
    }
  };

  return {
    inFlight: () => open.size,
    heldBytes: () => held,
    close: () => {
      if (closed) return;
      closed = true;
      port.onmessage = null;
      const aborted = new DOMException("the container ended", "AbortError");
      for (const [id, entry] of [...open]) {
        entry.abort(aborted);
        release(id);
      }
      for (const id of [...bodies.keys()]) drop(id);
      port.close();
    },
  };
}
