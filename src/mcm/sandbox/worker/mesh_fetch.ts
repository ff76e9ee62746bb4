/**
 * `fetch` and `context.http.request` of `<nodeId>@mmesh/<path>` (also written with `http://`
 * in front, as the reference's agents write their prompt URLs): the microservice need not
 * resolve the node itself. The node does, in its linkLocal view, and sends the request to that
 * node's local address (ContainerCall `mesh`, src/mcm/services/mesh_calls.ts); its answer comes
 * back over the channel as it comes, so a streamed answer streams. An unknown node is a 404
 * whose body is the reference's error shape (`{message, statusCode}`).
 *
 * @module
 */
import type { FetchExtras, RelayedFetch } from "./context_services.ts";
import type { CallFailure } from "../channel_protocol.ts";
import { CallBody, type Took } from "./call_body.ts";

/** ContainerCall `mesh` (node_calls.ts's NodeCall). */
export interface MeshCall {
  op: "mesh";
  node: string;
  path: string;
  method: string;
  headers: [string, string][];
  /** The body, in base64. */
  data?: string;
}

/** What this module needs of node_calls.ts's NodeCalls (imported there, not here). */
interface MeshCalls {
  call(
    call: MeshCall,
    options: { onEvent?: (value: unknown, took: Took) => void; signal?: AbortSignal },
  ): Promise<unknown>;
}

/** A refused call as node_calls.ts's NodeCallError has it. */
interface CallError {
  message: string;
  kind: CallFailure["kind"];
  status: number;
}

/** A mesh address: the node's id and the path (with its query) on that node. */
export interface MeshAddress {
  node: string;
  path: string;
}

const MESH_URL = /^(?:https?:\/\/)?([A-Za-z0-9_-]{1,128})@mmesh(\/[^#]*)?(?:#.*)?$/i;

/** The mesh address `url` names, or undefined for any other URL. */
export function meshAddress(url: string): MeshAddress | undefined {
  const match = MESH_URL.exec(url.trim());
  return match ? { node: match[1], path: match[2] ?? "/" } : undefined;
}

/** A request's method, headers and body checked as fetch checks them, without its URL. */
export function meshRequest(address: MeshAddress, init?: RequestInit): Request {
  return new Request(`http://mmesh.invalid${address.path}`, init);
}

/** The head event of a mesh answer (mesh_calls.ts's MeshHead). */
interface MeshHead {
  status: number;
  statusText: string;
  headers: [string, string][];
}

const NULL_BODY = new Set([101, 204, 205, 304]);

/**
 * The node's refusals a microservice gets as an answer (`{message, statusCode}`, the reference's
 * error shape), as from the node it addressed; any other failure is a request without one.
 */
const ANSWERED_REFUSALS = new Set<string>(["not_found", "invalid", "unauthenticated", "forbidden"]);

/**
 * Sends `init` to `address` through the node; the Response as soon as its head came, its body
 * as its parts come. Within `timeoutMs` in all, and the `extras`' time to the head
 * (`connectMs`) and between parts (`idleMs`), as the node's other outbound requests.
 */
const REDIRECTS = 10;
/** Request headers that are credentials: never sent on a redirect out of the mesh. */
const CREDENTIALS = new Set([
  "authorization",
  "x-edge-authorization",
  "cookie",
  "proxy-authorization",
]);
/** The origin mesh paths are resolved against (never fetched: RFC 2606's `.invalid`). */
const MESH_ORIGIN = "http://mmesh.invalid";

/**
 * Sends `init` to `address` through the node, following redirects as fetch does (unless
 * `redirect` says otherwise): one to a path (a relative Location) stays on that node of the
 * mesh; one anywhere else is `elsewhere`'s, the microservice's ordinary outbound fetch, whose
 * policy judges it (a mesh node's allowance is not the address it points to).
 */
export async function meshFetch(
  calls: MeshCalls,
  address: MeshAddress,
  init: RequestInit | undefined,
  extras: FetchExtras | undefined,
  timeoutMs: number,
  elsewhere?: RelayedFetch,
): Promise<Response> {
  if (extras?.saveTo !== undefined) {
    throw new TypeError(
      "outputFile is not available with <nodeId>@mmesh URLs: read the answer and save it",
    );
  }
  const first = meshRequest(address, init);
  const headers = [...first.headers];
  let method = first.method;
  let body: Uint8Array<ArrayBuffer> | null = first.body
    ? new Uint8Array(await first.arrayBuffer())
    : null;
  let at = address;
  // One time limit for the request and every redirect it follows, as fetch has: ten hops do not
  // make ten limits.
  const endsAt = Date.now() + timeoutMs;
  for (let hop = 0;; hop++) {
    const hopInit = { method, headers, body, signal: init?.signal };
    const left = endsAt - Date.now();
    if (left <= 0) throw new TypeError(`the request timed out (no end within ${timeoutMs} ms)`);
    const response = await meshHop(calls, at, hopInit, extras, left);
    const location = response.headers.get("location");
    const redirected = response.status > 300 && response.status < 309 && response.status !== 304;
    if (first.redirect !== "follow" || !redirected || location === null) return response;
    await response.body?.cancel();
    if (hop === REDIRECTS) {
      throw new TypeError(`more than ${REDIRECTS} redirects from ${address.node}@mmesh`);
    }
    if (response.status === 303 || (method === "POST" && response.status < 303)) {
      method = "GET";
      body = null;
    }
    const next = new URL(location, `${MESH_ORIGIN}${at.path}`);
    if (next.origin === MESH_ORIGIN) {
      at = { node: at.node, path: `${next.pathname}${next.search}` };
      continue;
    }
    if (!elsewhere) throw new TypeError(`a redirect out of the mesh to ${next.href}`);
    // Credentials stay in the mesh, as fetch drops them on a redirect to another origin: a peer
    // that points elsewhere must not receive the caller's key or the account's token.
    const kept = headers.filter(([name]) => !CREDENTIALS.has(name.toLowerCase()));
    return await elsewhere(next.href, { ...hopInit, headers: kept, method, body }, extras);
  }
}

/**
 * One request to `address` through the node, its redirect not followed; the Response as soon as
 * its head came, its body as its parts come. Within `timeoutMs` in all, and the `extras`' time
 * to the head (`connectMs`) and between parts (`idleMs`), as the node's other outbound requests.
 */
async function meshHop(
  calls: MeshCalls,
  address: MeshAddress,
  init: RequestInit,
  extras: FetchExtras | undefined,
  timeoutMs: number,
): Promise<Response> {
  const request = meshRequest(address, init);
  const body = request.body ? new Uint8Array(await request.arrayBuffer()) : null;
  const stopped = new AbortController();
  // The relay's deadlines (outbound_relay.ts): in all, to the head, and between parts. Timers
  // only where asked: the first use of the timers loads Node's into the worker (host_globals.ts).
  const total = AbortSignal.timeout(timeoutMs);
  const deadline = new AbortController();
  const late = (ms: number, what: string) =>
    setTimeout(() => {
      deadline.abort(new TypeError(`the request timed out (${what} within ${ms} ms)`));
    }, ms);
  const connect = extras?.connectMs === undefined
    ? undefined
    : late(extras.connectMs, "no response");
  let idle = extras?.idleMs === undefined ? undefined : late(extras.idleMs, "no data");
  const touch = () => {
    if (idle === undefined) return;
    clearTimeout(idle);
    idle = late(extras!.idleMs!, "no data");
  };
  const settle = () => {
    if (connect !== undefined) clearTimeout(connect);
    if (idle !== undefined) clearTimeout(idle);
  };
  const signal = AbortSignal.any([request.signal, stopped.signal, total, deadline.signal]);
  const head = Promise.withResolvers<MeshHead>();
  // Handed to the reader as it pulls, and within its credit (call_body.ts).
  const parts = new CallBody(() => stopped.abort());
  const stream = parts.stream;
  const call = calls.call({
    op: "mesh",
    node: address.node,
    path: address.path,
    method: request.method,
    headers: [...request.headers],
    ...(body ? { data: (body as Uint8Array & { toBase64(): string }).toBase64() } : {}),
  }, {
    signal,
    onEvent: (value, took) => {
      const event = value as MeshHead | { chunk: string };
      touch();
      if (!("chunk" in event)) {
        if (connect !== undefined) clearTimeout(connect);
        return head.resolve(event);
      }
      const bytes = (Uint8Array as unknown as { fromBase64(text: string): Uint8Array })
        .fromBase64(event.chunk);
      parts.push(bytes, took);
    },
  });
  call.finally(settle).catch(() => {});
  call.then(() => {
    head.reject(new TypeError(`node ${address.node} sent no answer`));
    parts.close();
  }, (error: CallError) => {
    const why = total.aborted
      ? new TypeError(`the request timed out (no end within ${timeoutMs} ms)`)
      : deadline.signal.aborted
      ? deadline.signal.reason as TypeError
      : error;
    head.reject(why);
    parts.error(new TypeError(why.message));
  });
  let got: MeshHead;
  try {
    got = await head.promise;
  } catch (error) {
    const { kind, status, message } = error as CallError;
    if (ANSWERED_REFUSALS.has(kind)) {
      return new Response(JSON.stringify({ message, statusCode: status }), {
        status,
        headers: { "content-type": "application/json" },
      });
    }
    throw new TypeError(message);
  }
  const empty = NULL_BODY.has(got.status) || request.method === "HEAD";
  if (empty) stream.cancel().catch(() => {});
  try {
    const response = new Response(empty ? null : stream, {
      status: got.status,
      statusText: got.statusText,
      headers: got.headers,
    });
    Object.defineProperty(response, "url", {
      value: `http://${address.node}@mmesh${address.path}`,
    });
    return response;
  } catch (error) {
    stopped.abort();
    throw new TypeError(`node ${address.node} answered ${got.status}: ${(error as Error).message}`);
  }
}
