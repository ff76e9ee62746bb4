/**
 * A real hub (`edgenode hub`) and nodes joined to it the way users join them: associate the
 * node with an account (JSON-RPC), store an account token (PUT /token), report a GPS fix.
 *
 * @module
 */
import assert from "node:assert/strict";
import { insightClient } from "../src/sdk/clients.ts";
import { rpcCall } from "../src/sdk/json_rpc.ts";
import { doneModel, messages } from "./events.ts";
import { cliToken, type TestIssuer } from "./identity.ts";
import { nodeIdOf } from "./mesh.ts";
import {
  ggufBytes,
  LAUNCHER_PERMISSIONS,
  type ListeningProcess,
  MAIN,
  startListening,
  startTestNode,
  type TestNode,
  waitFor,
} from "./node.ts";

/** A running hub. */
export interface TestHub extends ListeningProcess {
  dataDir: string;
}

/** Starts `edgenode hub` trusting `issuer`, on `port` (a free one by default). */
export async function startTestHub(
  issuer: TestIssuer,
  dataDir: string,
  options: { port?: number; config?: Record<string, unknown> } = {},
): Promise<TestHub> {
  await Deno.mkdir(dataDir, { recursive: true });
  if (options.config) {
    await Deno.writeTextFile(`${dataDir}/hub.json`, JSON.stringify(options.config));
  }
  const process = await startListening(Deno.execPath(), [
    "run",
    ...LAUNCHER_PERMISSIONS,
    MAIN,
    "hub",
    "--host",
    "127.0.0.1",
    "--port",
    String(options.port ?? 0),
    "--data-dir",
    dataDir,
    "--trust",
    issuer.trustFile,
  ]);
  return { ...process, dataDir };
}

/** A node of an account, connected to a hub. */
export interface HubNode {
  node: TestNode;
  id: string;
  account: string;
  /** The account token the node stored. */
  token: string;
}

/** Where a node is, for updateGps. */
export interface Fix {
  latitude: number;
  longitude: number;
}

/** GET on the node's insight service with its API key. */
export function insightGet(node: TestNode, path: string): Promise<Response> {
  return fetch(`${node.url}/mesh/insight/v1${path}`, { headers: node.auth() });
}

/** The node's bep info (asserting 200). */
// deno-lint-ignore no-explicit-any
export async function infoOf(node: TestNode, types: string): Promise<any> {
  const response = await insightGet(node, `/info?types=${types}`);
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()).data;
}

/** Waits until the node reports its hub connection up. */
export async function connected(node: TestNode): Promise<void> {
  let last = "";
  await waitFor(
    async () => {
      const response = await insightGet(node, "/info?types=bep");
      last = await response.text();
      return response.ok && JSON.parse(last).data.bep.status === "success";
    },
    `the hub connection (last answer: ${last})`,
    15_000,
  );
}

/**
 * Starts a node with `hub.url` (and `config` over the test's defaults: no mDNS), associates it
 * with `account`, stores a clusters token (with `expiresAt` when given) and reports `fix`; waits
 * for the hub connection.
 */
export async function joinHub(
  hubUrl: string,
  issuer: TestIssuer,
  account: string,
  options: { name: string; fix?: Fix; expiresAt?: number; config?: Record<string, unknown> },
): Promise<HubNode> {
  const node = await startTestNode({
    args: ["--trust", issuer.trustFile],
    config: {
      apiKey: `hub-test-key-${options.name}-0123456789`,
      nodeName: options.name,
      discovery: { mdns: false },
      hub: { url: hubUrl },
      ...options.config,
    },
  });
  const connection = { url: node.url, credential: node.apiKey };
  await rpcCall(connection, "associateAccount", [
    await cliToken(issuer, account, "edge:account:associate"),
  ]);
  const token = await cliToken(issuer, account, "edge:clusters");
  const put = await insightClient(connection).PUT("/token", {
    body: { token, expiresAt: options.expiresAt },
  });
  assert.equal(put.response.status, 200, JSON.stringify(put.error));
  if (options.fix) {
    await rpcCall(connection, "updateGps", [
      token,
      String(options.fix.longitude),
      String(options.fix.latitude),
      "0",
      "0",
    ]);
  }
  await connected(node);
  return { node, id: await nodeIdOf(node), account, token };
}

/** The ids a node lists for `type` (asserting 200). */
export async function listedIds(node: TestNode, type: string): Promise<string[]> {
  const response = await insightGet(node, `/nodes?type=${type}`);
  assert.equal(response.status, 200, await response.clone().text());
  return (await response.json()).data.map((n: { id: string }) => n.id);
}

/**
 * A fetch to `to` through its tunnel (its sep address), as `from`'s account token: the path
 * is below the node's own API.
 */
export async function viaTunnel(
  from: HubNode,
  to: HubNode,
): Promise<(path: string, init?: RequestInit) => Promise<Response>> {
  const sep = (await infoOf(to.node, "sep")).sep;
  assert.equal(sep.status, "success");
  const headers = { ...sep.headers, Authorization: `Bearer ${from.token}` };
  return (path, init = {}) =>
    fetch(`${sep.url}${path}`, { ...init, headers: { ...headers, ...init.headers } });
}

/** Sends `count` pings through `via` at once; each must come back from node `id`. */
export async function expectPings(
  via: (path: string) => Promise<Response>,
  id: string,
  count = 200,
): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: count }, () => via("/mds/v1/nodes?ping=true")),
  );
  for (const answer of answers) {
    assert.equal(answer.status, 200);
    assert.equal((await answer.json()).data.id, id);
  }
}

/** A fetch of some node's API, through a hub (as `viaTunnel` returns). */
export type Through = (path: string, init?: RequestInit) => Promise<Response>;

/** Creates model `id` on the node behind `through`. */
export async function createModelThrough(through: Through, id: string): Promise<void> {
  const created = await through("/ai/store/v1/models", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ id, version: "1", kind: "llm" }),
  });
  assert.equal(created.status, 201, await created.text());
}

/**
 * Downloads a slow 400 KB source into a new model through `through`, and asserts that its SSE
 * progress arrives as produced (several events, spread over 300 ms or more), not all at the end.
 */
export async function expectLiveProgress(
  through: Through,
  files: { serve(path: string, bytes: Uint8Array, options: { bytesPerSecond: number }): string },
): Promise<void> {
  const source = files.serve("/slow.gguf", ggufBytes(400_000), { bytesPerSecond: 400_000 });
  await createModelThrough(through, "slow");
  const started = Date.now();
  const stream = await through("/ai/store/v1/models/slow/download", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ url: source }),
  });
  const arrivals: number[] = [];
  const all = [];
  for await (const message of messages(stream)) {
    arrivals.push(Date.now() - started);
    all.push(message);
  }
  assert.equal(doneModel(all).readyToUse, true);
  assert.ok(arrivals.length >= 3, `only ${arrivals.length} events`);
  assert.ok(arrivals.at(-1)! - arrivals[0] >= 300, `events came at once: ${arrivals}`);
}
