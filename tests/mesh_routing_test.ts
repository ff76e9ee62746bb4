/**
 * Routing of the OpenAI-compatible API in the mesh (issue 37), with real nodes, a real hub and
 * the real engine running a tiny model: A lacks model M, B has it loaded, C has it on disk (all
 * three of one account, in a private mDNS group); D, of the account, is reachable only through
 * the hub; E, on the same LAN, is of another account and holds M too.
 *
 * A's chat on M is served by B (x-edge-served-by), streamed; B's queue full → C; B killed →
 * C; C stopped (SIGSTOP: it still takes connections) → D within seconds, and a model only C
 * holds is 503 naming C; B and C gone → D through the hub (inference.mesh "account"); E is
 * never asked. B refuses a routed request that is unsigned, badly signed, or signed by a node of
 * another account, and a signed unload. An impostor claiming the account, a model and a
 * loopback service's address is never sent a chat. The official openai client gets a routed
 * streamed answer through A.
 */
import assert from "node:assert/strict";
import OpenAI from "openai";
import { signNodeRequest } from "../src/identity/mod.ts";
import { loadNodeKey } from "../src/identity/node_key.ts";
import { startTestHub } from "../testing/hub.ts";
import { cliToken, makeIssuer, rpc } from "../testing/identity.ts";
import {
  announcement,
  describeImpostor,
  impostorKey,
  nodeIdOf,
  openMdnsClient,
  proofFor,
  randomMdnsPort,
  signedSelf,
  startMeshNode,
} from "../testing/mesh.ts";
import { type TestNode, waitFor, withTempDir } from "../testing/node.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";
import { ensureTestEngine } from "../testing/engine.ts";
import { allData, api, listed, say, sseData, uploadModel } from "./helpers/inference.ts";

/** M: a tiny model whose context holds long generations (8000 tokens take seconds). */
const M = "mesh-m";
const M_BYTES = tinyLlamaGguf({ contextLength: 8192, seed: 7 });
const M_RECORD = { gguf: { initContextSize: 8192 } };
/** A model only an impostor claims. */
const GHOST = "mesh-ghost";
/** An embedding model, on C only. */
const EMBED = "mesh-embed";
/** One sequence and one place in the queue: B's queue fills with two requests. */
const INFERENCE = { queueLimit: 1, clientQueueLimit: 1, reservedSequence: false };

function ask(maxTokens: number, extra: Record<string, unknown> = {}) {
  return { model: M, messages: say("Tell me a story"), max_tokens: maxTokens, ...extra };
}

/** A node of `account` in the mDNS group `port`, linked to the hub, its clusters token stored. */
async function meshNode(
  setup: { port: number; hubUrl: string; issuer: Awaited<ReturnType<typeof makeIssuer>> },
  name: string,
  account: string,
  extra: { mdns?: boolean; mesh?: string } = {},
): Promise<TestNode> {
  const node = await startMeshNode(extra.mdns === false ? randomMdnsPort() : setup.port, {
    name,
    args: ["--trust", setup.issuer.trustFile],
    config: {
      hub: { url: setup.hubUrl },
      inference: { ...INFERENCE, mesh: extra.mesh ?? "lan" },
      ...(extra.mdns === false ? { discovery: { mdns: false } } : {}),
    },
  });
  await rpc(node, "associateAccount", [
    await cliToken(setup.issuer, account, "edge:account:associate"),
  ]);
  const put = await fetch(`${node.url}/mesh/insight/v1/token`, {
    method: "PUT",
    headers: node.auth({ "content-type": "application/json" }),
    body: JSON.stringify({ token: await cliToken(setup.issuer, account, "edge:clusters") }),
  });
  assert.equal(put.status, 200, await put.text());
  return node;
}

interface MeshPlace {
  nodeId: string;
  via: string;
  ready: boolean;
  loaded: boolean;
}

/** Where A's GET /models?scope=mesh says M is. */
function placesOfM(a: TestNode): Promise<MeshPlace[]> {
  return placesOf(a, M);
}

/** Where A's GET /models?scope=mesh says `model` is. */
async function placesOf(a: TestNode, model: string): Promise<MeshPlace[]> {
  const response = await api(a, "/models?scope=mesh");
  const text = await response.text();
  assert.equal(response.status, 200, text);
  const models = JSON.parse(text).data as { id: string; nodes: MeshPlace[] }[];
  return models.find((m) => m.id === model)?.nodes ?? [];
}

/** Loads M on `node` (POST /models: the older API's streamed load). */
async function load(node: TestNode) {
  const messages = await allData(await api(node, "/models", { model: M }));
  assert.equal((messages.at(-1) as { loaded?: boolean }).loaded, true, JSON.stringify(messages));
}

/** A streamed chat through `node`, read up to its first text; the rest readable from `data`. */
async function startStream(node: TestNode, maxTokens: number) {
  const abort = new AbortController();
  const response = await api(node, "/chat/completions", ask(maxTokens, { stream: true }), {
    signal: abort.signal,
  });
  const servedBy = response.headers.get("x-edge-served-by");
  const data = sseData(response);
  while (true) {
    const { value, done } = await data.next();
    assert.ok(!done, "the stream ended before any text");
    // deno-lint-ignore no-explicit-any
    if ((value as any).choices?.[0]?.delta?.content) break;
  }
  return { abort, data, servedBy };
}

/** Who served a whole (not streamed) chat through `node`; asserts 200. */
async function servedBy(node: TestNode, maxTokens = 4): Promise<string | null> {
  const response = await api(node, "/chat/completions", ask(maxTokens));
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.equal(JSON.parse(text).usage.completion_tokens, maxTokens);
  return response.headers.get("x-edge-served-by");
}

/** A chat sent to `node` as if routed by another node: `signature` in x-edge-node-request. */
function routedTo(node: TestNode, signature: string | undefined) {
  return fetch(`${node.url}/v1/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(signature === undefined ? {} : { "x-edge-node-request": signature }),
    },
    body: JSON.stringify(ask(2)),
  });
}

Deno.test("the mesh routes a chat to the node that can answer it", () =>
  withTempDir(async (dir) => {
    await ensureTestEngine();
    const issuer = await makeIssuer(`${dir}/issuer`);
    await using hub = {
      ...await startTestHub(issuer, `${dir}/hub`),
      async [Symbol.asyncDispose]() {
        await this.stop();
      },
    };
    const setup = { port: randomMdnsPort(), hubUrl: hub.url, issuer };
    await using a = await meshNode(setup, "a", "acct", { mesh: "account" });
    await using b = await meshNode(setup, "b", "acct");
    await using c = await meshNode(setup, "c", "acct");
    await using d = await meshNode(setup, "d", "acct", { mdns: false, mesh: "account" });
    await using e = await meshNode(setup, "e", "other");
    const [aId, bId, cId, dId, eId] = await Promise.all([a, b, c, d, e].map(nodeIdOf));
    for (const node of [b, c, d, e]) await uploadModel(node, M, M_BYTES, "llm", M_RECORD);
    await uploadModel(c, EMBED, tinyLlamaGguf({ embedding: 32, seed: 3 }), "embed");
    await load(b);
    await waitFor(
      async () => {
        const places = await placesOfM(a);
        return places.some((p) => p.nodeId === bId && p.loaded) &&
          places.some((p) => p.nodeId === cId) && places.some((p) => p.nodeId === dId);
      },
      "A to see M loaded on B, on disk on C and D",
      20_000,
    );

    await t("A's mesh listing: B and C on the LAN, D through the hub, not E", async () => {
      const places = await placesOfM(a);
      const via = Object.fromEntries(places.map((p) => [p.nodeId, p.via]));
      assert.deepEqual(via, { [bId]: "lan", [cId]: "lan", [dId]: "hub" });
      const open = await api(a, "/models?scope=mesh", undefined, { key: null });
      assert.equal(open.status, 401, "the mesh listing needs the key");
      await open.body?.cancel();
    });

    await t(
      "an impostor of the account, its address a loopback service's, is never sent a chat",
      async () => {
        // What listens on loopback and is no node: it must never see a routed chat.
        const seen: string[] = [];
        const victim = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
          seen.push(new URL(request.url).pathname);
          return Response.json({
            id: "x",
            object: "chat.completion",
            created: 0,
            model: GHOST,
            choices: [{
              index: 0,
              message: { role: "assistant", content: "a loopback service's secret" },
              finish_reason: "stop",
            }],
          });
        });
        // A peer with a key of its own, proving itself where it listens, claiming A's account,
        // GHOST loaded with a free sequence, and the victim's address as its own.
        const impostor = await impostorKey();
        const fake = Deno.serve(
          { hostname: "127.0.0.1", port: 0, onListen() {} },
          async (request) => {
            const node = {
              ...describeImpostor(impostor.id, "claims", victim.addr.port),
              accountId: "acct",
              models: [{
                id: GHOST,
                kind: "llm",
                ready: true,
                loaded: true,
                freeSlots: 1,
                queued: 0,
              }],
            };
            const challenge = new URL(request.url).searchParams.get("challenge")!;
            return Response.json({
              data: { id: impostor.id, proof: await proofFor(impostor, challenge, node) },
            });
          },
        );
        const group = await openMdnsClient(setup.port);
        try {
          await group.send(announcement({ id: impostor.id, name: "claims", port: fake.addr.port }));
          await waitFor(
            async () => (await placesOf(a, GHOST)).some((p) => p.nodeId === impostor.id),
            "A to list GHOST on the impostor",
            20_000,
          );
          const response = await api(a, "/chat/completions", { ...ask(2), model: GHOST });
          const text = await response.text();
          assert.equal(response.status, 503, text);
          assert.match(text, new RegExp(impostor.id));
          assert.ok(!seen.includes("/v1/chat/completions"), `the victim saw ${seen}`);
        } finally {
          await group.close();
          await fake.shutdown();
          await victim.shutdown();
        }
      },
    );

    await t("A's chat on M is served by B, streamed", async () => {
      const stream = await startStream(a, 60);
      assert.equal(stream.servedBy, bId);
      let pieces = 1;
      for await (const value of stream.data) {
        if (value === "[DONE]") break;
        pieces++;
      }
      assert.ok(pieces > 5, `${pieces} messages`);
      assert.equal(await servedBy(a), bId);
      // B names itself when it serves its own client.
      assert.equal(await servedBy(b), bId);
    });

    await t("A's embeddings on a model only C holds are C's, passed through", async () => {
      const response = await api(a, "/embeddings", { model: EMBED, input: ["one", "two"] });
      const text = await response.text();
      assert.equal(response.status, 200, text);
      assert.equal(response.headers.get("x-edge-served-by"), cId);
      const answer = JSON.parse(text);
      assert.equal(answer.data.length, 2);
      assert.equal(answer.data[0].embedding.length, 32);
      const unknown = await api(a, "/embeddings", { model: "nowhere", input: "x" });
      assert.equal(unknown.status, 404, "no node has it: A's own answer");
      await unknown.body?.cancel();
    });

    await t("B refuses routed requests not signed by a node of its account", async () => {
      assert.equal((await routedTo(b, undefined)).status, 401, "unsigned, no key");
      const garbage = await routedTo(b, "a.b.c");
      assert.equal(garbage.status, 403, await garbage.text());
      const key = await loadNodeKey(e.dataDir);
      const path = "/v1/chat/completions";
      const ofE = await signNodeRequest(key.privateKey, key.publicJwk, {
        from: eId,
        to: bId,
        method: "POST",
        path,
      });
      const other = await routedTo(b, ofE);
      assert.equal(other.status, 403, await other.text());
      // A's signature for another node, or another path, is worth nothing at B.
      const aKey = await loadNodeKey(a.dataDir);
      const forC = await signNodeRequest(aKey.privateKey, aKey.publicJwk, {
        from: aId,
        to: cId,
        method: "POST",
        path,
      });
      assert.equal((await routedTo(b, forC)).status, 403);
      const forB = await signNodeRequest(aKey.privateKey, aKey.publicJwk, {
        from: aId,
        to: bId,
        method: "POST",
        path,
      });
      const good = await routedTo(b, forB);
      assert.equal(good.status, 200, await good.text());
      assert.equal(good.headers.get("x-edge-served-by"), bId);
      // A node's signature is for a chat or an embedding only: never an unload (nor a load).
      const unloadPath = `/v1/models?modelId=${M}`;
      const unload = await fetch(`${b.url}${unloadPath}`, {
        method: "DELETE",
        headers: {
          "x-edge-node-request": await signNodeRequest(aKey.privateKey, aKey.publicJwk, {
            from: aId,
            to: bId,
            method: "DELETE",
            path: unloadPath,
          }),
        },
      });
      const refusal = await unload.text();
      assert.equal(unload.status, 403, refusal);
      assert.match(refusal, /only on chat completions and embeddings/);
      assert.equal((await listed(b, M))?.loaded, true, "M still loaded on B");
    });

    await t("B's queue full → C", async () => {
      // One request of A's runs on B, one waits (B's one place for A): the next goes to C.
      const running = await startStream(a, 8000);
      assert.equal(running.servedBy, bId);
      const waiting = api(a, "/chat/completions", ask(2));
      await waitFor(
        async () =>
          // deno-lint-ignore no-explicit-any
          ((await signedSelf(b)).models?.find((m: any) => m.id === M)?.queued ?? 0) >= 1,
        "B to queue A's second request",
        10_000,
      );
      assert.equal(await servedBy(a), cId);
      // The client that goes away stops B's generation: the waiting request runs at once.
      const aborted = performance.now();
      running.abort.abort();
      const waited = await waiting;
      const waitedMs = performance.now() - aborted;
      console.log(
        `mesh_routing_test: B took the waiting request ${Math.round(waitedMs)} ms after the abort`,
      );
      assert.equal(waited.status, 200, await waited.text());
      assert.equal(waited.headers.get("x-edge-served-by"), bId);
    });

    await t("the official openai client gets a routed streamed answer through A", async () => {
      const client = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: a.apiKey, maxRetries: 0 });
      const stream = await client.chat.completions.create({
        model: M,
        messages: [{ role: "user", content: "Tell me a story" }],
        max_tokens: 8,
        stream: true,
      });
      let text = "";
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
      assert.ok(text.length > 0);
    });

    await t("B killed mid-way: the next request is served by C", async () => {
      const stream = await startStream(a, 8000);
      assert.equal(stream.servedBy, bId);
      await b.crash();
      await assert.rejects(async () => {
        for await (const _ of stream.data) { /* until the stream breaks */ }
        throw new Error("ended");
      });
      assert.equal(await servedBy(a), cId);
    });

    await t(
      "C stopped: D serves within seconds; A's embeddings on C's model are 503, naming C",
      async () => {
        // A stopped node still takes connections (the kernel's): its answer would never start.
        Deno.kill(c.pid, "SIGSTOP");
        try {
          const started = performance.now();
          assert.equal(await servedBy(a), dId);
          const tookMs = performance.now() - started;
          console.log(`mesh_routing_test: D served ${Math.round(tookMs)} ms after C stopped`);
          assert.ok(tookMs < 15_000, `${Math.round(tookMs)} ms`);
          const response = await api(a, "/embeddings", { model: EMBED, input: "x" });
          const text = await response.text();
          assert.equal(response.status, 503, text);
          assert.equal(response.headers.get("retry-after"), "2");
          assert.match(text, new RegExp(`node ${cId} \\((lan|hub)\\) did not answer`));
        } finally {
          Deno.kill(c.pid, "SIGCONT");
        }
      },
    );

    await t(
      "B and C gone: D, of the account, serves through the hub; E is never asked",
      async () => {
        await c.stop();
        assert.equal(await servedBy(a), dId);
        assert.equal((await listed(e, M))?.loaded, false, "E never loaded M");
        // A logs each node it tried that did not answer: B (gone), never E.
        assert.match(a.output(), new RegExp(`node ${bId} \\(lan\\) did not answer`));
        assert.doesNotMatch(a.output(), new RegExp(eId));
      },
    );
  }));

/** A named step of the one test (plain sequence: the nodes are shared). */
async function t(name: string, run: () => Promise<void>) {
  try {
    await run();
  } catch (error) {
    throw new Error(`step '${name}' failed: ${(error as Error).message}`, { cause: error });
  }
}
