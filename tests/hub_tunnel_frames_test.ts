/**
 * The tunnel's binary frames (protocol edgenode-tunnel.3) between a real hub and real nodes:
 * many requests at once sharing WebSocket messages, bodies of every size class (none, inline,
 * streamed past the flow-control window) in both directions, and a clear refusal, on both sides,
 * when a node and a hub of different protocol versions meet.
 *
 * @module
 */
import assert from "node:assert/strict";
import { expectPings, infoOf, joinHub, startTestHub, viaTunnel } from "../testing/hub.ts";
import { insightClient } from "../src/sdk/clients.ts";
import { rpcCall } from "../src/sdk/json_rpc.ts";
import { cliToken, makeIssuer, type TestIssuer } from "../testing/identity.ts";
import { ggufBytes, sha256Hex, startTestNode, waitFor, withTempDir } from "../testing/node.ts";
import { concatBytes } from "../src/tunnel/bytes.ts";
import type { MuxMessage } from "../src/tunnel/mux_codec.ts";
import {
  binaryCodec,
  type FrameSink,
  receiveFrames,
  TUNNEL_PROTOCOL,
  TUNNEL_WINDOW,
} from "../src/tunnel/wire_frames.ts";

Deno.test("hub tunnel frames: concurrent requests, bodies of every size, both ways", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const hub = await startTestHub(issuer, `${dir}/hub`);
    const a1 = await joinHub(hub.url, issuer, "frames", { name: "f1" });
    const a2 = await joinHub(hub.url, issuer, "frames", { name: "f2" });
    try {
      const via = await viaTunnel(a1, a2);
      // 200 small GETs at once: many heads share a message each way, none is mixed up.
      await expectPings(via, a2.id);

      // A body of 9 MiB, more than twice the 4 MiB window, up and back down, two at once.
      const file = ggufBytes(9 * 1024 * 1024 + 123);
      for (const id of ["b1", "b2"]) {
        const created = await fetch(`${a2.node.storeUrl}/models`, {
          method: "POST",
          headers: a2.node.auth({ "Content-Type": "application/json" }),
          body: JSON.stringify({ id, version: "1", kind: "llm" }),
        });
        assert.equal(created.status, 201, await created.text());
      }
      const uploads = await Promise.all(
        ["b1", "b2"].map((id) =>
          via(`/ai/store/v1/models/${id}/upload`, {
            method: "POST",
            headers: { "Content-Type": "application/octet-stream" },
            body: new Blob([file as Uint8Array<ArrayBuffer>]).stream(),
          })
        ),
      );
      for (const upload of uploads) assert.equal(upload.status, 200, await upload.text());
      const downloads = await Promise.all(
        ["b1", "b2"].map((id) => via(`/ai/store/v1/models/${id}?alt=media`)),
      );
      for (const download of downloads) {
        assert.equal(download.status, 200);
        assert.equal(await sha256Hex(await download.bytes()), await sha256Hex(file));
      }

      // A small request body travels inline in its head; an error answer comes back whole.
      const small = await via("/ai/store/v1/models", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ id: "s1", version: "1", kind: "llm" }),
      });
      assert.equal(small.status, 201, await small.text());
      const missing = await via("/ai/store/v1/models/none");
      assert.equal(missing.status, 404);
      assert.match((await missing.json()).error.message, /none/);
    } finally {
      await Promise.all([a1.node.stop(), a2.node.stop()]);
      await hub.stop();
    }
  }));

Deno.test("hub tunnel frames: a node of the previous protocol is refused with the reason", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const hub = await startTestHub(issuer, `${dir}/hub`);
    try {
      // What an edgenode of protocol 1 does: a WebSocket without the subprotocol.
      const socket = new WebSocket(`${hub.url.replace(/^http/, "ws")}/hub/v1/connect`);
      const first = Promise.withResolvers<string>();
      const closed = Promise.withResolvers<CloseEvent>();
      socket.onmessage = (event) => first.resolve(String(event.data));
      socket.onclose = (event) => closed.resolve(event);
      const refused = JSON.parse(await first.promise);
      assert.equal(refused.t, "refused");
      assert.equal(refused.status, 426);
      assert.match(refused.message, /tunnel protocol edgenode-tunnel\.3.*update edgenode/);
      assert.equal((await closed.promise).code, 4426);
    } finally {
      await hub.stop();
    }
  }));

Deno.test("hub tunnel frames: a hub of the previous protocol is left, with the reason", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    // What an edgenode hub of protocol 1 does: it upgrades without a subprotocol and challenges.
    const offered: string[] = [];
    const older = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
      offered.push(request.headers.get("sec-websocket-protocol") ?? "");
      const { socket, response } = Deno.upgradeWebSocket(request);
      socket.onopen = () =>
        socket.send(JSON.stringify({ t: "challenge", challenge: "x".repeat(43) }));
      return response;
    });
    const node = await nodeOnHub(issuer, older.addr.port);
    try {
      let status = "";
      await waitFor(async () => {
        status = (await infoOf(node, "bep")).bep.status;
        return /older tunnel protocol/.test(status);
      }, "the node to report the hub's older protocol");
      assert.match(
        status,
        /failed: the hub at .* speaks an older tunnel protocol.*update edgenode/,
      );
      assert.ok(offered.includes(TUNNEL_PROTOCOL), `offered: ${offered}`);
    } finally {
      await node.stop();
      await older.shutdown();
    }
  }));

/**
 * A hub that speaks the current protocol without checking anything: it welcomes the node after its hello,
 * sends `frames` (one message per entry) and collects the node's frames and its close code.
 */
/** A node in the account "frames" with its token, told to use the hub on `port`. */
async function nodeOnHub(issuer: TestIssuer, port: number) {
  const node = await startTestNode({
    args: ["--trust", issuer.trustFile],
    config: {
      apiKey: "frames-test-key-0123456789",
      discovery: { mdns: false },
      hub: { url: `http://127.0.0.1:${port}` },
    },
  });
  const connection = { url: node.url, credential: node.apiKey };
  await rpcCall(connection, "associateAccount", [
    await cliToken(issuer, "frames", "edge:account:associate"),
  ]);
  const token = await cliToken(issuer, "frames", "edge:clusters");
  await insightClient(connection).PUT("/token", { body: { token } });
  return node;
}

async function withScriptedHub(
  script: (send: (message: Uint8Array) => void) => void,
  check: (node: { got: unknown[]; closed: Promise<number> }) => Promise<void>,
): Promise<void> {
  await withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const got: unknown[] = [];
    const closed = Promise.withResolvers<number>();
    const sink: FrameSink = {
      head: (head) => got.push(head),
      data: (stream, bytes) => got.push({ stream, length: bytes.length }),
      control: (message) => got.push(message),
    };
    const hub = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
      const { socket, response } = Deno.upgradeWebSocket(request, { protocol: TUNNEL_PROTOCOL });
      socket.binaryType = "arraybuffer";
      socket.onopen = () =>
        socket.send(JSON.stringify({ t: "challenge", challenge: "x".repeat(32) }));
      socket.onmessage = (event) => {
        if (event.data instanceof ArrayBuffer) {
          return receiveFrames(new Uint8Array(event.data), "res", sink);
        }
        if (JSON.parse(event.data).t !== "hello") return;
        const url = `http://127.0.0.1:${hub.addr.port}`;
        socket.send(
          JSON.stringify({ t: "welcome", url, publicAddress: "127.0.0.1", pingSeconds: 30 }),
        );
        script((message) => socket.send(message));
      };
      socket.onclose = (event) => closed.resolve(event.code);
      return response;
    });
    const node = await nodeOnHub(issuer, hub.addr.port);
    try {
      await check({ got, closed: closed.promise });
    } finally {
      await node.stop();
      await hub.shutdown();
    }
  });
}

const upload = (s: number) =>
  binaryCodec.head({
    t: "req",
    s,
    method: "POST",
    path: "/ai/store/v1/models/m/upload",
    port: 1,
    headers: [],
    body: true,
  }, undefined) as Uint8Array;

Deno.test("hub tunnel frames: a peer that sends past its window has the stream aborted", () =>
  withScriptedHub((send) => {
    // Five 1 MiB pieces in the head's message, no credit granted: one more than the window.
    const piece = binaryCodec.data(1, new Uint8Array(TUNNEL_WINDOW.chunkBytes)) as Uint8Array;
    send(concatBytes([upload(1), ...Array(5).fill(piece)]));
  }, async ({ got }) => {
    await waitFor(() => got.some((m) => (m as MuxMessage).t === "abort"), "the node's abort");
    const abort = got.find((m) => (m as MuxMessage).t === "abort") as {
      s: number;
      message: string;
    };
    assert.equal(abort.s, 1);
    assert.match(abort.message, /went past the flow-control window/);
  }));

Deno.test("hub tunnel frames: a malformed head closes the connection with 4400", () =>
  withScriptedHub((send) => {
    // A request head whose payload is two bytes, then a frame that follows it.
    const short = new Uint8Array([1, 0, 0, 0, 1, 0, 0, 0, 2, 2, 0]);
    send(concatBytes([short, binaryCodec.control({ t: "end", s: 1 }) as Uint8Array]));
  }, async ({ closed }) => {
    assert.equal(await closed, 4400);
  }));
