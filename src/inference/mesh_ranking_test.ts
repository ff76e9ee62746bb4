import assert from "node:assert/strict";
import type { ModelAdvert, NodeDescription } from "../../gen/mds/validators.ts";
import { CHAT_KINDS, meshCandidates, meshModels } from "./mesh_ranking.ts";

const SELF = { nodeId: "0".repeat(56), accountId: "acct" };

function node(n: string, models: Partial<ModelAdvert>[], accountId = "acct"): NodeDescription {
  return {
    id: n.repeat(56),
    accountId,
    name: `node-${n}`,
    os: "linux",
    version: "1",
    addresses: [],
    services: [],
    characteristics: [],
    startedAt: 0,
    localLinkNetworkId: "",
    models: models.map((m) => ({ id: "m", kind: "llm", ready: true, loaded: false, ...m })),
  };
}

const ids = (list: { node: NodeDescription }[]) => list.map((c) => c.node.name);

Deno.test("meshCandidates: loaded (a LAN node's stale figures ignored), free slot, shortest queue, ready on disk; LAN first at equal rank", () => {
  const lan = [
    node("a", [{}]),
    node("b", [{ loaded: true, freeSlots: 0, queued: 3 }]),
    node("c", [{ loaded: true, freeSlots: 0, queued: 1 }]),
    node("f", [{ loaded: true, freeSlots: 1, queued: 0 }]),
  ];
  const hub = [
    node("d", [{ loaded: true, freeSlots: 1, queued: 0 }]),
    node("e", [{}]),
    node("g", [{ loaded: true, freeSlots: 0, queued: 5 }]),
    node("h", [{ loaded: true, freeSlots: 0, queued: 2 }]),
  ];
  assert.deepEqual(
    ids(meshCandidates("m", CHAT_KINDS, { lan, hub }, SELF)),
    ["node-b", "node-c", "node-f", "node-d", "node-h", "node-g", "node-a", "node-e"],
  );
});

Deno.test("meshCandidates: never this node, another account, a model not ready, another kind, or no account", () => {
  const lan = [
    node("0", [{ loaded: true, freeSlots: 1 }]),
    node("a", [{ loaded: true, freeSlots: 1 }], "other"),
    node("b", [{ ready: false }]),
    node("c", [{ kind: "embed" }]),
    node("d", [{ id: "n" }]),
  ];
  assert.deepEqual(meshCandidates("m", CHAT_KINDS, { lan, hub: [] }, SELF), []);
  const good = node("e", [{}]);
  assert.deepEqual(
    meshCandidates("m", CHAT_KINDS, { lan: [good], hub: [] }, { ...SELF, accountId: "" }),
    [],
  );
});

Deno.test("meshCandidates: a node both on the LAN and behind the hub is a LAN node, once", () => {
  const b = node("b", [{}]);
  const found = meshCandidates("m", CHAT_KINDS, { lan: [b], hub: [b] }, SELF);
  assert.deepEqual(found.map((c) => c.via), ["lan"]);
});

Deno.test("meshModels: this node first, then the account's nodes, each model with its places", () => {
  const listed = meshModels(
    { ...SELF, name: "self", models: [{ id: "x", kind: "llm", ready: true, loaded: false }] },
    {
      lan: [node("a", [{ loaded: true }]), node("z", [{}], "other")],
      hub: [node("b", [{ id: "x" }])],
    },
  );
  assert.deepEqual(listed.map((m) => [m.id, m.nodes.map((p) => `${p.name}:${p.via}`)]), [
    ["x", ["self:self", "node-b:hub"]],
    ["m", ["node-a:lan"]],
  ]);
});
