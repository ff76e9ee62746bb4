/**
 * The microservice's calls to its own node, over the container's channel (spec/mcm.yaml,
 * ContainerCall): the node listing that the reference's microservices fetch from
 * `http://localhost:<httpPort>/mds/v1/nodes`, its decryption, the BEP, and `context.ml`'s
 * inference. A request to the node's own port never reaches the network: it is answered here,
 * on the channel the node gave this container, so the node knows which container asks without
 * any credential on the wire. A call may stream (ContainerEvent before its answer) and be
 * cancelled (ContainerCancel).
 *
 * @module
 */
import { HTTP_STATUS_OF } from "../../../http/error_statuses.ts";
import type { CallFailure } from "../channel_protocol.ts";
import type { RelayedFetch } from "./context_services.ts";
import { meshAddress, type MeshCall, meshFetch } from "./mesh_fetch.ts";

/** A call of spec/mcm.yaml's ContainerCall, without its `t` and `id`. */
export type NodeCall =
  | { op: "nodes"; clusters?: string; ping?: boolean }
  | { op: "decrypt"; type: string; data: string; token: string }
  | { op: "bep" }
  | { op: "chat" | "embed"; request: Record<string, unknown> }
  | MeshCall;

/** The node's answer: a value, or an error of a kind; or an event before it. */
export type NodeAnswer =
  | { t: "answer"; id: number; value: unknown }
  | { t: "answer"; id: number; error: CallFailure }
  | { t: "event"; id: number; value: unknown };

/** How a call is made. */
export interface CallOptions {
  /**
   * Hears the events the node sends before its answer (a call that streams). `took` reports
   * that the microservice read bytes of a streamed body (ContainerTook: the node's credit).
   */
  onEvent?: (value: unknown, took: (bytes: number) => void) => void;
  /** Cancels the call: the node stops its work, and the call fails (`cancelled`: status 499). */
  signal?: AbortSignal;
}

interface Pending {
  waiting: PromiseWithResolvers<unknown>;
  onEvent?: CallOptions["onEvent"];
  took: (bytes: number) => void;
}

/**
 * A failed node call, shaped as the reference's callbacks' errors: its HTTP-like status is the
 * node API's for its kind (the one table, src/http/error_statuses.ts), 500 for the node's own
 * failure. The kind crosses the channel; the status is made here, where the microservice gets
 * it as an HTTP answer (nodeAwareFetch) or a callback's `status`.
 */
export class NodeCallError extends Error {
  /** The status the microservice sees. */
  readonly status: number;

  constructor(message: string, readonly kind: CallFailure["kind"]) {
    super(message);
    this.status = (kind !== "internal" && HTTP_STATUS_OF[kind]) || 500;
  }
}

/** At most this many calls wait at once (the node also bounds them). */
const MAX_PENDING = 64;

function cancelled(): NodeCallError {
  return new NodeCallError(
    "the request that made this call ended, so the call was cancelled",
    "cancelled",
  );
}

/** The worker's side: sends calls, matches answers. */
export class NodeCalls {
  readonly #send: (message: Record<string, unknown>) => void;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;

  constructor(send: (message: Record<string, unknown>) => void) {
    this.#send = send;
  }

  /** Asks the node; rejects with NodeCallError when it refuses. */
  call(call: NodeCall, options: CallOptions = {}): Promise<unknown> {
    const { signal, onEvent } = options;
    if (this.#pending.size >= MAX_PENDING) {
      return Promise.reject(new NodeCallError("too many calls to the node at once", "too_many"));
    }
    if (signal?.aborted) return Promise.reject(cancelled());
    const id = this.#nextId++;
    const waiting = Promise.withResolvers<unknown>();
    // Only while the call runs: the node forgot it once it answered.
    const took = (bytes: number) => {
      if (bytes > 0 && this.#pending.has(id)) this.#send({ t: "took", id, bytes });
    };
    this.#pending.set(id, { waiting, onEvent, took });
    const cancel = () => {
      if (!this.#pending.delete(id)) return;
      this.#send({ t: "cancel", id });
      waiting.reject(cancelled());
    };
    signal?.addEventListener("abort", cancel, { once: true });
    this.#send({ t: "call", id, ...call });
    return waiting.promise.finally(() => signal?.removeEventListener("abort", cancel));
  }

  /** Takes an answer, or an event, from the channel. */
  onAnswer(answer: NodeAnswer): void {
    const pending = this.#pending.get(answer.id);
    if (!pending) return;
    if (answer.t === "event") return pending.onEvent?.(answer.value, pending.took);
    this.#pending.delete(answer.id);
    const { waiting } = pending;
    if ("error" in answer) {
      waiting.reject(new NodeCallError(answer.error.message, answer.error.kind));
    } else {
      waiting.resolve(answer.value);
    }
  }
}

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "[::1]", "0.0.0.0"]);

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

/**
 * A `fetch` that answers requests to the node's own port (`localhost:<httpPort>`) through
 * `calls`, sends `<nodeId>@mmesh/<path>` through the node to that node of the mesh (within
 * `timeoutMs`: mesh_fetch.ts), and passes every other one to `fetcher`. Of the node's API only
 * GET /mds/v1/nodes is there; any other path is 403.
 */
export function nodeAwareFetch(
  fetcher: RelayedFetch,
  calls: NodeCalls,
  httpPort: string,
  timeoutMs = 30_000,
): RelayedFetch {
  return async (input, init, extras) => {
    // Before a Request is made of it: `http://<id>@mmesh/` would be a URL with credentials.
    const mesh = typeof input === "string" || input instanceof URL
      ? meshAddress(String(input))
      : undefined;
    if (mesh) return await meshFetch(calls, mesh, init, extras, timeoutMs, fetcher);
    const request = new Request(input, init);
    const url = new URL(request.url);
    const port = url.port || (url.protocol === "https:" ? "443" : "80");
    if (!LOOPBACK_NAMES.has(url.hostname) || port !== httpPort) {
      return await fetcher(request, undefined, extras);
    }
    if (request.method !== "GET" || url.pathname !== "/mds/v1/nodes") {
      return json(403, {
        error: {
          code: 403,
          message:
            `microservices reach only GET /mds/v1/nodes of their node, not ${request.method} ${url.pathname}`,
        },
      });
    }
    const ping = url.searchParams.get("ping") === "true";
    const clusters = url.searchParams.get("clusters") ?? undefined;
    try {
      return json(200, { data: await calls.call({ op: "nodes", clusters, ping }) });
    } catch (error) {
      const { message, status } = error as NodeCallError;
      return json(status ?? 500, { error: { code: status ?? 500, message } });
    }
  };
}
