/**
 * Hub clusters (spec/hub.yaml, "Hub clusters") with real processes: nats-server from Debian,
 * three `edgenode hub --nats` processes, nodes spread over them, and HAProxy in front where the
 * test needs a balancer. Listings alike from every hub, tunnels across hubs (50 MB both ways,
 * an SSE stream), forged routing data refused, a hub killed mid-tunnel, NATS restarted.
 */
import assert from "node:assert/strict";
import { messages } from "../testing/events.ts";
import { startFileServer } from "../testing/file_server.ts";
import {
  createModelThrough,
  expectLiveProgress,
  type HubNode,
  infoOf,
  joinHub,
  listedIds,
  startTestHub,
  type TestHub,
} from "../testing/hub.ts";
import { startTestNats } from "../testing/nats.ts";
import {
  clusterUp,
  healthOf,
  hubIdOf,
  startCluster,
  type TestCluster,
} from "../testing/hub_cluster.ts";
import { startBalancer } from "../testing/balancer.ts";
import { makeIssuer, type TestIssuer } from "../testing/identity.ts";
import { ggufBytes, runEdgenode, sha256Hex, waitFor, withTempDir } from "../testing/node.ts";

const VANCOUVER = { latitude: 49.2827, longitude: -123.1207 };
const GASTOWN = { latitude: 49.2844, longitude: -123.1089 };

/** A request for `to`'s node sent to `hub` (any hub of the cluster), as `from`'s account. */
async function via(hub: { url: string }, from: HubNode, to: HubNode) {
  const sep = (await infoOf(to.node, "sep")).sep;
  return (path: string, init: RequestInit = {}) =>
    fetch(`${hub.url}${path}`, {
      ...init,
      headers: { ...sep.headers, Authorization: `Bearer ${from.token}`, ...init.headers },
    });
}

async function withCluster(
  count: number,
  run: (cluster: TestCluster, issuer: TestIssuer, dir: string) => Promise<void>,
): Promise<void> {
  await withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const cluster = await startCluster(issuer, dir, count);
    if ("skip" in cluster) return console.log(`skipped: ${cluster.skip}`);
    await using _cluster = cluster;
    await run(cluster, issuer, dir);
  });
}

async function stopAll(nodes: HubNode[]) {
  await Promise.all(nodes.map((n) => n.node.stop()));
}

Deno.test("hub cluster: listings alike from every hub, tunnels across hubs, forgeries refused", () =>
  withCluster(3, async ({ hubs: [h1, h2, h3], natsClient }, issuer) => {
    const a1 = await joinHub(h1.url, issuer, "acct-a", { name: "a1", fix: VANCOUVER });
    const a2 = await joinHub(h2.url, issuer, "acct-a", { name: "a2", fix: GASTOWN });
    const b1 = await joinHub(h3.url, issuer, "acct-b", { name: "b1", fix: VANCOUVER });
    try {
      // listings: each node's own hub answers with the nodes of all three
      await waitFor(
        async () => (await listedIds(a1.node, "account")).length === 2,
        "a2 (on hub 2) in a1's account listing (hub 1)",
      );
      assert.deepEqual(await listedIds(a1.node, "account"), [a1.id, a2.id]);
      assert.deepEqual(await listedIds(a2.node, "account"), [a2.id, a1.id]);
      assert.deepEqual(await listedIds(b1.node, "account"), [b1.id]);
      assert.deepEqual(await listedIds(b1.node, "proximity"), [b1.id, a1.id, a2.id]);
      // a1 and b1 share a fix: equally near, by id
      assert.deepEqual(await listedIds(a2.node, "proximity"), [a2.id, ...[a1.id, b1.id].sort()]);

      // a request for a2 (hub 2) sent to hub 1 and to hub 3
      for (const hub of [h1, h3]) {
        const ping = await (await via(hub, a1, a2))("/mds/v1/nodes?ping=true");
        assert.equal(ping.status, 200);
        assert.equal((await ping.json()).data.id, a2.id);
      }

      // 50 MB up and down across hubs, streamed, bytes intact
      const through = await via(h1, a1, a2);
      const bytes = ggufBytes(50 * 1024 * 1024);
      await createModelThrough(through, "big");
      const uploaded = await through("/ai/store/v1/models/big/upload", {
        method: "POST",
        headers: { "Content-Type": "application/octet-stream" },
        body: bytes as BodyInit,
      });
      assert.equal(uploaded.status, 200, await uploaded.text());
      const back = await (await via(h3, a1, a2))("/ai/store/v1/models/big?alt=media");
      assert.equal(back.headers.get("content-length"), String(bytes.length));
      assert.equal(
        await sha256Hex(new Uint8Array(await back.arrayBuffer())),
        await sha256Hex(bytes),
      );

      // an SSE stream across hubs arrives as it is produced
      await using files = startFileServer();
      await expectLiveProgress(through, files);

      // a client that goes away mid-stream: the cancel crosses both hubs to the node, which
      // stops reading its source
      const endless = files.serve("/endless.gguf", ggufBytes(8 * 1024 * 1024), {
        bytesPerSecond: 256 * 1024,
      });
      await createModelThrough(through, "endless");
      const client = new AbortController();
      const leaving = await through("/ai/store/v1/models/endless/download", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ url: endless }),
        signal: client.signal,
      });
      await messages(leaving).next();
      client.abort();
      await waitFor(() => files.abandoned === 1, "the node to stop reading the source");

      // another account's token, sent to another hub, is refused as on one hub
      const stranger = await (await via(h1, b1, a2))("/mds/v1/nodes?ping=true");
      assert.equal(stranger.status, 403, await stranger.text());

      // a mark that no hub of the cluster signed
      const sep = (await infoOf(a2.node, "sep")).sep;
      const forgedMark = await fetch(`${h2.url}/mds/v1/nodes?ping=true`, {
        headers: {
          ...sep.headers,
          Authorization: `Bearer ${b1.token}`,
          "x-edge-hub-forward": `${"0".repeat(32)}.${Date.now()}.AAAA`,
          "x-edge-hub-client": "203.0.113.9",
        },
      });
      assert.equal(forgedMark.status, 403);
      assert.match((await forgedMark.json()).message, /not signed by a hub of this cluster/);

      // presence written with NATS credentials but without the cluster key is ignored: a2
      // "moved" to account b on a hub of the forger's, and a1 offered to account b
      const nats = await natsClient();
      try {
        const { Kvm } = await import("@nats-io/kv");
        const kv = await new Kvm(nats).open("edgenode_nodes");
        const real = (await kv.get(a2.id))!.string();
        const record = JSON.parse(real.slice(real.indexOf(".") + 1));
        record.entry.node.accountId = "acct-b";
        record.hub = "f".repeat(32);
        await kv.put(a2.id, `AAAA.${JSON.stringify(record)}`);
        const hubs = await new Kvm(nats).open("edgenode_hubs");
        await hubs.put(
          "f".repeat(32),
          JSON.stringify({ id: "f".repeat(32), url: "http://127.0.0.1:9" }),
        );
      } finally {
        await nats.close();
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.deepEqual(await listedIds(b1.node, "account"), [b1.id], "b1 sees no forged node");
      assert.equal((await (await via(h1, b1, a2))("/mds/v1/nodes?ping=true")).status, 403);
      // a2's own hub wrote its real record again, and a2 is still routed to from the others
      const afterForgery = await (await via(h3, a1, a2))("/mds/v1/nodes?ping=true");
      assert.equal(afterForgery.status, 200);
      assert.equal((await afterForgery.json()).data.id, a2.id);
      const rewritten = await natsClient();
      try {
        assert.equal(await hubIdOf(rewritten, a2.id), (await healthOf(h2)).cluster.hubId);
      } finally {
        await rewritten.close();
      }
    } finally {
      await stopAll([a1, a2, b1]);
    }
  }));

Deno.test("hub cluster: NATS down, hubs serve their own nodes and say so; NATS back, it heals", () =>
  withCluster(2, async ({ nats, hubs: [h1, h2] }, issuer) => {
    const a1 = await joinHub(h1.url, issuer, "acct-a", { name: "a1" });
    const a2 = await joinHub(h2.url, issuer, "acct-a", { name: "a2" });
    try {
      await waitFor(async () => (await listedIds(a1.node, "account")).length === 2, "a2 listed");
      const toA2 = await via(h1, a1, a2);
      const toA1 = await via(h1, a2, a1);
      assert.equal((await toA2("/mds/v1/nodes?ping=true")).status, 200);

      await nats.kill();
      await waitFor(async () => (await healthOf(h1)).cluster.status === "down", "hub 1 down");
      const health = await healthOf(h1);
      assert.match(health.cluster.message, /cross-hub routing is down/);
      const own = await toA1("/mds/v1/nodes?ping=true");
      assert.equal(own.status, 200, "hub 1 still serves its own node");
      assert.equal((await own.json()).data.id, a1.id);
      const other = await toA2("/mds/v1/nodes?ping=true");
      assert.equal(other.status, 503);
      assert.match((await other.json()).message, /cross-hub routing is down/);
      assert.deepEqual(await listedIds(a1.node, "account"), [a1.id]);

      await nats.start();
      await clusterUp(h1, 1);
      await clusterUp(h2, 1);
      const healed = await toA2("/mds/v1/nodes?ping=true");
      assert.equal(healed.status, 200, await healed.clone().text());
      assert.equal((await healed.json()).data.id, a2.id);
      assert.deepEqual(await listedIds(a1.node, "account"), [a1.id, a2.id]);
    } finally {
      await stopAll([a1, a2]);
    }
  }));

Deno.test("hub cluster: a hub killed mid-tunnel; its nodes are reachable through another in 5 s", () =>
  withCluster(3, async ({ hubs, natsClient }, issuer, dir) => {
    await Deno.mkdir(`${dir}/lb`);
    const balancer = await startBalancer(
      hubs.map((hub) => Number(new URL(hub.url).port)),
      `${dir}/lb`,
    );
    if ("skip" in balancer) return console.log(`skipped: ${balancer.skip}`);
    await using _balancer = balancer;
    const nodes: HubNode[] = [];
    try {
      for (const name of ["n1", "n2", "n3"]) {
        nodes.push(await joinHub(balancer.url, issuer, "acct-a", { name }));
      }
      const nats = await natsClient();
      const held = new Map<string, TestHub>();
      for (const hub of hubs) held.set((await healthOf(hub)).cluster.hubId, hub);
      const target = nodes[0];
      const hubId = await hubIdOf(nats, target.id);
      await nats.close();
      const victim = held.get(hubId!)!;
      assert.ok(victim, `node ${target.id} is on hub ${hubId}`);
      const survivor = hubs.find((hub) => hub !== victim)!;

      // a slow download of the target's model through a surviving hub
      const through = await via(survivor, nodes[1], target);
      await createModelThrough(through, "m");
      const upload = await through("/ai/store/v1/models/m/upload", {
        method: "POST",
        headers: { "Content-Type": "application/octet-stream" },
        body: ggufBytes(32 * 1024 * 1024) as BodyInit,
      });
      assert.equal(upload.status, 200, await upload.text());
      const download = await through("/ai/store/v1/models/m?alt=media");
      assert.equal(download.status, 200);
      const reader = download.body!.getReader();
      await reader.read();

      const killed = Date.now();
      await victim.crash();
      const broken = await (async () => {
        try {
          while (!(await reader.read()).done);
          return false;
        } catch {
          return true;
        }
      })();
      assert.ok(broken, "the interrupted download ends in an error, not a short success");

      const ping = await via(balancer, nodes[1], target);
      await waitFor(
        async () => {
          const answer = await ping("/mds/v1/nodes?ping=true").catch(() => undefined);
          await answer?.body?.cancel();
          return answer?.status === 200;
        },
        "the target reachable again through the balancer",
        10_000,
      );
      const back = Date.now() - killed;
      console.log(`reachable again ${back} ms after the kill`);
      assert.ok(back < 5_000, `took ${back} ms`);
    } finally {
      await stopAll(nodes);
    }
  }));

Deno.test("hub cluster: clear refusals for a cluster that cannot be joined", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const args = ["hub", "--data-dir", `${dir}/hub`, "--trust", issuer.trustFile, "--port", "0"];
    const noKey = await runEdgenode([...args, "--nats", "nats://127.0.0.1:4222"]);
    assert.notEqual(noKey.code, 0);
    assert.match(noKey.stderr, /cluster key .*cluster\.key cannot be read.*head -c 32/s);

    await Deno.writeFile(`${dir}/hub/cluster.key`, new Uint8Array(32), { mode: 0o644 });
    await Deno.chmod(`${dir}/hub/cluster.key`, 0o644);
    const open = await runEdgenode([...args, "--nats", "nats://127.0.0.1:4222"]);
    assert.match(open.stderr, /other users may read it \(mode 644\): run chmod 600/);

    const badUrl = await runEdgenode([...args, "--nats", "http://127.0.0.1:4222"]);
    assert.match(badUrl.stderr, /--nats takes NATS server URLs like nats:\/\//);
  }));

Deno.test("hub cluster: a wrong NATS password is said in the health, and the hub serves on", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    await Deno.mkdir(`${dir}/nats`);
    const nats = await startTestNats(`${dir}/nats`);
    if ("skip" in nats) return console.log(`skipped: ${nats.skip}`);
    await using _nats = nats;
    await Deno.writeTextFile(`${dir}/wrong`, "not-the-password", { mode: 0o600 });
    await Deno.mkdir(`${dir}/hub`);
    await Deno.writeFile(`${dir}/hub/cluster.key`, crypto.getRandomValues(new Uint8Array(32)), {
      mode: 0o600,
    });
    const hub = await startTestHub(issuer, `${dir}/hub`, {
      config: { nats: { servers: [nats.url], user: nats.user, passwordFile: `${dir}/wrong` } },
    });
    try {
      let health = await healthOf(hub);
      await waitFor(async () => {
        health = await healthOf(hub);
        return /authori[sz]ation/i.test(health.cluster.message);
      }, `the refused login in the health (last: ${JSON.stringify(health)})`);
      assert.equal(health.cluster.status, "down");
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      assert.equal((await healthOf(hub)).status, "ok", "the hub still serves");
    } finally {
      await hub.stop();
    }
  }));
