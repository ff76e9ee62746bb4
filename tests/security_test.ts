/**
 * The security review, as tests: credentials on every route that changes something, the key
 * comparison's timing, the modes of the data directory's secrets, and files served only from
 * where they belong. (Elsewhere: tunnel and discovery inputs are authenticated in hub_test.ts and
 * discovery_test.ts, and a microservice cannot reach the node's secrets in mcm_sandbox_test.ts.)
 */
import assert from "node:assert/strict";
import { dashboardRoutes } from "../gen/dashboard/routes.ts";
import { insightRoutes } from "../gen/insight/routes.ts";
import { mcmRoutes } from "../gen/mcm/routes.ts";
import { storeRoutes } from "../gen/store/routes.ts";
import { secretsEqual } from "../src/http/auth.ts";
import type { RouteSpec } from "../src/http/routes.ts";
import { rpcCall } from "../src/sdk/json_rpc.ts";
import { cliToken, makeIssuer } from "../testing/identity.ts";
import {
  ggufBytes,
  listFiles,
  startTestNode,
  type TestNode,
  withTempDir,
} from "../testing/node.ts";
import { readyModel } from "./helpers/store.ts";

const KEY = "a-security-test-key-of-enough-length";

/** Every route of the node's services under its default prefix. */
const ROUTES: { prefix: string; routes: Record<string, RouteSpec>; wrongKey: number }[] = [
  { prefix: "/ai/store/v1", routes: storeRoutes, wrongKey: 403 },
  { prefix: "/mesh/insight/v1", routes: insightRoutes, wrongKey: 401 },
  { prefix: "", routes: mcmRoutes, wrongKey: 403 },
  { prefix: "", routes: dashboardRoutes, wrongKey: 403 },
];

function urlOf(node: TestNode, prefix: string, route: RouteSpec): string {
  return `${node.url}${prefix}${route.path.replace(/:\w+/g, "m")}`;
}

async function statusOf(url: string, method: string, authorization?: string): Promise<number> {
  const response = await fetch(url, {
    method,
    headers: authorization ? { Authorization: authorization } : {},
  });
  await response.body?.cancel();
  return response.status;
}

Deno.test("every route that changes something refuses missing and wrong credentials", async () => {
  await using node = await startTestNode({
    config: { apiKey: KEY, discovery: { mdns: false }, readsRequireKey: true },
  });
  await readyModel(node, "m", ggufBytes(100));
  let checked = 0;
  for (const { prefix, routes, wrongKey } of ROUTES) {
    for (const [operation, route] of Object.entries(routes)) {
      // With readsRequireKey, reads need the key too: every route is checked.
      const url = urlOf(node, prefix, route);
      const what = `${operation} ${route.method} ${url}`;
      assert.equal(await statusOf(url, route.method), 401, `${what} without a key`);
      const wrong = await statusOf(url, route.method, `Bearer ${KEY.slice(0, -1)}X`);
      assert.equal(wrong, wrongKey, `${what} with a wrong key`);
      const basic = await statusOf(url, route.method, "Basic a2V5");
      assert.ok(basic === 401 || basic === 403, `${what} with Basic: ${basic}`);
      checked++;
    }
  }
  assert.equal(checked, 28, "every route of the four services");
  // The one exception, by design: peers must reach the ping without the key.
  assert.equal(await statusOf(`${node.url}/mds/v1/nodes?ping=true`, "GET"), 200);
});

Deno.test("the key comparison takes as long wherever the keys differ", () => {
  const key = "k".repeat(43);
  const early = `X${key.slice(1)}`;
  const late = `${key.slice(0, -1)}X`;
  const short = "k";
  const candidates = [early, late, short, key];
  const time = (given: string) => {
    const start = performance.now();
    for (let i = 0; i < 10_000; i++) secretsEqual(given, key);
    return performance.now() - start;
  };
  // Rounds interleave the candidates, so that the machine's own ups and downs fall on all alike;
  // each one's median round is compared.
  const rounds: number[][] = candidates.map(() => []);
  for (let round = 0; round < 15; round++) {
    candidates.forEach((given, i) => rounds[i].push(time(given)));
  }
  const medians = rounds.map((times) => times.sort((a, b) => a - b)[7]);
  const spread = Math.max(...medians) / Math.min(...medians);
  assert.ok(
    spread < 1.5,
    `medians ${medians.map((t) => t.toFixed(1))} ms differ ${spread.toFixed(2)}×`,
  );
  assert.equal(secretsEqual(key, key), true);
  assert.equal(secretsEqual(late, key), false);
});

Deno.test("the data directory's secrets are readable by their owner only", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    await using node = await startTestNode({
      args: ["--trust", issuer.trustFile],
      config: { apiKey: KEY, discovery: { mdns: false } },
    });
    // Make the node hold every kind of secret: its key, an account, a stored account token.
    const connection = { url: node.url, credential: KEY };
    await rpcCall(connection, "associateAccount", [
      await cliToken(issuer, "acct-s", "edge:account:associate"),
    ]);
    const put = await fetch(`${node.url}/mesh/insight/v1/token`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" },
      body: JSON.stringify({ token: await cliToken(issuer, "acct-s", "edge:clusters") }),
    });
    assert.equal(put.status, 200, await put.text());
    const modes: Record<string, string> = {};
    for (
      const file of ["config.json", "identity/node-key.json", "edgenode.db", "edgenode.db-wal"]
    ) {
      modes[file] = ((await Deno.stat(`${node.dataDir}/${file}`)).mode! & 0o777).toString(8);
    }
    modes["(data dir)"] = ((await Deno.stat(node.dataDir)).mode! & 0o777).toString(8);
    modes["(issuer key)"] = ((await Deno.stat(`${issuer.dir}/issuer-key.json`)).mode! & 0o777)
      .toString(8);
    assert.deepEqual(modes, {
      "config.json": "600",
      "identity/node-key.json": "600",
      "edgenode.db": "600",
      "edgenode.db-wal": "600",
      "(data dir)": "700",
      "(issuer key)": "600",
    });
  }));

Deno.test("no route serves a file from outside its folder", async () => {
  await using node = await startTestNode({ config: { apiKey: KEY, discovery: { mdns: false } } });
  await readyModel(node, "m", ggufBytes(100));
  const config = await Deno.readTextFile(`${node.dataDir}/config.json`);
  const served = async (path: string) => {
    const response = await fetch(`${node.url}${path}`, { headers: node.auth() });
    const text = await response.text();
    assert.ok(!text.includes(KEY), `${path} served the config`);
    return response.status;
  };
  for (
    const path of [
      "/ai/store/v1/models/..%2fconfig.json?alt=media",
      "/ai/store/v1/models/%2e%2e%2f%2e%2e%2fconfig.json?alt=media",
      "/ai/store/v1/models/m%2f..%2f..%2fconfig.json?alt=media",
      "/ai/store/v1/models/%252e%252e%252fconfig.json?alt=media",
      "/ai/store/v1/models/..?alt=media",
      "/ai/store/v1/models/../../config.json?alt=media",
      "/dashboard/assets/..%2f..%2fconfig.json",
      "/dashboard/assets/%2e%2e%2fconfig.json",
      "/dashboard/assets/constructor",
      "/dashboard/assets/__proto__",
    ]
  ) {
    const status = await served(path);
    assert.ok(status === 400 || status === 404, `${path}: ${status}`);
  }
  // A link planted in place of the model's file, and in place of its folder.
  const [file] = (await listFiles(`${node.dataDir}/models/m`)).filter((f) => !f.startsWith("."));
  await Deno.remove(`${node.dataDir}/models/m/${file}`);
  await Deno.symlink(`${node.dataDir}/config.json`, `${node.dataDir}/models/m/${file}`);
  assert.equal(await served("/ai/store/v1/models/m?alt=media"), 404);
  await Deno.remove(`${node.dataDir}/models/m`, { recursive: true });
  await Deno.mkdir(`${node.dataDir}/elsewhere`);
  await Deno.writeTextFile(`${node.dataDir}/elsewhere/${file}`, config);
  await Deno.symlink(`${node.dataDir}/elsewhere`, `${node.dataDir}/models/m`);
  assert.equal(await served("/ai/store/v1/models/m?alt=media"), 404);
});

Deno.test("oversized request headers are refused before any handler, and the node keeps serving", async () => {
  await using node = await startTestNode();
  // Deno's HTTP server (hyper) refuses headers beyond about 64 KiB with an empty 400 before a
  // handler runs, and offers no hook to answer 431 (spec/common.yaml says so).
  const huge = await fetch(`${node.storeUrl}/models`, {
    headers: { "X-Big": "a".repeat(100 * 1024) },
  }).then((response) => response.status, (error: Error) => error.message);
  assert.ok(
    huge === 400 || huge === 431 || /connection|closed|reset/i.test(String(huge)),
    `${huge}`,
  );
  const after = await fetch(`${node.storeUrl}/models`);
  assert.equal(after.status, 200);
  await after.body?.cancel();
});

Deno.test("local-only routes refuse tunnelled requests however the path is spelled", async () => {
  await using node = await startTestNode();
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getEdgeIdToken" });
  // x-edge-via is what the hub sets on every tunnelled request (spec/hub.yaml).
  for (const path of ["/jsonrpc/v1", "//jsonrpc/v1", "/jsonrpc//v1/", "//mcm//v1/images"]) {
    const response = await fetch(`${node.url}${path}`, {
      method: path.includes("mcm") ? "GET" : "POST",
      headers: { "x-edge-via": "hub", "Content-Type": "application/json" },
      body: path.includes("mcm") ? undefined : body,
    });
    assert.equal(response.status, 403, path);
    assert.match((await response.json()).error.message, /local callers only/, path);
  }
  const local = await fetch(`${node.url}//jsonrpc/v1`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body,
  });
  assert.equal(local.status, 200, "a local caller may spell it so");
  await local.body?.cancel();
});
