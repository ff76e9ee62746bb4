/**
 * The hub (spec/hub.yaml) with real processes: one hub and three nodes of two accounts, with
 * fixes near and far. Listings, bep and sep, tunnels (a GET, a 50 MB upload and download, an SSE
 * stream), the refusals, token expiry and a hub restart.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { DatabaseSync } from "node:sqlite";
import { startFileServer } from "../testing/file_server.ts";
import {
  connected,
  expectLiveProgress,
  type HubNode,
  infoOf,
  insightGet,
  joinHub,
  listedIds,
  startTestHub,
  type TestHub,
} from "../testing/hub.ts";
import { cliToken, makeIssuer, type TestIssuer } from "../testing/identity.ts";
import { ggufBytes, runEdgenode, sha256Hex, waitFor, withTempDir } from "../testing/node.ts";

const VANCOUVER = { latitude: 49.2827, longitude: -123.1207 };
const GASTOWN = { latitude: 49.2844, longitude: -123.1089 }; // ~0.9 km away
const TORONTO = { latitude: 43.6532, longitude: -79.3832 }; // ~3,360 km away

interface Sep {
  nodeId: string;
  url: string;
  headers: Record<string, string>;
  status: string;
}

/** A request through the hub to the node of `sep`, with `token` as the credential. */
function through(sep: Sep, token: string, path: string, init: RequestInit = {}) {
  return fetch(`${sep.url}${path}`, {
    ...init,
    headers: { ...sep.headers, Authorization: `Bearer ${token}`, ...init.headers },
  });
}

async function expectHubError(response: Response, status: number, message: RegExp) {
  const body = await response.json();
  assert.equal(response.status, status, JSON.stringify(body));
  assert.equal(body.statusCode, status);
  assert.match(body.message, message);
}

async function withMesh(
  run: (mesh: { issuer: TestIssuer; hub: TestHub; dir: string }) => Promise<void>,
) {
  await withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const hub = await startTestHub(issuer, `${dir}/hub`);
    try {
      await run({ issuer, hub, dir });
    } finally {
      await hub.stop();
    }
  });
}

async function stopAll(nodes: HubNode[]) {
  await Promise.all(nodes.map((n) => n.node.stop()));
}

Deno.test("hub: account and proximity listings, bep and sep, tunnels and their refusals", () =>
  withMesh(async ({ issuer, hub }) => {
    const a1 = await joinHub(hub.url, issuer, "acct-a", { name: "a1", fix: VANCOUVER });
    const a2 = await joinHub(hub.url, issuer, "acct-a", { name: "a2", fix: TORONTO });
    const b1 = await joinHub(hub.url, issuer, "acct-b", { name: "b1", fix: GASTOWN });
    try {
      // account: the caller first, then its account's other nodes; never another account's
      await waitFor(async () => (await listedIds(a1.node, "account")).length === 2, "a2 listed");
      assert.deepEqual(await listedIds(a1.node, "account"), [a1.id, a2.id]);
      assert.deepEqual(await listedIds(b1.node, "account"), [b1.id]);
      const own = (await (await insightGet(a1.node, "/nodes?type=account")).json()).data[1];
      assert.deepEqual(Object.keys(own).sort(), [
        "accountId",
        "addresses",
        "id",
        "name",
        "os",
        "services",
      ]);
      assert.ok(own.addresses.some((a: { type: string }) => a.type === "proxy"));

      // proximity: within 10 km by distance (a2 is far), another account's node without services
      await waitFor(
        async () =>
          (await listedIds(b1.node, "proximity")).length === 2 &&
          (await listedIds(a2.node, "proximity")).length === 1,
        "every fix at the hub (until then, nodes behind one address are all near)",
      );
      assert.deepEqual(await listedIds(a1.node, "proximity"), [a1.id, b1.id]);
      assert.deepEqual(await listedIds(b1.node, "proximity"), [b1.id, a1.id]);
      assert.deepEqual(await listedIds(a2.node, "proximity"), [a2.id]);
      const stranger = (await (await insightGet(a1.node, "/nodes?type=proximity")).json()).data[1];
      assert.equal(stranger.accountId, "acct-b");
      assert.deepEqual(stranger.services, []);
      assert.ok(!stranger.addresses.some((a: { type: string }) => a.type === "proxy"));

      // bep and sep
      const { bep, sep } = await infoOf(a2.node, "bep,sep");
      assert.deepEqual(bep, { url: hub.url, status: "success" });
      assert.equal(sep.nodeId, a2.id);
      assert.equal(sep.url, hub.url);
      assert.equal(sep.status, "success");
      assert.equal(sep.headers["x-edge-port"], new URL(a2.node.url).port);
      assert.equal(
        JSON.parse(Buffer.from(sep.headers["x-edge-routing"], "base64").toString()).nodeId,
        a2.id,
      );

      // a GET through the tunnel answers what the node answers directly
      const direct = await (await fetch(`${a2.node.url}/mesh/insight/v1/info?types=self`, {
        headers: a2.node.auth(),
      })).json();
      const tunnelled = await through(sep, a1.token, "/mesh/insight/v1/info?types=self");
      assert.equal(tunnelled.status, 200);
      assert.deepEqual(await tunnelled.json(), direct);
      // A client written for the reference: its header names and its insight path.
      const reference = await through(
        {
          ...sep,
          headers: {
            "x-mimik-port": sep.headers["x-edge-port"],
            "x-mimik-routing": sep.headers["x-edge-routing"],
          },
        },
        a1.token,
        "/mimik-mesh/insight/v1/info?types=self",
      );
      assert.equal(reference.status, 200);
      assert.deepEqual(await reference.json(), direct);

      // a 50 MB upload and download, streamed both ways; the account token stands for the key
      const bytes = ggufBytes(50 * 1024 * 1024);
      const created = await through(sep, a1.token, "/ai/store/v1/models", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id: "big", version: "1", kind: "llm" }),
      });
      assert.equal(created.status, 201, await created.text());
      const uploaded = await through(sep, a1.token, "/ai/store/v1/models/big/upload", {
        method: "POST",
        headers: { "Content-Type": "application/octet-stream" },
        body: bytes as BodyInit,
      });
      assert.equal(uploaded.status, 200, await uploaded.text());
      const stored = await fetch(`${a2.node.storeUrl}/models/big?alt=media`);
      assert.equal(
        await sha256Hex(new Uint8Array(await stored.arrayBuffer())),
        await sha256Hex(bytes),
      );
      const back = await through(sep, a1.token, "/ai/store/v1/models/big?alt=media");
      assert.equal(back.headers.get("content-length"), String(bytes.length));
      assert.equal(
        await sha256Hex(new Uint8Array(await back.arrayBuffer())),
        await sha256Hex(bytes),
      );

      // an SSE stream comes through as it is produced
      await using files = startFileServer();
      await expectLiveProgress((path, init) => through(sep, a1.token, path, init), files);

      // refusals
      await expectHubError(
        await fetch(`${sep.url}/jsonrpc/v1`, { method: "POST", headers: sep.headers }),
        401,
        /Bearer/,
      );
      const rpcThrough = await through(sep, a1.token, "/jsonrpc/v1", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getMe" }),
      });
      assert.equal(rpcThrough.status, 403, "JSON-RPC is for local callers only");
      const b1Sep: Sep = (await infoOf(b1.node, "sep")).sep;
      await expectHubError(
        await through(b1Sep, a1.token, "/mesh/insight/v1/info?types=self"),
        403,
        /does not own/,
      );
      const forged = Buffer.from(JSON.stringify({ nodeId: b1.id, localLinkNetworkId: "x" }))
        .toString("base64");
      await expectHubError(
        await through(
          { ...sep, headers: { ...sep.headers, "x-edge-routing": forged } },
          a1.token,
          "/",
        ),
        403,
        /does not own/,
      );
      await expectHubError(
        await through(
          { ...sep, headers: { ...sep.headers, "x-edge-routing": "%%%" } },
          a1.token,
          "/",
        ),
        400,
        /routing header/,
      );
      const nobody = Buffer.from(JSON.stringify({ nodeId: "0".repeat(56) })).toString("base64");
      await expectHubError(
        await through(
          { ...sep, headers: { ...sep.headers, "x-edge-routing": nobody } },
          a1.token,
          "/",
        ),
        404,
        /not connected/,
      );
      const associateOnly = await cliToken(issuer, "acct-a", "edge:account:associate");
      await expectHubError(await through(sep, associateOnly, "/"), 403, /scope/);
      // a local caller claiming to come through the hub only loses
      const claimed = await fetch(`${a2.node.url}/jsonrpc/v1`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "x-edge-via": "hub" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getMe" }),
      });
      assert.equal(claimed.status, 403);
      await claimed.body?.cancel();
    } finally {
      await stopAll([a1, a2, b1]);
    }
  }));

Deno.test("hub: an expired token cuts the node off; nodes reconnect after a hub restart", () =>
  withMesh(async ({ issuer, hub: first, dir }) => {
    const a1 = await joinHub(first.url, issuer, "acct-a", { name: "a1", fix: VANCOUVER });
    const a2 = await joinHub(first.url, issuer, "acct-a", {
      name: "a2",
      expiresAt: Math.floor(Date.now() / 1000) + 4,
    });
    try {
      assert.deepEqual(await listedIds(a1.node, "account"), [a1.id, a2.id]);
      // a2's token expires: the hub drops it, and its account-scoped answers become 403
      await waitFor(async () => (await listedIds(a1.node, "account")).length === 1, "a2 gone");
      for (const path of ["/nodes?type=account", "/info?types=bep,sep"]) {
        const response = await insightGet(a2.node, path);
        assert.equal(response.status, 403, path);
        assert.match((await response.json()).message, /expired/);
      }

      // the hub restarts on its port and data; a1 comes back by itself
      const port = Number(new URL(first.url).port);
      await first.stop();
      const remembered = new DatabaseSync(`${first.dataDir}/hub.db`);
      const fix = remembered.prepare("SELECT fix FROM hub_nodes WHERE id = ?").get(a1.id);
      const accounts = remembered.prepare("SELECT id FROM hub_accounts ORDER BY id").all();
      remembered.close();
      assert.equal(JSON.parse(String(fix?.fix)).latitude, VANCOUVER.latitude);
      assert.deepEqual(accounts.map((row) => row.id), ["acct-a"]);
      const down = await insightGet(a1.node, "/nodes?type=account");
      assert.equal(down.status, 503);
      assert.match((await down.json()).message, /not connected/);
      const second = await startTestHub(issuer, `${dir}/hub`, { port });
      try {
        await connected(a1.node);
        assert.deepEqual(await listedIds(a1.node, "account"), [a1.id]);
        assert.deepEqual(await listedIds(a1.node, "proximity"), [a1.id]);
      } finally {
        await second.stop();
      }
    } finally {
      await stopAll([a1, a2]);
    }
  }));

Deno.test("hub: narrow permissions; no trusted issuer or a bad flag exits 2", () =>
  withTempDir(async (dir) => {
    const untrusting = await runEdgenode(["hub", "--data-dir", `${dir}/lonely`, "--port", "0"]);
    assert.equal(untrusting.code, 2);
    assert.match(untrusting.stderr, /trusts no token issuer.*--trust/);
    const badUrl = await runEdgenode(["hub", "--data-dir", dir, "--public-url", "ftp://x/y"]);
    assert.equal(badUrl.code, 2);
    assert.match(badUrl.stderr, /--public-url must be a base URL/);

    const issuer = await makeIssuer(`${dir}/issuer`);
    const hub = await startTestHub(issuer, `${dir}/hub`);
    try {
      const ps = await new Deno.Command("ps", {
        args: ["-o", "args=", "-p", String(hub.pid)],
        stdout: "piped",
      }).output();
      const args = new TextDecoder().decode(ps.stdout).trim().split(" ");
      const dataDir = await Deno.realPath(`${dir}/hub`);
      assert.ok(args.includes(`--allow-write=${dataDir}`), args.join(" "));
      assert.ok(args.includes("--allow-net=127.0.0.1"), args.join(" "));
      for (const broad of ["-A", "--allow-all", "--allow-run", "--allow-read", "--allow-net"]) {
        assert.ok(!args.includes(broad), `the hub has ${broad}`);
      }
      const health = await fetch(`${hub.url}/hub/v1/health`);
      assert.deepEqual(await health.json(), { status: "ok", nodes: 0 });
      const plain = await fetch(`${hub.url}/hub/v1/connect`);
      assert.equal(plain.status, 400);
      assert.match((await plain.json()).message, /WebSocket/);
    } finally {
      await hub.stop();
    }
  }));
