/**
 * The node connection's raw transport (spec/hub.yaml, "The raw transport") between a real hub
 * and real nodes: nodes move to it by themselves and tunnel requests and large bodies over it;
 * a node whose raw connection cannot be had (the hub behind an HTTP reverse proxy) stays on the
 * WebSocket; a raw connection of another protocol is refused with the reason.
 *
 * @module
 */
import assert from "node:assert/strict";
import { expectPings, infoOf, joinHub, startTestHub, viaTunnel } from "../testing/hub.ts";
import { makeIssuer } from "../testing/identity.ts";
import { ggufBytes, sha256Hex, waitFor, withTempDir } from "../testing/node.ts";
import { TUNNEL_PROTOCOL } from "../src/tunnel/wire_frames.ts";

/** The hub's health; `rawNodes` is there only when some node is on the raw transport. */
async function health(url: string): Promise<{ nodes: number; rawNodes: number }> {
  const body = await (await fetch(`${url}/hub/v1/health`)).json();
  return { nodes: body.nodes, rawNodes: body.rawNodes ?? 0 };
}

Deno.test("hub raw transport: nodes move to it; requests and large bodies both ways", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const hub = await startTestHub(issuer, `${dir}/hub`);
    const a1 = await joinHub(hub.url, issuer, "raw", { name: "r1" });
    const a2 = await joinHub(hub.url, issuer, "raw", { name: "r2" });
    try {
      await waitFor(async () => (await health(hub.url)).rawNodes === 2, "both nodes on raw");
      const via = await viaTunnel(a1, a2);
      // Many requests at once: their frames share reads and writes, none is mixed up.
      await expectPings(via, a2.id);

      // 9 MiB up and down: 1 MiB frames assembled across reads, past the 4 MiB window.
      const file = ggufBytes(9 * 1024 * 1024 + 77);
      const created = await fetch(`${a2.node.storeUrl}/models`, {
        method: "POST",
        headers: a2.node.auth({ "Content-Type": "application/json" }),
        body: JSON.stringify({ id: "big", version: "1", kind: "llm" }),
      });
      assert.equal(created.status, 201, await created.text());
      const uploaded = await via("/ai/store/v1/models/big/upload", {
        method: "POST",
        headers: { "Content-Type": "application/octet-stream" },
        body: file as Uint8Array<ArrayBuffer>,
      });
      assert.equal(uploaded.status, 200, await uploaded.clone().text());
      await uploaded.body?.cancel();
      const down = await via("/ai/store/v1/models/big?alt=media");
      assert.equal(down.status, 200);
      assert.equal(
        await sha256Hex(new Uint8Array(await down.arrayBuffer())),
        await sha256Hex(file),
      );

      // Listings still travel as JSON messages over the raw connection.
      const listed = await fetch(`${a1.node.url}/mesh/insight/v1/nodes?type=account`, {
        headers: a1.node.auth(),
      });
      assert.equal(listed.status, 200);
      assert.equal((await listed.json()).data.length, 2);
    } finally {
      await a1.node.stop();
      await a2.node.stop();
      await hub.stop();
    }
  }));

/**
 * A WebSocket relay in front of `hubUrl` (as an HTTP reverse proxy would be) that turns the
 * welcome's raw port into `rawPort`.
 */
function relay(hubUrl: string, rawPort: number): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const { socket, response } = Deno.upgradeWebSocket(request, { protocol: TUNNEL_PROTOCOL });
    const upstream = new WebSocket(`${hubUrl.replace(/^http/, "ws")}/hub/v1/connect`, [
      TUNNEL_PROTOCOL,
    ]);
    socket.binaryType = upstream.binaryType = "arraybuffer";
    const early: (string | ArrayBuffer)[] = [];
    upstream.onopen = () => early.splice(0).forEach((data) => upstream.send(data));
    socket.onmessage = (event) =>
      upstream.readyState === WebSocket.OPEN ? upstream.send(event.data) : early.push(event.data);
    upstream.onmessage = (event) => {
      let data = event.data;
      if (typeof data === "string" && JSON.parse(data).t === "welcome") {
        data = JSON.stringify({ ...JSON.parse(data), tunnelPort: rawPort });
      }
      if (socket.readyState === WebSocket.OPEN) socket.send(data);
    };
    socket.onclose = () => upstream.close();
    upstream.onclose = () => socket.readyState === WebSocket.OPEN && socket.close();
    socket.onerror = upstream.onerror = () => {};
    return response;
  });
}

Deno.test("hub raw transport: a node that cannot open it stays on the WebSocket", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const hub = await startTestHub(issuer, `${dir}/hub`);
    // Where the relay says the raw port is: connections are taken and dropped at once.
    const dead = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const dropping = (async () => {
      for await (const conn of dead) conn.close();
    })().catch(() => {});
    const proxy = relay(hub.url, dead.addr.port);
    const a1 = await joinHub(`http://127.0.0.1:${proxy.addr.port}`, issuer, "raw", {
      name: "w1",
    });
    try {
      const sep = (await infoOf(a1.node, "sep")).sep;
      assert.equal(sep.status, "success");
      assert.deepEqual(await health(hub.url), { nodes: 1, rawNodes: 0 });
      const answer = await fetch(`${sep.url}/mds/v1/nodes?ping=true`, {
        headers: { ...sep.headers, Authorization: `Bearer ${a1.token}` },
      });
      assert.equal((await answer.json()).data.id, a1.id);
    } finally {
      await a1.node.stop();
      await proxy.shutdown();
      dead.close();
      await dropping;
      await hub.stop();
    }
  }));

/** The frames a raw connection receives until the hub closes it: [kind, payload] pairs. */
async function rawExchange(port: number, preface: string): Promise<[number, Uint8Array][]> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(new TextEncoder().encode(preface));
  const chunks: Uint8Array[] = [];
  for await (const chunk of conn.readable) chunks.push(chunk);
  const bytes = new Uint8Array(await new Blob(chunks as Uint8Array<ArrayBuffer>[]).arrayBuffer());
  const frames: [number, Uint8Array][] = [];
  for (let at = 0; at + 9 <= bytes.length;) {
    const length = new DataView(bytes.buffer, at + 5, 4).getUint32(0);
    frames.push([bytes[at], bytes.subarray(at + 9, at + 9 + length)]);
    at += 9 + length;
  }
  return frames;
}

Deno.test("hub raw transport: another protocol is refused with the reason, noise dropped", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    // A fixed HTTP port: the raw one is the next (and the narrowed hub may listen there).
    const port = freePortPair();
    const hub = await startTestHub(issuer, `${dir}/hub`, { port });
    const node = await joinHub(hub.url, issuer, "raw", { name: "p1" });
    try {
      await waitFor(async () => (await health(hub.url)).rawNodes === 1, "the node on raw");
      const ps = await new Deno.Command("ps", {
        args: ["-o", "args=", "-p", String(hub.pid)],
        stdout: "piped",
      }).output();
      assert.match(
        new TextDecoder().decode(ps.stdout),
        new RegExp(`--allow-net=127\\.0\\.0\\.1:${port},127\\.0\\.0\\.1:${port + 1}( |$)`),
      );
      const frames = await rawExchange(port + 1, "edgenode-tunnel.2 http://127.0.0.1:1\n");
      assert.equal(frames[0][0], 7);
      const refused = JSON.parse(new TextDecoder().decode(frames[0][1]));
      assert.equal(refused.t, "refused");
      assert.equal(refused.status, 426);
      assert.match(refused.message, /edgenode-tunnel\.3.*update edgenode on the node/);
      assert.equal(frames[1][0], 8);
      assert.equal(new DataView(frames[1][1].buffer, frames[1][1].byteOffset).getUint16(0), 4426);
      // Not an edgenode node: closed without a word.
      assert.deepEqual(await rawExchange(port + 1, "GET / HTTP/1.1\r\n\r\n"), []);
    } finally {
      await node.node.stop();
      await hub.stop();
    }
  }));

/** A free port whose next port is free too (the hub's HTTP and raw ports). */
function freePortPair(): number {
  while (true) {
    const first = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = first.addr.port;
    try {
      Deno.listen({ hostname: "127.0.0.1", port: port + 1 }).close();
      return port;
    } catch {
      // Taken: another pair.
    } finally {
      first.close();
    }
  }
}
