import assert from "node:assert/strict";
import type { NodeDescription } from "../../gen/mds/validators.ts";
import { Forbidden, Unauthenticated } from "../errors/mod.ts";
import { type MeshParts, MeshRouter } from "./mesh_router.ts";
import { CHAT_KINDS, type MeshScope } from "./mesh_ranking.ts";

const PEER: NodeDescription = {
  id: "b".repeat(56),
  accountId: "acct",
  name: "b",
  os: "linux",
  version: "1",
  addresses: [{ type: "local", url: { href: "http://127.0.0.1:1" } }],
  services: [],
  characteristics: [],
  startedAt: 0,
  localLinkNetworkId: "",
  models: [{ id: "m", kind: "llm", ready: true, loaded: true, freeSlots: 1, queued: 0 }],
};

function router(scope: MeshScope, hubNodes: NodeDescription[] = []) {
  let listings = 0;
  const parts: MeshParts = {
    scope,
    identity: {
      nodeId: "a".repeat(56),
      accountId: "acct",
      name: "a",
      storedToken: undefined,
      signRequest: () => Promise.resolve("sig"),
    },
    lanMembers: () => [PEER],
    hub: {
      accountNodes: () => {
        listings++;
        return Promise.resolve(hubNodes);
      },
      url: () => "http://127.0.0.1:2",
    },
    prove: () => Promise.resolve(),
    ownModels: () => [],
  };
  return { mesh: new MeshRouter(parts), listings: () => listings };
}

const signed = (signature?: string) =>
  new Request("http://node/v1/chat/completions", {
    method: "POST",
    headers: signature ? { "x-edge-node-request": signature } : {},
  });
const SEEN = { path: "/v1/chat/completions", search: "", hubAccount: undefined };

Deno.test("MeshRouter: off routes nothing and refuses routed requests", async () => {
  const { mesh } = router("off");
  assert.deepEqual(await mesh.nodes(), { lan: [], hub: [] });
  assert.deepEqual(
    await mesh.forward("m", CHAT_KINDS, {
      method: "POST",
      path: "/v1/chat/completions",
      body: "{}",
      signal: new AbortController().signal,
    }),
    { served: false, failures: [] },
  );
  await assert.rejects(mesh.peerOf(signed("x.y.z"), SEEN), Forbidden);
  assert.deepEqual(await mesh.models(), []);
});

Deno.test("MeshRouter: lan asks no hub; account asks it", async () => {
  const lan = router("lan", [{ ...PEER, id: "d".repeat(56) }]);
  assert.deepEqual((await lan.mesh.nodes()).hub, []);
  assert.equal(lan.listings(), 0);
  const account = router("account", [{ ...PEER, id: "d".repeat(56) }]);
  assert.equal((await account.mesh.nodes()).hub.length, 1);
  assert.equal(account.listings(), 1);
  const places = (await account.mesh.models()).find((m) => m.id === "m")!.nodes;
  assert.deepEqual(places.map((p) => p.via), ["lan", "hub"]);
});

Deno.test("MeshRouter: a routed request unsigned is 401, badly signed 403", async () => {
  const { mesh } = router("lan");
  assert.equal(mesh.isRouted(signed()), false);
  assert.equal(mesh.isRouted(signed("x")), true);
  await assert.rejects(mesh.peerOf(signed(), SEEN), Unauthenticated);
  await assert.rejects(mesh.peerOf(signed("x.y.z"), SEEN), Forbidden);
  const throughHub = { ...SEEN, hubAccount: "acct" };
  await assert.rejects(mesh.peerOf(signed("x.y.z"), throughHub), /LAN's nodes only/);
});
