/**
 * The node's end of the tunnel: a request the hub forwards is served in-process by the node's
 * own HTTP handler, and the response streams back (spec/hub.yaml, "Tunnels").
 *
 * @module
 */
import { Invalid } from "../errors/mod.ts";
import { bearerOf } from "../http/auth.ts";
import { statusCodeError } from "../http/errors.ts";
import type { RequestParts } from "../http/pipeline.ts";
import { readyAnswerOf } from "../http/reply.ts";
import { type Identity, SCOPES } from "../identity/identity.ts";
import { TokenError } from "../identity/token_verifier.ts";
import { CALLER_ACCOUNT_HEADER, VIA_HEADER } from "../tunnel/routing.ts";
import type { TunnelSocket } from "../tunnel/raw_socket.ts";
import { StreamMux } from "../tunnel/stream_mux.ts";
import {
  FrameBatcher,
  type FrameSink,
  receiveFrames,
  TUNNEL_SESSION,
  type WireRequest,
} from "../tunnel/wire_frames.ts";

/** What the tunnel's code alone says of a tunnelled request (RequestContext's fields). */
export interface TunnelOrigin {
  apiKeyGranted: boolean;
  hubAccount?: string;
}

/** What serving a tunnelled request needs. */
export interface TunnelContext {
  mux: StreamMux;
  /**
   * The node's HTTP handler; `apiKeyGranted` lets a request in without the API key, `hubAccount`
   * is the account the hub verified the caller's token for.
   */
  serve(request: Request, origin: TunnelOrigin): Promise<Response>;
  /**
   * The node's HTTP handler for a request given by its parts (Pipeline.serveParts): a bodiless
   * GET or HEAD whose Request is built only if the handler reads it. Without it every request is
   * a Request, and every answer is read from its Response.
   */
  serveParts?(parts: RequestParts, origin: TunnelOrigin): Response | Promise<Response>;
  /** The node's HTTP port (the sep info's x-edge-port). */
  port: number;
  identity: Identity;
}

/** Declared lengths up to this are enforced (readText's largest limit: a JSON-RPC request). */
const TRUSTED_LENGTH_BYTES = 1 << 20;

/** HTTP whitespace at either end of a header value (what Headers strips from values). */
const VALUE_EDGES = /^[\t\n\r ]+|[\t\n\r ]+$/g;

/**
 * What `new Headers(pairs).get(name)` gives (`name` in lower case), read from the pairs: each
 * get or set of a Request's Headers lowercases and compares every name of the list.
 */
export function headerOf(pairs: readonly [string, string][], name: string): string | null {
  let value: string | null = null;
  for (const [key, raw] of pairs) {
    if (key.length !== name.length || key.toLowerCase() !== name) continue;
    const normalized = raw.replace(VALUE_EDGES, "");
    value = value === null ? normalized : `${value}, ${normalized}`;
  }
  return value;
}

/**
 * The pairs with `x-edge-via: hub` as Headers.set would leave them: as they are when the hub
 * already sent exactly that (it always does), otherwise without any other `x-edge-via`.
 */
function withVia(pairs: [string, string][]): [string, string][] {
  let via = 0;
  let exact = true;
  for (const [key, value] of pairs) {
    if (key.length !== VIA_HEADER.length || key.toLowerCase() !== VIA_HEADER) continue;
    via++;
    if (value.replace(VALUE_EDGES, "") !== "hub") exact = false;
  }
  if (via === 1 && exact) return pairs;
  const kept = pairs.filter(([key]) => key.toLowerCase() !== VIA_HEADER);
  kept.push([VIA_HEADER, "hub"]);
  return kept;
}

/** A stream that passes at most `limit` bytes and fails on more. */
function atMost(limit: number): TransformStream<Uint8Array, Uint8Array> {
  let seen = 0;
  return new TransformStream({
    transform(chunk, controller) {
      seen += chunk.byteLength;
      if (!(seen <= limit)) {
        controller.error(new Invalid(`the body is longer than its Content-Length ${limit}`));
      } else controller.enqueue(chunk);
    },
  });
}

/**
 * Whether the request's account token stands in for the API key: only this code can say so, so
 * no header can fake it. Read from the pairs the Request is made of (and so validated by): the
 * same values.
 */
async function accountGranted(message: WireRequest, context: TunnelContext): Promise<boolean> {
  const token = bearerOf(headerOf(message.headers, "authorization"));
  if (!token) return false;
  try {
    await context.identity.checkAccountToken(token, SCOPES.clusters);
    return true;
  } catch (error) {
    // Not an account token of this node: the request is checked as any other.
    if (!(error instanceof TokenError)) throw error;
    return false;
  }
}

/** The Request the node's handler sees. */
function tunnelledRequest(
  message: WireRequest,
  body: BodyInit | null,
  context: TunnelContext,
): Request {
  const declared = message.headers.find(([name]) => name.toLowerCase() === "content-length")?.[1];
  return new Request(`http://localhost:${context.port}${message.path}`, {
    method: message.method,
    // The pairs as they are: a Headers object here would be converted (validated, copied) twice.
    headers: withVia(message.headers),
    // As from a socket, a small body holds to its declared length: readText reads such a body
    // whole, trusting it. Larger ones are only streamed, by readers that count for themselves, so
    // they skip the extra step per chunk.
    body: body instanceof ReadableStream && declared !== undefined &&
        Number(declared) <= TRUSTED_LENGTH_BYTES
      ? body.pipeThrough(atMost(Number(declared)))
      : body,
    // @ts-ignore: Deno needs duplex for a streamed body; lib.dom lacks it.
    duplex: "half",
  });
}

/**
 * A target the URL parser leaves as it is (no character it escapes, no dot segment, which it
 * would resolve): the path and query the Request's URL would hold, without building it.
 */
const PLAIN_TARGET = /^\/[A-Za-z0-9\-._~!$&()*+,;=:@%\/?]*$/;
const DOT_SEGMENT = /\/\.|%2e/i;
/** A header name Headers takes (an HTTP token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A header value Headers takes as it is (no NUL, CR, LF, nothing beyond one byte). */
const HEADER_VALUE = /^[^\0\r\n\u0100-\uffff]*$/;

/**
 * Whether the request may be served from its parts: a bodiless GET or HEAD whose Request, when
 * built, holds exactly these parts and would not be refused (so building it later, or never,
 * answers the same). Anything else is built first, as before.
 */
function servableAsParts(message: WireRequest, body: BodyInit | null): boolean {
  if (body !== null || (message.method !== "GET" && message.method !== "HEAD")) return false;
  const target = message.path;
  if (!PLAIN_TARGET.test(target)) return false;
  const query = target.indexOf("?");
  if (DOT_SEGMENT.test(query < 0 ? target : target.slice(0, query))) return false;
  for (const [name, value] of message.headers) {
    if (!HEADER_NAME.test(name) || !HEADER_VALUE.test(value)) return false;
  }
  return true;
}

const encoder = new TextEncoder();

/** The node's answer to a tunnelled request on its own port. */
async function answerOf(
  message: WireRequest,
  body: BodyInit | null,
  context: TunnelContext,
): Promise<Response> {
  const apiKeyGranted = await accountGranted(message, context);
  // The hub set it (and dropped any the caller sent): the account of the token it verified.
  const hubAccount = headerOf(message.headers, CALLER_ACCOUNT_HEADER) ?? undefined;
  const origin = { apiKeyGranted, hubAccount };
  if (context.serveParts && servableAsParts(message, body)) {
    return await context.serveParts({
      method: message.method,
      target: message.path,
      request: () => tunnelledRequest(message, null, context),
      // The Request's pairs are withVia's: exactly one x-edge-via, "hub".
      header: (name) => name === VIA_HEADER ? "hub" : headerOf(message.headers, name),
    }, origin);
  }
  return await context.serve(tunnelledRequest(message, body, context), origin);
}

/** Serves one tunnelled request; the body stream must be claimed before anything awaits. */
export function serveTunnelled(message: WireRequest, context: TunnelContext): void {
  const { mux } = context;
  const stream = message.s;
  const body = mux.bodyOf(stream, message);
  (async () => {
    let response: Response;
    if (message.port !== context.port) {
      response = statusCodeError(
        404,
        `this node serves port ${context.port} through the hub, not ${message.port}`,
      );
    } else {
      response = await answerOf(message, body, context);
    }
    // A JSON answer's parts are known: neither its headers nor its body stream are read.
    const ready = context.serveParts ? readyAnswerOf(response) : undefined;
    if (ready) {
      await mux.send(stream, {
        t: "res",
        s: stream,
        status: ready.status,
        headers: ready.headers,
        body: true,
      }, encoder.encode(ready.text));
    } else {
      await mux.send(stream, {
        t: "res",
        s: stream,
        status: response.status,
        headers: [...response.headers],
        body: response.body !== null,
      }, response.body);
    }
    // The handler did not read the whole request body: stop the hub from sending the rest.
    if (mux.receiving(stream)) mux.cancel(stream, "the response is complete");
  })().catch((error) => {
    mux.cancel(stream, `the node failed: ${(error as Error).message}`);
  });
}

/** The node's end of a tunnel: its mux, and what takes the hub's binary messages. */
export interface NodeTunnel {
  mux: StreamMux;
  /** Serves the frames of one binary message; throws MessageError on a malformed one. */
  receive(message: ArrayBuffer | Uint8Array): void;
}

/** Opens the node's end of the tunnel over `socket` (its binary messages, after the welcome). */
export function nodeTunnel(
  socket: TunnelSocket,
  host: Pick<TunnelContext, "serve" | "serveParts" | "identity"> & { port(): number },
): NodeTunnel {
  const mux = new StreamMux(new FrameBatcher(socket).send, TUNNEL_SESSION);
  const frames: FrameSink = {
    head: (head) =>
      serveTunnelled(head as WireRequest, {
        mux,
        serve: host.serve,
        serveParts: host.serveParts,
        port: host.port(),
        identity: host.identity,
      }),
    data: (stream, bytes) => mux.onBody(stream, bytes),
    control: (message) => mux.onControl(message),
  };
  return {
    mux,
    receive: (message) =>
      receiveFrames(
        message instanceof Uint8Array ? message : new Uint8Array(message),
        "req",
        frames,
      ),
  };
}
