import assert from "node:assert/strict";
import type { NodeDescription } from "../../gen/mds/validators.ts";
import { forwardToMesh, type MeshSender } from "./mesh_forward.ts";
import type { MeshCandidate } from "./mesh_ranking.ts";

/** A peer on loopback answering with `answer`; what it received is in `seen`. */
function peer(answer: (request: Request) => Response | Promise<Response>) {
  const seen: { url: string; headers: Headers }[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    seen.push({ url: request.url, headers: new Headers(request.headers) });
    return answer(request);
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, seen, server };
}

function candidate(name: string, url: string, via: "lan" | "hub" = "lan"): MeshCandidate {
  const node: NodeDescription = {
    id: name.repeat(56),
    accountId: "acct",
    name,
    os: "linux",
    version: "1",
    addresses: [{ type: "local", url: { href: url } }],
    services: [],
    characteristics: [],
    startedAt: 0,
    localLinkNetworkId: "",
  };
  return { node, via, model: { id: "m", kind: "llm", ready: true, loaded: true } };
}

const SENDER: MeshSender = {
  signRequest: ({ to, method, path }) => Promise.resolve(`signed:${to}:${method}:${path}`),
  storedToken: () => "account-token",
  hubUrl: () => undefined,
  prove: () => Promise.resolve(),
};

const request = (signal = new AbortController().signal) => ({
  method: "POST",
  path: "/v1/chat/completions?x=1",
  body: '{"model":"m"}',
  signal,
});

Deno.test("forwardToMesh: signed for the node and path, no client credentials, the answer passed through", async () => {
  const b = peer(() =>
    new Response("data: hi\n\n", { headers: { "content-type": "text/event-stream" } })
  );
  try {
    const result = await forwardToMesh(SENDER, [candidate("b", b.url)], request());
    assert.ok(result.served);
    assert.equal(result.response.headers.get("x-edge-served-by"), "b".repeat(56));
    assert.equal(result.response.headers.get("content-type"), "text/event-stream");
    assert.equal(await result.response.text(), "data: hi\n\n");
    const [sent] = b.seen;
    assert.equal(new URL(sent.url).pathname + new URL(sent.url).search, "/v1/chat/completions?x=1");
    assert.equal(
      sent.headers.get("x-edge-node-request"),
      `signed:${"b".repeat(56)}:POST:/v1/chat/completions?x=1`,
    );
    assert.equal(sent.headers.get("authorization"), null);
    assert.equal(sent.headers.get("x-edge-authorization"), null, "no account token to a LAN peer");
  } finally {
    await b.server.shutdown();
  }
});

Deno.test("forwardToMesh: a node that refuses or is gone is left for the next, before its answer only", async () => {
  const busy = peer(() => new Response("busy", { status: 429 }));
  const broken = peer(() => new Response("oops", { status: 503 }));
  const good = peer(() => new Response("{}", { headers: { "content-type": "application/json" } }));
  const gone = peer(() => new Response(""));
  const goneUrl = gone.url;
  await gone.server.shutdown();
  try {
    const result = await forwardToMesh(SENDER, [
      candidate("a", goneUrl),
      candidate("b", busy.url),
      candidate("c", broken.url),
      candidate("d", good.url),
    ], request());
    assert.ok(result.served);
    assert.equal(result.nodeId, "d".repeat(56));
    assert.equal(await result.response.text(), "{}");
    const none = await forwardToMesh(SENDER, [candidate("b", busy.url)], request());
    assert.equal(none.served, false);
    assert.equal(none.served === false && none.failures.length, 1);
  } finally {
    await Promise.all([busy.server.shutdown(), broken.server.shutdown(), good.server.shutdown()]);
  }
});

Deno.test("forwardToMesh: once the answer started, a failure is the client's, not another node's", async () => {
  const second = peer(() => new Response("second"));
  const first = peer(() =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("data: one\n\n"));
          controller.error(new Error("the node died"));
        },
      }),
    )
  );
  try {
    const result = await forwardToMesh(SENDER, [
      candidate("a", first.url),
      candidate("b", second.url),
    ], request());
    assert.ok(result.served);
    await assert.rejects(result.response.text());
    assert.equal(second.seen.length, 0, "the next node was not asked");
  } finally {
    await Promise.all([first.server.shutdown(), second.server.shutdown()]);
  }
});

Deno.test("forwardToMesh: a client that goes away cancels the peer's answer", async () => {
  const cancelled = Promise.withResolvers<void>();
  const b = peer(() =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("data: one\n\n"));
        },
        cancel() {
          cancelled.resolve();
        },
      }),
    )
  );
  try {
    const result = await forwardToMesh(SENDER, [candidate("b", b.url)], request());
    assert.ok(result.served);
    const reader = result.response.body!.getReader();
    await reader.read();
    await reader.cancel();
    await cancelled.promise;
  } finally {
    await b.server.shutdown();
  }
});

Deno.test("forwardToMesh: a hub node only through the hub this node is linked to, with its token", async () => {
  const hub = peer(() => new Response("{}"));
  try {
    const behindHub = candidate("d", "http://10.0.0.9:8083", "hub");
    behindHub.node.addresses.push({ type: "proxy", url: { href: hub.url } });
    const unlinked = await forwardToMesh(SENDER, [behindHub], request());
    assert.equal(unlinked.served, false, "no hub: not sent");
    const otherHub = { ...SENDER, hubUrl: () => "http://127.0.0.1:1" };
    assert.equal((await forwardToMesh(otherHub, [behindHub], request())).served, false);
    const linked = { ...SENDER, hubUrl: () => hub.url };
    const result = await forwardToMesh(linked, [behindHub], request());
    assert.ok(result.served);
    await result.response.body?.cancel();
    const [sent] = hub.seen;
    assert.equal(sent.headers.get("x-edge-authorization"), "Bearer account-token");
    assert.equal(sent.headers.get("x-edge-port"), "8083");
    assert.ok(sent.headers.get("x-edge-routing"));
    assert.equal(sent.headers.get("authorization"), null);
  } finally {
    await hub.server.shutdown();
  }
});

Deno.test("forwardToMesh: a LAN node that does not prove itself at its address is never sent the request", async () => {
  const impostor = peer(() => new Response("{}"));
  const good = peer(() => new Response("{}"));
  try {
    const proved: string[] = [];
    const sender: MeshSender = {
      ...SENDER,
      prove: (origin, nodeId) => {
        proved.push(`${nodeId[0]}@${origin}`);
        return nodeId[0] === "a" ? Promise.reject(new Error("not a's proof")) : Promise.resolve();
      },
    };
    const result = await forwardToMesh(
      sender,
      [candidate("a", impostor.url), candidate("b", good.url)],
      request(),
    );
    assert.ok(result.served);
    assert.equal(result.nodeId, "b".repeat(56));
    await result.response.body?.cancel();
    assert.equal(impostor.seen.length, 0, "nothing sent where the node did not prove itself");
    assert.deepEqual(proved, [`a@${impostor.url}`, `b@${good.url}`]);
  } finally {
    await Promise.all([impostor.server.shutdown(), good.server.shutdown()]);
  }
});

Deno.test("forwardToMesh: a LAN node whose answer does not start, and that no longer proves itself, is left", async () => {
  const hung = Promise.withResolvers<Response>();
  const stopped = peer(() => hung.promise);
  const slow = peer(() =>
    new Promise((resolve) => setTimeout(() => resolve(new Response("slow")), 300))
  );
  const good = peer(() => new Response("{}"));
  try {
    const fresh: string[] = [];
    const sender: MeshSender = {
      ...SENDER,
      prove: (_origin, nodeId, _signal, isFresh) => {
        if (!isFresh) return Promise.resolve();
        fresh.push(nodeId[0]);
        return nodeId[0] === "a" ? Promise.reject(new Error("no answer")) : Promise.resolve();
      },
    };
    const started = Date.now();
    const result = await forwardToMesh(
      sender,
      [candidate("a", stopped.url), candidate("b", good.url)],
      request(),
      100,
    );
    assert.ok(result.served);
    assert.equal(result.nodeId, "b".repeat(56));
    assert.ok(Date.now() - started < 2000, `${Date.now() - started} ms`);
    await result.response.body?.cancel();
    // A node that is alive keeps the request however long its answer takes to start.
    const kept = await forwardToMesh(sender, [candidate("c", slow.url)], request(), 50);
    assert.ok(kept.served);
    assert.equal(await kept.response.text(), "slow");
    assert.ok(fresh.filter((id) => id === "c").length >= 2, fresh.join());
  } finally {
    hung.resolve(new Response(""));
    await Promise.all([stopped.server.shutdown(), slow.server.shutdown(), good.server.shutdown()]);
  }
});

Deno.test("forwardToMesh: a request at fault (400, 413, 422) is not tried elsewhere; the peer's words pass on", async () => {
  const bad = peer(() =>
    Response.json({ error: { message: "prompt too long", param: "messages", code: null } }, {
      status: 400,
    })
  );
  const next = peer(() => new Response("{}"));
  try {
    const result = await forwardToMesh(
      SENDER,
      [candidate("a", bad.url), candidate("b", next.url)],
      request(),
    );
    assert.equal(result.served, false);
    assert.deepEqual(result.served === false && result.mistake, {
      status: 400,
      message: "prompt too long",
      param: "messages",
      nodeId: "a".repeat(56),
    });
    assert.equal(next.seen.length, 0);
  } finally {
    await Promise.all([bad.server.shutdown(), next.server.shutdown()]);
  }
});

Deno.test("forwardToMesh: a node through the hub whose answer does not start, and whose ping fails there, is left", async () => {
  const hung = Promise.withResolvers<Response>();
  const hub = peer((request) =>
    new URL(request.url).pathname === "/mds/v1/nodes"
      ? new Response("node unreachable", { status: 502 })
      : hung.promise
  );
  const good = peer(() => new Response("{}"));
  try {
    const behindHub = candidate("d", "http://10.0.0.9:8083", "hub");
    behindHub.node.addresses.push({ type: "proxy", url: { href: hub.url } });
    const linked = { ...SENDER, hubUrl: () => hub.url };
    const result = await forwardToMesh(
      linked,
      [behindHub, candidate("b", good.url)],
      request(),
      100,
    );
    assert.ok(result.served);
    assert.equal(result.nodeId, "b".repeat(56));
    await result.response.body?.cancel();
    const ping = hub.seen.find((s) => new URL(s.url).pathname === "/mds/v1/nodes")!;
    assert.equal(ping.headers.get("x-edge-authorization"), "Bearer account-token");
    assert.ok(ping.headers.get("x-edge-routing"));
  } finally {
    hung.resolve(new Response(""));
    await Promise.all([hub.server.shutdown(), good.server.shutdown()]);
  }
});
