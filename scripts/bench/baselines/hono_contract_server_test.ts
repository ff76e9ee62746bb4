import assert from "node:assert/strict";
import { startTestNode } from "../../../testing/node.ts";
import { startJsonBaseline } from "../request_servers.ts";
import { createModel } from "../tools.ts";

const MODEL_ID = "bench-model";
const rpc = (body: BodyInit, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers,
  body,
});
const json = { "content-type": "application/json" };
const getMe = `{"jsonrpc":"2.0","id":1,"method":"getMe"}`;

/** The requests the baseline must answer as the node does: the measured ones and their errors. */
const CASES: [string, string, RequestInit][] = [
  ["the model", `/ai/store/v1/models/${MODEL_ID}`, {}],
  ["another model", "/ai/store/v1/models/other-model", {}],
  ["an id starting with '.'", "/ai/store/v1/models/.hidden", {}],
  ["an id with '..'", "/ai/store/v1/models/a..b", {}],
  ["an id with other characters", "/ai/store/v1/models/a%20b", {}],
  ["getMe", "/jsonrpc/v1", rpc(getMe, json)],
  [
    "getMe, Content-Type with parameters",
    "/jsonrpc/v1",
    rpc(getMe, {
      "content-type": "application/json; charset=utf-8",
    }),
  ],
  ["getMe without a Content-Type", "/jsonrpc/v1", rpc(new TextEncoder().encode(getMe))],
  [
    "getMe with a string id and params",
    "/jsonrpc/v1",
    rpc(
      `{"jsonrpc":"2.0","id":"a","method":"getMe","params":[""]}`,
      json,
    ),
  ],
  ["getMe through the hub", "/jsonrpc/v1", rpc(getMe, { ...json, "x-edge-via": "hub" })],
  [
    "a binary Content-Type",
    "/jsonrpc/v1",
    rpc(getMe, {
      "content-type": "application/octet-stream",
    }),
  ],
  ["a body over 1 MiB", "/jsonrpc/v1", rpc(" ".repeat((1 << 20) + 1), json)],
  ["not JSON", "/jsonrpc/v1", rpc("{", json)],
  ["another method", "/jsonrpc/v1", rpc(`{"jsonrpc":"2.0","id":2,"method":"nope"}`, json)],
  ["JSON-RPC 1.0", "/jsonrpc/v1", rpc(`{"jsonrpc":"1.0","id":3,"method":"getMe"}`, json)],
  ["a batch", "/jsonrpc/v1", rpc(`[${getMe},{"jsonrpc":"2.0","id":"x","method":"nope"}]`, json)],
];

/** What a client sees of an answer, the headers compared included. */
async function seen(url: string, init: RequestInit) {
  const response = await fetch(url, init);
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    cors: response.headers.get("access-control-allow-origin"),
    body: await response.text(),
  };
}

Deno.test({
  name: "the Hono baseline with the node's contract answers as the node does",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "edgenode-hono-contract-" });
    try {
      await Deno.mkdir(`${dir}/node`);
      await using node = await startTestNode({
        dataDir: `${dir}/node`,
        config: { apiKey: "a-bench-key-of-enough-length", discovery: { mdns: false } },
      });
      await createModel(node, MODEL_ID);
      const modelJson = await (await fetch(`${node.storeUrl}/models/${MODEL_ID}`)).text();
      const getMeJson = await (await fetch(`${node.url}/jsonrpc/v1`, rpc(getMe, json))).text();
      await Deno.writeTextFile(`${dir}/model.json`, modelJson);
      await Deno.writeTextFile(`${dir}/getme.json`, getMeJson);
      const baseline = await startJsonBaseline(dir, "honoContract");
      try {
        for (const [what, path, init] of CASES) {
          assert.deepEqual(
            await seen(`${baseline.url}${path}`, init),
            await seen(`${node.url}${path}`, init),
            what,
          );
        }
        // The preflight: the same status and origin (Hono joins the lists without spaces).
        const preflight = {
          method: "OPTIONS",
          headers: { origin: "http://a.test", "access-control-request-method": "POST" },
        };
        const [ours, theirs] = await Promise.all(
          [baseline.url, node.url].map((url) => fetch(`${url}/jsonrpc/v1`, preflight)),
        );
        await Promise.all([ours.body?.cancel(), theirs.body?.cancel()]);
        assert.equal(ours.status, theirs.status);
        assert.equal(
          ours.headers.get("access-control-allow-origin"),
          theirs.headers.get("access-control-allow-origin"),
        );
      } finally {
        await baseline.stop();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
