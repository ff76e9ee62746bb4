/**
 * A tunnelled request served from its parts (Pipeline.serveParts, JSON answers sent from their
 * ready parts) answers byte for byte as one served from a Request and read from its Response.
 */
import assert from "node:assert/strict";
import * as v from "valibot";
import { NotFound } from "../errors/mod.ts";
import { Pipeline, type RequestContext, type RequestParts } from "../http/pipeline.ts";
import { json, preparedJson } from "../http/reply.ts";
import { mountRoutes, type RouteSpec } from "../http/routes.ts";
import type { Identity } from "../identity/identity.ts";
import { TokenError } from "../identity/token_verifier.ts";
import type { TunnelSocket } from "../tunnel/raw_socket.ts";
import { VIA_HEADER } from "../tunnel/routing.ts";
import { binaryCodec } from "../tunnel/wire_frames.ts";
import { nodeTunnel } from "./tunnel_requests.ts";

const KEY = "the-api-key";

function spec(
  method: string,
  path: string,
  auth: boolean,
  query: v.GenericSchema = v.object({}),
): RouteSpec {
  return {
    method,
    path,
    auth,
    params: v.object({ id: v.optional(v.pipe(v.string(), v.maxLength(8))) }),
    query,
    body: { kind: "none" },
    responses: {},
  };
}

const ROUTES = {
  open: spec("GET", "/open", false, v.object({ n: v.optional(v.string()) })),
  keyed: spec("GET", "/keyed/:id", true),
  kept: spec("GET", "/kept/:id", true),
  created: spec("GET", "/created", false),
  extra: spec("GET", "/extra", false),
  reads: spec("GET", "/reads", false),
  fails: spec("GET", "/fails", false),
  posted: spec("POST", "/posted", false),
  text: spec("GET", "/text/:id", false),
};

const kept = preparedJson(JSON.stringify({ kept: true, é: "ü" }) as never);

/** A node's pipeline with typed, prepared, raw, failing and local routes. */
function nodePipeline(): Pipeline {
  const pipeline = new Pipeline({ isRemote: ({ request }) => request.headers.has(VIA_HEADER) });
  const handlers = {
    open: ({ query }: { query: { n?: string } }) => json(200, { open: query.n ?? null }),
    keyed: ({ params }: { params: { id?: string } }) => json(200, { id: params.id }),
    kept: ({ params }: { params: { id?: string } }) => json(200, { kept: params.id }),
    created: () => json(201, { made: "\u2028 <b>" }),
    extra: () => json(200, { extra: 1 }, { "X-Extra": "yes", "Cache-Control": "no-store" }),
    reads: ({ request }: { request: Request }) =>
      json(200, { via: request.headers.get("x-edge-via"), url: request.url }),
    fails: () => {
      throw new NotFound("nothing here");
    },
    posted: () => json(200, { posted: true }),
    text: () => new Response("plain", { headers: { "content-type": "text/plain" } }),
  };
  mountRoutes(
    pipeline,
    ROUTES,
    handlers as never,
    {
      prefixes: [""],
      apiKey: KEY,
      readsRequireKey: true,
    },
    { kept: (context: RequestContext) => context.params.id === "k1" ? kept() : undefined } as never,
  );
  pipeline.route("GET", "/raw", () => new Response("raw text"));
  pipeline.route("GET", "/local", () => json(200, { local: true }), { local: true });
  pipeline.route("GET", "/later", () => Promise.resolve(json(200, { later: true })));
  return pipeline;
}

/** Everything the node's end sends for one request head, with or without `serveParts`. */
async function sent(
  head: Record<string, unknown>,
  parts: boolean,
  inline?: Uint8Array,
): Promise<{ bytes: Uint8Array; built: number; viaParts: boolean }> {
  const messages: Uint8Array[] = [];
  const socket = {
    readyState: WebSocket.OPEN,
    send: (message: Uint8Array) => messages.push(message.slice()),
    close() {},
  };
  const pipeline = nodePipeline();
  let built = 0;
  let viaParts = false;
  const tunnel = nodeTunnel(socket as unknown as TunnelSocket, {
    identity: {
      checkAccountToken: (token: string) =>
        token === "account"
          ? Promise.resolve({})
          : Promise.reject(new TokenError("InvalidToken", "not valid")),
    } as unknown as Identity,
    port: () => 8080,
    serve: (request, origin) => Promise.resolve(pipeline.serve(request, origin)),
    serveParts: parts
      ? (given: RequestParts, origin) => {
        viaParts = true;
        return pipeline.serveParts({
          ...given,
          request: () => (built++, given.request()),
        }, origin);
      }
      : undefined,
  });
  const frame = binaryCodec.head({ t: "req", s: 3, port: 8080, ...head } as never, inline);
  tunnel.receive(frame as Uint8Array);
  // Until nothing more comes for a few turns.
  for (let quiet = 0, seen = 0; quiet < 4;) {
    await new Promise((resolve) => setTimeout(resolve, 2));
    quiet = messages.length === seen && seen > 0 ? quiet + 1 : 0;
    seen = messages.length;
  }
  const bytes = new Uint8Array(messages.reduce((n, m) => n + m.length, 0));
  messages.reduce((at, m) => (bytes.set(m, at), at + m.length), 0);
  return { bytes, built, viaParts };
}

const VIA: [string, string] = ["x-edge-via", "hub"];
const KEYED: [string, string] = ["authorization", `Bearer ${KEY}`];

/** [method, path, headers, body?] of each request tried both ways. */
const CASES: [string, string, [string, string][], string?][] = [
  ["GET", "/open", [VIA]],
  ["HEAD", "/open", [VIA]],
  ["GET", "/open?n=5", [VIA, ["x-edge-caller-account", "acct"]]],
  ["GET", "/open?n=5&n=6", [VIA]],
  ["GET", "/open?m=1", [VIA]],
  ["GET", "//open", [VIA]],
  ["GET", "/open/", [VIA]],
  ["GET", "/open/../open", [VIA]],
  ["GET", "/x/%2e%2e/open", [VIA]],
  ["GET", "/open#fragment", [VIA]],
  ["GET", "/open?q='x'", [VIA]],
  ["GET", "/op en", [VIA]],
  ["GET", "/open", []],
  ["GET", "/open", [["X-Edge-Via", "browser"]]],
  ["GET", "/open", [VIA, ["x-odd", "  spaced\t"]]],
  ["GET", "/open", [VIA, ["x-bad name", "1"]]],
  ["GET", "/open", [VIA, ["x-bad", "a\u0100"]]],
  ["get", "/open", [VIA]],
  ["OPTIONS", "/open", [VIA]],
  ["GET", "/keyed/a1", [VIA]],
  ["GET", "/keyed/a1", [VIA, KEYED]],
  ["GET", "/keyed/a1", [VIA, ["authorization", "Bearer wrong"]]],
  ["GET", "/keyed/a1", [VIA, ["authorization", "Bearer account"]]],
  ["GET", "/keyed/a%2F1", [VIA, KEYED]],
  ["GET", "/keyed/much-too-long-id", [VIA, KEYED]],
  ["GET", "/kept/k1", [VIA, KEYED]],
  ["GET", "/kept/k2", [VIA, KEYED]],
  ["GET", "/kept/k1", [VIA]],
  ["GET", "/created", [VIA]],
  ["GET", "/extra", [VIA]],
  ["GET", "/reads", [VIA]],
  ["GET", "/reads", [["x-edge-via", "other"]]],
  ["GET", "/fails", [VIA]],
  ["GET", "/posted", [VIA]],
  ["POST", "/posted", [VIA], "{}"],
  ["POST", "/open", [VIA]],
  ["GET", "/text/t", [VIA]],
  ["GET", "/raw", [VIA]],
  ["GET", "/local", [VIA]],
  ["GET", "/later", [VIA]],
  ["GET", "/nowhere", [VIA]],
];

Deno.test("tunnel parts: every answer is the same bytes served from parts or from a Request", async () => {
  let fromParts = 0;
  for (const [method, path, headers, body] of CASES) {
    const inline = body === undefined ? undefined : new TextEncoder().encode(body);
    const head = { method, path, headers, body: false };
    const slow = await sent(head, false, inline);
    const fast = await sent(head, true, inline);
    const what = `${method} ${path} ${JSON.stringify(headers)}`;
    assert.ok(slow.bytes.length > 0, what);
    assert.deepEqual(fast.bytes, slow.bytes, what);
    if (fast.viaParts && fast.built === 0) fromParts++;
  }
  // The fast path did serve some without a Request (the prepared and plain JSON GETs).
  assert.ok(fromParts >= 8, `${fromParts} served without a Request`);
});

Deno.test("tunnel parts: a ping-like GET builds no Request, one that reads it builds one", async () => {
  const head = (path: string) => ({ method: "GET", path, headers: [VIA, KEYED], body: false });
  const served = async (path: string) => {
    const { built, viaParts } = await sent(head(path), true);
    return { built, viaParts };
  };
  assert.deepEqual(await served("/open?n=1"), { built: 0, viaParts: true });
  assert.deepEqual(await served("/later"), { built: 0, viaParts: true });
  assert.deepEqual(await served("/reads"), { built: 1, viaParts: true });
  assert.deepEqual(await served("/local"), { built: 1, viaParts: true });
  // A dot segment, which the URL parser would resolve: built first, as before.
  assert.deepEqual(await served("/open/../open"), { built: 0, viaParts: false });
});
