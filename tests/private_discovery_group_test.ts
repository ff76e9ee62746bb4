/**
 * Test nodes join a private discovery group: on the default mDNS port (5353) they would reach a
 * user's node on the same machine or LAN, whose log then names every one of them (issue 40).
 */
import assert from "node:assert/strict";
import { startTestNode, withPrivateGroup, withTempDir } from "../testing/node.ts";

const DEFAULT_MDNS_PORT = 5353;

async function discoveryOf(dataDir: string): Promise<{ port?: number; mdns?: boolean }> {
  const config = JSON.parse(await Deno.readTextFile(`${dataDir}/config.json`));
  return config.discovery ?? {};
}

Deno.test("a test node without a config gets a private mDNS port", async () => {
  await using node = await startTestNode();
  const { port } = await discoveryOf(node.dataDir);
  assert.ok(port !== undefined && port !== DEFAULT_MDNS_PORT, `port ${port}`);
  // The node announces there: its own listing works as before.
  assert.equal((await fetch(`${node.url}/mds/v1/nodes?ping=true`)).status, 200);
});

Deno.test("a test's own empty data directory gets a private mDNS port too", () =>
  withTempDir(async (dataDir) => {
    await using node = await startTestNode({ dataDir });
    const { port } = await discoveryOf(dataDir);
    assert.ok(port !== undefined && port !== DEFAULT_MDNS_PORT, `port ${port}`);
    assert.equal((await fetch(`${node.url}/mds/v1/nodes?ping=true`)).status, 200);
  }));

Deno.test("a test node's config without a discovery port gets a private one", async () => {
  await using node = await startTestNode({ config: { apiKey: "a-test-key-of-enough-length" } });
  const { port } = await discoveryOf(node.dataDir);
  assert.ok(port !== undefined && port !== DEFAULT_MDNS_PORT, `port ${port}`);
});

Deno.test("a test's own discovery settings are kept", () => {
  const config = withPrivateGroup({ discovery: { port: 40000, mdns: false } });
  assert.deepEqual(config.discovery, { port: 40000, mdns: false });
  const partial = withPrivateGroup({ discovery: { peers: ["http://127.0.0.1:1"] } });
  const discovery = partial.discovery as { port: number; peers: string[] };
  assert.deepEqual(discovery.peers, ["http://127.0.0.1:1"]);
  assert.notEqual(discovery.port, DEFAULT_MDNS_PORT);
});
