/**
 * A relay that sits where one hub forwards to another (a hub's `nats.advertiseUrl`) and keeps a
 * copy of every request's head, as someone on the path between two hubs could: what the
 * hostile hub tests replay.
 *
 * @module
 */

/** The head of a request the relay passed on. */
export interface RelayedHead {
  method: string;
  /** Path and query. */
  path: string;
  headers: Headers;
}

/** A running relay; set `target` (the real hub's URL) before anything is sent through it. */
export interface HubRelay extends AsyncDisposable {
  url: string;
  target: string;
  /** The heads seen, oldest first. */
  seen: RelayedHead[];
}

/** Starts a relay on a free port of 127.0.0.1. */
export function startHubRelay(): HubRelay {
  const relay: HubRelay = {
    url: "",
    target: "",
    seen: [],
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const url = new URL(request.url);
      const path = `${url.pathname}${url.search}`;
      relay.seen.push({ method: request.method, path, headers: new Headers(request.headers) });
      const headers = new Headers(request.headers);
      headers.delete("host");
      const answer = await fetch(`${relay.target}${path}`, {
        method: request.method,
        headers,
        body: request.body,
        redirect: "manual",
      });
      const back = new Headers(answer.headers);
      // fetch has decoded a compressed body: pass it on as what it now is.
      if (back.has("content-encoding")) {
        back.delete("content-encoding");
        back.delete("content-length");
      }
      return new Response(answer.body, { status: answer.status, headers: back });
    },
  );
  relay.url = `http://127.0.0.1:${server.addr.port}`;
  return relay;
}
