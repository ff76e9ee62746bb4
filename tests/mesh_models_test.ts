/**
 * Each node advertises its models (spec/mds.yaml, "Models"): two real nodes on loopback in a
 * private mDNS group, where a model created, provisioned, loaded and deleted on B shows in A's
 * linkLocal listing within seconds (B's `svc` TXT key changes, so A verifies B again); and two
 * nodes of one account behind a real hub (mDNS off), where the account listing carries B's
 * models and a node of another account sees none of them. The digest that decides when peers
 * look again ignores a model's queue and free sequences.
 */
import assert from "node:assert/strict";
import * as v from "valibot";
import { type NodeDescription, NodeDescriptionSchema } from "../gen/mds/validators.ts";
import { changeDigest } from "../src/discovery/link_local.ts";
import { proximityListing } from "../src/hub/listings.ts";
import { DescriptionUpdates, LIVE_FIGURES_MS } from "../src/hub_client/description_updates.ts";
import { decryptNodeListing } from "../src/sdk/mod.ts";
import { ensureTestEngine } from "../testing/engine.ts";
import { insightGet, joinHub, startTestHub } from "../testing/hub.ts";
import { makeIssuer } from "../testing/identity.ts";
import {
  linkLocalNodes,
  nodeIdOf,
  randomMdnsPort,
  signedSelf,
  startMeshNode,
} from "../testing/mesh.ts";
import { sha256Hex, type TestNode, waitFor, withTempDir } from "../testing/node.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";
import { createModel, uploadRaw } from "./helpers/store.ts";

/** Long announce intervals: only a change of B's TXT can make A look at B again in time. */
const QUIET = { announceSeconds: 30 };
/** How soon A must list B's change (announced within a second; a loaded CI machine). */
const BOUND_MS = 5000;

// deno-lint-ignore no-explicit-any
type Listed = any;

/** Polls `condition` every 100 ms (two loaded cores) until it holds; fails with `what()`. */
async function until(condition: () => Promise<boolean>, what: () => string, ms = BOUND_MS) {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** B as A lists it on the LAN (undefined while A does not list B). */
async function bSeenBy(a: TestNode, bId: string): Promise<Listed> {
  return (await linkLocalNodes(a)).find((n: { id: string }) => n.id === bId);
}

/** Waits until `check` holds of B's models as A lists them; returns how long it took. */
async function seenWithin(
  a: TestNode,
  bId: string,
  check: (models: Listed[] | undefined, node: Listed) => boolean,
  what: string,
): Promise<number> {
  const started = Date.now();
  let last: Listed;
  await until(
    async () => {
      last = await bSeenBy(a, bId);
      return last !== undefined && check(last.models, last);
    },
    () => `${what} (A lists B's models as ${JSON.stringify(last?.models)})`,
  );
  return Date.now() - started;
}

/** The registry's load and unload (PUT /models with an action); the answer read. */
async function loadAction(node: TestNode, id: string, action: "load" | "unload") {
  const response = await fetch(`${node.storeUrl}/models`, {
    method: "PUT",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify({ id, action }),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return text;
}

Deno.test("the models digest: set, files, readiness and loads change it; queue and free sequences do not", () => {
  const services = [{ id: "c1", serviceType: "client-hello", status: "started" }];
  const sha256 = "ab".repeat(32);
  const loaded = { id: "m", kind: "llm", sha256, size: 10, ready: true, loaded: true };
  const base = changeDigest({ services, models: [{ ...loaded, freeSlots: 1, queued: 0 }] });
  assert.equal(changeDigest({ services, models: [{ ...loaded, freeSlots: 0, queued: 7 }] }), base);
  assert.equal(changeDigest({ services, models: [loaded] }), base);
  for (
    const changed of [
      { ...loaded, loaded: false },
      { ...loaded, ready: false },
      { ...loaded, sha256: "cd".repeat(32) },
      { ...loaded, size: 11 },
      { ...loaded, id: "n" },
      { ...loaded, kind: "embed" },
    ]
  ) {
    assert.notEqual(changeDigest({ services, models: [changed] }), base, JSON.stringify(changed));
  }
  assert.notEqual(changeDigest({ services, models: [] }), base);
  // A node without models announces the digest it announced before models were advertised.
  assert.equal(changeDigest({ services, models: [] }), changeDigest({ services }));
});

/** A description with `models`, valid but for what a test puts in. */
function describedWith(models: unknown[]) {
  return {
    id: "0f".repeat(28),
    accountId: "acct-1",
    name: "n",
    os: "linux",
    version: "1",
    addresses: [],
    services: [],
    characteristics: [],
    startedAt: 1,
    localLinkNetworkId: "lln",
    models,
    backend: "cpu",
  };
}

/** The largest advert the schema allows. */
const LARGEST_ADVERT = {
  id: "m".repeat(255),
  kind: "k".repeat(32),
  sha256: "f".repeat(64),
  size: Number.MAX_SAFE_INTEGER,
  ready: true,
  loaded: true,
  freeSlots: 64,
  queued: Number.MAX_SAFE_INTEGER,
};

Deno.test("a description's models are bounded: 64 at most, each field limited, within a proof's size", () => {
  const most = Array.from({ length: 64 }, () => LARGEST_ADVERT);
  assert.ok(v.safeParse(NodeDescriptionSchema, describedWith(most)).success);
  // In a proof the payload is base64url: 4/3 of its JSON. The limits: 512 KiB for a proof
  // answer and the hub's hello, 1 MiB for a message on the hub's raw transport.
  const proofBytes = Math.ceil(JSON.stringify(most).length * 4 / 3);
  assert.ok(proofBytes < 48 * 1024, `64 adverts take ${proofBytes} bytes of a proof`);
  const refused = [
    [...most, LARGEST_ADVERT],
    [{ ...LARGEST_ADVERT, id: "m".repeat(256) }],
    [{ ...LARGEST_ADVERT, kind: "k".repeat(33) }],
    [{ ...LARGEST_ADVERT, sha256: "F".repeat(64) }],
    [{ ...LARGEST_ADVERT, freeSlots: 65 }],
    [{ ...LARGEST_ADVERT, queued: -1 }],
    [{ ...LARGEST_ADVERT, extra: "x" }],
  ];
  for (const models of refused) {
    assert.equal(v.safeParse(NodeDescriptionSchema, describedWith(models)).success, false);
  }
  // Older nodes and hubs send none.
  const { models: _, backend: __, ...older } = describedWith([]);
  assert.ok(v.safeParse(NodeDescriptionSchema, older).success);
});

Deno.test("the hub is sent a change of the live figures alone at most every 10 s, any other at once", () => {
  const updates = new DescriptionUpdates();
  const model = { id: "m", kind: "llm", ready: true, loaded: true, freeSlots: 1, queued: 0 };
  const node = (more: object) => describedWith([{ ...model, ...more }]) as NodeDescription;
  updates.sent(node({}), undefined, 0);
  assert.equal(updates.due(node({}), undefined, 1000), false, "nothing changed");
  // Every request changes these: a busy node would otherwise update the hub every second.
  assert.equal(updates.due(node({ queued: 3, freeSlots: 0 }), undefined, 1000), false);
  assert.equal(updates.due(node({ queued: 3, freeSlots: 0 }), undefined, LIVE_FIGURES_MS), true);
  assert.equal(updates.due(node({ loaded: false, freeSlots: undefined }), undefined, 1000), true);
  assert.equal(updates.due(node({}), { latitude: 1, longitude: 2, at: 3 }, 1000), true);
});

Deno.test("another account's node sees none of a node's models in the hub's proximity listing", () => {
  const node = (id: string, accountId: string) => ({
    id: id.repeat(56),
    accountId,
    name: id,
    os: "linux",
    version: "1",
    addresses: [],
    services: [],
    characteristics: [],
    startedAt: 1,
    localLinkNetworkId: "lln",
    models: [{ id: "secret-model", kind: "llm", ready: true, loaded: true }],
    backend: "cpu",
  });
  const entry = (id: string, account: string) => ({
    node: node(id, account),
    fix: undefined,
    publicAddress: "203.0.113.1",
  });
  const caller = entry("a", "acct-1");
  const listed = proximityListing(
    caller,
    [caller, entry("b", "acct-1"), entry("c", "acct-2")],
    10,
    "http://hub",
  );
  assert.deepEqual(listed.map((n) => [n.name, n.models?.length, n.backend]), [
    ["a", 1, "cpu"],
    ["b", 1, "cpu"],
    ["c", undefined, undefined],
  ]);
});

Deno.test("B's models in A's linkLocal listing: created, provisioned, loaded and deleted, within seconds", async () => {
  await ensureTestEngine();
  const port = randomMdnsPort();
  await using a = await startMeshNode(port, { name: "a", ...QUIET });
  await using b = await startMeshNode(port, { name: "b", ...QUIET });
  const bId = await nodeIdOf(b);
  await waitFor(async () => (await bSeenBy(a, bId)) !== undefined, "A to list B");
  assert.equal((await bSeenBy(a, bId)).models, undefined, "B has no model yet");
  // B's start-up announcements (0, 1 and 2 s) are over: only a change makes B announce now.
  await new Promise((resolve) => setTimeout(resolve, 2500));

  await createModel(b, "tiny");
  const created = await seenWithin(
    a,
    bId,
    (models) => models?.[0]?.id === "tiny",
    "A to list B's new model",
  );
  const [record] = (await bSeenBy(a, bId)).models;
  assert.deepEqual(record, { id: "tiny", kind: "llm", ready: false, loaded: false });

  const bytes = tinyLlamaGguf();
  const uploaded = await uploadRaw(b, "tiny", bytes);
  assert.equal(uploaded.status, 200, await uploaded.text());
  const sha256 = await sha256Hex(bytes);
  const ready = await seenWithin(
    a,
    bId,
    (models) => models?.[0]?.ready,
    "A to list B's model ready",
  );
  const seen = await bSeenBy(a, bId);
  assert.deepEqual(seen.models, [
    { id: "tiny", kind: "llm", sha256, size: bytes.length, ready: true, loaded: false },
  ]);
  assert.equal(seen.backend, "cpu");

  await loadAction(b, "tiny", "load");
  const loaded = await seenWithin(a, bId, (models) => models?.[0]?.loaded, "A to list it loaded");
  const [hot] = (await bSeenBy(a, bId)).models;
  assert.equal(hot.queued, 0);
  assert.ok(hot.freeSlots >= 1, JSON.stringify(hot));
  // What B signs of itself carries the same.
  assert.equal((await signedSelf(b)).models[0].loaded, true);

  await loadAction(b, "tiny", "unload");
  await seenWithin(a, bId, (models) => models?.[0]?.loaded === false, "A to list it unloaded");

  const removed = await fetch(`${b.storeUrl}/models/tiny`, { method: "DELETE", headers: b.auth() });
  assert.equal(removed.status, 200, await removed.text());
  const deleted = await seenWithin(
    a,
    bId,
    (models, node) => models === undefined && node.backend === undefined,
    "A to drop B's deleted model",
  );
  console.log(
    `mesh_models_test: A listed B's model created after ${created} ms, ready after ${ready} ms, ` +
      `loaded after ${loaded} ms, deleted after ${deleted} ms`,
  );
});

Deno.test("through the hub, the account listing carries a node's models", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const started = await startTestHub(issuer, `${dir}/hub`);
    await using _hub = { [Symbol.asyncDispose]: async () => void await started.stop() };
    const a = await joinHub(started.url, issuer, "acct-1", { name: "a" });
    await using _a = a.node;
    const b = await joinHub(started.url, issuer, "acct-1", { name: "b" });
    await using _b = b.node;

    const bytes = tinyLlamaGguf({ seed: 3 });
    await createModel(b.node, "tiny");
    const uploaded = await uploadRaw(b.node, "tiny", bytes);
    assert.equal(uploaded.status, 200, await uploaded.text());
    const want = [{
      id: "tiny",
      kind: "llm",
      sha256: await sha256Hex(bytes),
      size: bytes.length,
      ready: true,
      loaded: false,
    }];

    let listed: Listed;
    await until(
      async () => {
        const response = await insightGet(a.node, "/nodes?type=account");
        listed = (await response.json()).data?.find((n: { id: string }) => n.id === b.id);
        return JSON.stringify(listed?.models) === JSON.stringify(want);
      },
      () => `A's account listing to carry B's model (B listed as ${JSON.stringify(listed)})`,
    );
    assert.equal(listed.backend, "cpu");

    // The encrypted mds listing of the account carries them too.
    const response = await fetch(`${a.node.url}/mds/v1/nodes?clusters=account`, {
      headers: { Authorization: `Bearer ${a.token}` },
    });
    assert.equal(response.status, 200);
    const plain = await decryptNodeListing(await response.text(), a.token, "account") as {
      nodes: Listed[];
    };
    const inMds = plain.nodes.find((n) => n.id === b.id);
    assert.deepEqual(inMds?.models, want);
    assert.equal(inMds?.backend, "cpu");
  }));
