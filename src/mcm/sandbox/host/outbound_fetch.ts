/**
 * How one outbound request of a container is made (outbound_relay.ts): redirects followed hop by
 * hop, each through the network policy; an idle watch that aborts a body without data; and the
 * message the microservice sees when it fails.
 *
 * @module
 */
import { type NetworkPolicy, RefusedDestination } from "../network_policy.ts";

/**
 * Aborts when `idleMs` pass without a call to `touch`. One timer checks a timestamp, so that a
 * touch per chunk costs no timer of its own.
 */
export function idleWatch(idleMs: number | undefined) {
  const controller = new AbortController();
  let lastTouch = Date.now();
  const timer = idleMs === undefined ? undefined : setInterval(() => {
    if (Date.now() - lastTouch <= idleMs) return;
    clearInterval(timer);
    controller.abort(new DOMException(`no data for ${idleMs} ms`, "TimeoutError"));
  }, Math.max(10, Math.min(1000, idleMs / 4)));
  const touch = () => void (lastTouch = Date.now());
  return { signal: controller.signal, touch, stop: () => clearInterval(timer) };
}

/** A body stream that touches the idle watch at every chunk and stops it at the end. */
export function watched(body: ReadableStream<Uint8Array>, watch: ReturnType<typeof idleWatch>) {
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        watch.touch();
        controller.enqueue(chunk);
      },
      flush: () => watch.stop(),
    }),
  );
}

const REDIRECTS = 10;

/** The request a microservice asked for (outbound_relay.ts's `fetch` call). */
export interface OutboundRequest {
  url: string;
  method: string;
  headers: [string, string][];
  body: Uint8Array | null;
}

/**
 * Fetches, following redirects itself so that every hop passes the policy. A 303 (and a 301 or
 * 302 of a POST) continues as a GET without a body, as browsers and curl do.
 */
export async function followed(
  call: OutboundRequest,
  policy: NetworkPolicy,
  signal: AbortSignal,
) {
  let url = new URL(call.url);
  let method = call.method;
  let body = call.body as Uint8Array<ArrayBuffer> | null;
  for (let hop = 0;; hop++) {
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new TypeError(`only http: and https: URLs can be fetched, not ${url.protocol}`);
    }
    await policy.check(url);
    const response = await fetch(url, {
      method,
      headers: call.headers,
      body,
      signal,
      redirect: "manual",
    });
    const location = response.headers.get("location");
    if (response.status < 300 || response.status > 399 || location === null) return response;
    await response.body?.cancel();
    if (hop === REDIRECTS) throw new TypeError(`more than ${REDIRECTS} redirects from ${call.url}`);
    url = new URL(location, url);
    if (response.status === 303 || (method === "POST" && response.status < 303)) {
      method = "GET";
      body = null;
    }
  }
}

/** What the worker is told of a failed request: the cause, never a native stack. */
export function describe(error: unknown): string {
  const e = error as Error;
  if (e?.name === "TimeoutError") return `the request timed out (${e.message})`;
  if (e instanceof RefusedDestination) return e.message;
  if (e?.name === "NotCapable" || /Requires net access/.test(e?.message ?? "")) {
    return `${
      e.message.split(",")[0]
    } (refused by the node's mcm.outboundNetworks or mcm.outboundHosts)`;
  }
  return e?.message ?? String(error);
}
