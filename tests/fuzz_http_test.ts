/**
 * Bad input, generated (fast-check): every HTTP route of every service, JSON-RPC, edge access
 * tokens, image archives and download clients that go away. Every answer must be a success or a
 * 4xx in the service's documented error shape, within 15 s; never a 5xx (except the documented
 * 503 of a listing that needs a hub the node does not have), and the node keeps serving. Each
 * run prints how many cases it generated; EDGENODE_FUZZ_RUNS sets the cases per property
 * (`deno task soak` runs many more).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import * as v from "valibot";
import { dashboardRoutes } from "../gen/dashboard/routes.ts";
import { ErrorSchema as DashboardError } from "../gen/dashboard/validators.ts";
import { insightRoutes } from "../gen/insight/routes.ts";
import { InsightErrorSchema } from "../gen/insight/validators.ts";
import { mcmRoutes } from "../gen/mcm/routes.ts";
import { ErrorSchema as McmError } from "../gen/mcm/validators.ts";
import { mdsRoutes } from "../gen/mds/routes.ts";
import { storeRoutes } from "../gen/store/routes.ts";
import { ErrorSchema as StoreError } from "../gen/store/validators.ts";
import { HelloMessageSchema, RequestMessageSchema } from "../gen/hub/validators.ts";
import type { RouteSpec } from "../src/http/routes.ts";
import { startFileServer } from "../testing/file_server.ts";
import {
  authorization,
  bodyFor,
  contentType,
  credential,
  fuzzRuns,
  hostileTar,
  jsonNear,
  jwtLike,
  queryFor,
  segment,
} from "./helpers/fuzz.ts";
import { startTestHub } from "../testing/hub.ts";
import { makeIssuer } from "../testing/identity.ts";
import { readyModel } from "./helpers/store.ts";
import {
  ggufBytes,
  listFiles,
  startTestNode,
  type TestNode,
  waitFor,
  withTempDir,
} from "../testing/node.ts";

const SERVICES: {
  name: string;
  prefix: string;
  routes: Record<string, RouteSpec>;
  error: v.GenericSchema;
}[] = [
  { name: "store", prefix: "/ai/store/v1", routes: storeRoutes, error: StoreError },
  { name: "insight", prefix: "/mesh/insight/v1", routes: insightRoutes, error: InsightErrorSchema },
  { name: "mcm", prefix: "", routes: mcmRoutes, error: McmError },
  { name: "mds", prefix: "", routes: mdsRoutes, error: StoreError },
  { name: "dashboard", prefix: "", routes: dashboardRoutes, error: DashboardError },
];

/** What the cases of one run got, for the report. */
const tally = { cases: 0, statuses: new Map<number, number>() };

function count(status: number): void {
  tally.cases++;
  tally.statuses.set(status, (tally.statuses.get(status) ?? 0) + 1);
}

/** A node to fuzz: one ready model, downloads allowed only from a closed port. */
async function fuzzNode(): Promise<TestNode> {
  const node = await startTestNode({
    config: {
      apiKey: "a-fuzz-test-key-of-enough-length",
      discovery: { mdns: false },
      downloadHosts: ["127.0.0.1:9"],
    },
  });
  await readyModel(node, "m", ggufBytes(5000));
  return node;
}

/** Asserts an answer is a success or a documented 4xx, and reads it to its end. */
async function expectHandled(
  response: Response,
  errorShape: v.GenericSchema,
  what: string,
): Promise<void> {
  const text = await response.text();
  count(response.status);
  const hubless = response.status === 503 && /needs a hub/.test(text);
  assert.ok(
    response.status < 500 || hubless,
    `${what} → ${response.status}: ${text.slice(0, 300)}`,
  );
  if (response.status >= 400 && text.length > 0) {
    const body = JSON.parse(text);
    assert.ok(v.is(errorShape, body), `${what} → an error not in the spec's shape: ${text}`);
  }
}

/** The node still answers, quickly. */
async function stillServing(node: TestNode): Promise<void> {
  const ping = await fetch(`${node.url}/mds/v1/nodes?ping=true`, {
    signal: AbortSignal.timeout(5000),
  });
  assert.equal(ping.status, 200);
  await ping.body?.cancel();
}

Deno.test("fuzz: every route of every service answers bad input with a 4xx", async (t) => {
  await using node = await fuzzNode();
  for (const service of SERVICES) {
    for (const [operation, route] of Object.entries(service.routes)) {
      await t.step(`${service.name} ${operation}: ${route.method} ${route.path}`, async () => {
        const names = Object.keys((route.query as { entries?: object }).entries ?? {});
        const params = (route.path.match(/:\w+/g) ?? []).length;
        const schema = route.body.kind === "json" ? route.body.schema : undefined;
        await fc.assert(
          fc.asyncProperty(
            fc.array(segment, { minLength: params, maxLength: params }),
            queryFor(names),
            credential,
            contentType,
            bodyFor(schema),
            async (segments, query, cred, type, body) => {
              let i = 0;
              const path = route.path.replace(/:\w+/g, () => segments[i++]);
              const search = new URLSearchParams(query).toString();
              const url = `${node.url}${service.prefix}${path}${search ? `?${search}` : ""}`;
              const headers: Record<string, string> = {};
              const auth = authorization(cred, node.apiKey);
              if (auth) headers.Authorization = auth;
              if (type) headers["Content-Type"] = type;
              const withBody = route.method !== "GET" && route.method !== "HEAD";
              const response = await fetch(url, {
                method: route.method,
                headers,
                body: withBody ? body as BodyInit | undefined : undefined,
                signal: AbortSignal.timeout(15_000),
              });
              await expectHandled(response, service.error, `${route.method} ${url.slice(0, 200)}`);
            },
          ),
          { numRuns: fuzzRuns(25) },
        );
      });
    }
  }
  await stillServing(node);
});

Deno.test("fuzz: JSON-RPC answers any request with a result or a JSON-RPC error", async () => {
  await using node = await fuzzNode();
  const method = fc.oneof(
    fc.constantFrom("getMe", "getEdgeIdToken", "associateAccount", "unassociateAccount"),
    fc.constantFrom("updateGps", "rpc.discover", "__proto__", "constructor", ""),
    fc.string({ maxLength: 20 }),
  );
  const params = fc.oneof(
    fc.constant(undefined),
    fc.array(fc.oneof(jwtLike, fc.jsonValue({ maxDepth: 2 })), { maxLength: 6 }),
    fc.dictionary(fc.string({ maxLength: 12 }), fc.oneof(jwtLike, fc.jsonValue({ maxDepth: 1 }))),
    fc.jsonValue({ maxDepth: 1 }),
  );
  const call = fc.record({
    jsonrpc: fc.constantFrom("2.0", "2.0", "1.0", undefined),
    id: fc.oneof(
      fc.integer(),
      fc.string({ maxLength: 8 }),
      fc.constant(null),
      fc.constant(undefined),
    ),
    method,
    params,
  });
  const body = fc.oneof(
    call.map((c) => JSON.stringify(c)),
    fc.array(call, { maxLength: 4 }).map((calls) => JSON.stringify(calls)),
    fc.string({ maxLength: 200 }),
    call.map((c) => JSON.stringify(c)).chain((json) =>
      fc.nat({ max: json.length }).map((n) => json.slice(0, n))
    ),
  );
  await fc.assert(
    fc.asyncProperty(body, credential, async (text, cred) => {
      const auth = authorization(cred, node.apiKey);
      const response = await fetch(`${node.url}/jsonrpc/v1`, {
        method: "POST",
        headers: { "Content-Type": "application/json", ...(auth ? { Authorization: auth } : {}) },
        body: text,
        signal: AbortSignal.timeout(15_000),
      });
      const answer = await response.text();
      count(response.status);
      assert.ok(response.status < 500, `${text.slice(0, 200)} → ${response.status}: ${answer}`);
      if (!answer) return;
      const parsed = JSON.parse(answer);
      for (const one of Array.isArray(parsed) ? parsed : [parsed]) {
        if (one.error) {
          assert.ok(Number.isInteger(one.error.code), answer);
          assert.notEqual(one.error.code, -32603, `an internal error for ${text.slice(0, 200)}`);
        } else if (response.status === 200) {
          assert.ok("result" in one, answer);
        }
      }
    }),
    { numRuns: fuzzRuns(150) },
  );
  await stillServing(node);
});

Deno.test("fuzz: tokens put to insight are refused unless valid", async () => {
  await using node = await fuzzNode();
  await fc.assert(
    fc.asyncProperty(jwtLike, fc.option(fc.integer(), { nil: undefined }), async (token, exp) => {
      const response = await fetch(`${node.url}/mesh/insight/v1/token`, {
        method: "PUT",
        headers: { Authorization: `Bearer ${node.apiKey}`, "Content-Type": "application/json" },
        body: JSON.stringify({ token, expiresAt: exp }),
        signal: AbortSignal.timeout(15_000),
      });
      await expectHandled(response, InsightErrorSchema, `PUT /token ${token.slice(0, 60)}`);
      assert.ok(response.status >= 400 || token === "", "no forged token is stored");
    }),
    { numRuns: fuzzRuns(100) },
  );
  await stillServing(node);
});

Deno.test("fuzz: hostile image archives are refused and leave nothing behind", async () => {
  await using node = await fuzzNode();
  await fc.assert(
    fc.asyncProperty(hostileTar, fc.boolean(), async (archive, asForm) => {
      const tar = await archive;
      const blob = new Blob([tar as Uint8Array<ArrayBuffer>]);
      const form = new FormData();
      form.append("image", blob, "fuzz.tar");
      const response = await fetch(`${node.url}/mcm/v1/images?name=fuzz`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${node.apiKey}`,
          ...(asForm ? {} : { "Content-Type": "application/x-tar" }),
        },
        body: asForm ? form : blob,
        signal: AbortSignal.timeout(15_000),
      });
      await expectHandled(response, McmError, `an archive of ${tar.length} bytes`);
      if (response.status === 201) {
        const removed = await fetch(`${node.url}/mcm/v1/images/api-fuzz`, {
          method: "DELETE",
          headers: { Authorization: `Bearer ${node.apiKey}` },
        });
        await removed.body?.cancel();
      }
      assert.deepEqual(await listFiles(`${node.dataDir}/mcm/tmp`), [], "nothing left in tmp/");
    }),
    { numRuns: fuzzRuns(60) },
  );
  await stillServing(node);
});

Deno.test("fuzz: download clients that go away at random leave no partial file", async () => {
  await using files = startFileServer();
  const source = files.serve("/slow.gguf", ggufBytes(400_000), { bytesPerSecond: 400_000 });
  await using open = await startTestNode({
    config: { apiKey: "a-fuzz-test-key-of-enough-length", discovery: { mdns: false } },
  });
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 4 }),
      async (leaveAfterMs) => {
        const id = `d${n++}`;
        const created = await fetch(`${open.storeUrl}/models`, {
          method: "POST",
          headers: open.auth({ "Content-Type": "application/json" }),
          body: JSON.stringify({ id, version: "1", kind: "llm" }),
        });
        await created.body?.cancel();
        await Promise.all(leaveAfterMs.map(async (ms) => {
          const abort = new AbortController();
          const response = await fetch(`${open.storeUrl}/models/${id}/download`, {
            method: "POST",
            headers: open.auth({ "Content-Type": "application/json" }),
            body: JSON.stringify({ url: source }),
            signal: abort.signal,
          });
          count(response.status);
          setTimeout(() => abort.abort(), ms);
          await response.body?.pipeTo(new WritableStream()).catch(() => {});
        }));
        // Every client left: the transfer stops and its partial file goes (or it finished).
        await waitFor(async () => {
          const files = await listFiles(`${open.dataDir}/models`);
          return !files.some((file) => file.endsWith(".partial"));
        }, "no partial file");
      },
    ),
    // Each case is a real transfer of about a second: a tenth of the other properties' count.
    { numRuns: Math.max(6, Math.round(fuzzRuns(25) / 10)) },
  );
  await stillServing(open);
});

Deno.test("fuzz: the hub refuses malformed joins over its WebSocket and keeps serving", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const hub = await startTestHub(issuer, `${dir}/hub`);
    try {
      const wsUrl = `${hub.url.replace(/^http/, "ws")}/hub/v1/connect`;
      const message = fc.oneof(
        jsonNear(HelloMessageSchema).map((json) => json.replace("{", '{"t":"hello",')),
        fc.record({ t: fc.constant("hello"), token: jwtLike, proof: jwtLike }).map((m) =>
          JSON.stringify(m)
        ),
        jsonNear(RequestMessageSchema),
        fc.string({ maxLength: 300 }),
        fc.uint8Array({ maxLength: 300 }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 4 }), async (messages) => {
          const socket = new WebSocket(wsUrl);
          const closed = new Promise<void>((resolve) => {
            socket.addEventListener("close", () => resolve());
          });
          const opened = new Promise<boolean>((resolve) => {
            socket.addEventListener("open", () => resolve(true));
            socket.addEventListener("close", () => resolve(false));
          });
          if (await opened) {
            for (const m of messages) socket.send(m as string);
          }
          // The hub answers a bad join by closing; otherwise the client closes after a moment.
          const timer = setTimeout(() => socket.close(), 300);
          await closed;
          clearTimeout(timer);
          count(101);
        }),
        { numRuns: fuzzRuns(40) },
      );
      const health = await fetch(`${hub.url}/hub/v1/health`);
      assert.deepEqual(await health.json(), { status: "ok", nodes: 0 }, "no forged node joined");
    } finally {
      await hub.stop();
    }
  }));

Deno.test("fuzz: the report", () => {
  const statuses = [...tally.statuses].sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status}×${n}`).join(" ");
  console.log(`fuzz: ${tally.cases} generated requests, every one answered: ${statuses}`);
  assert.ok(tally.cases > 0);
});
