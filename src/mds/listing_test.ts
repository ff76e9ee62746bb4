import assert from "node:assert/strict";
import * as v from "valibot";
import { NodeSchema } from "../../gen/insight/validators.ts";
import {
  ClusterListingSchema,
  LocalLinkListingSchema,
  type NodeDescription,
} from "../../gen/mds/validators.ts";
import { insightNode, localLinkListing, mdsNode, SUPERNODE_ROLE } from "./listing.ts";

/** A node as discovery and the hub describe it; `id` is 56 hex digits of `digit`. */
function described(digit: string, more: Partial<NodeDescription> = {}): NodeDescription {
  return {
    id: digit.repeat(56),
    accountId: "acct-1",
    name: `node-${digit}`,
    os: "linux",
    version: "0.1.0",
    addresses: [{ type: "local", url: { href: "http://192.168.1.20:8083" } }],
    services: [{
      id: "acct-1-hello",
      serviceType: "hello-v1",
      version: "1.0.0",
      status: "running",
    }],
    characteristics: [{ name: "os", value: "linux" }],
    startedAt: 1_800_000_000_000,
    localLinkNetworkId: "lln-0f",
    ...more,
  };
}

Deno.test("mdsNode: the reference's node, with the account as a link and the first address's host", () => {
  const node = mdsNode(described("a"), ["role"]);
  assert.deepEqual(node, {
    APIVersion: "v1",
    account: { id: "acct-1", self: "/accounts/acct-1" },
    addresses: [{ type: "local", url: { href: "http://192.168.1.20:8083" } }],
    attributes: [{ name: "name", value: "node-a" }],
    characteristics: [{ name: "os", value: "linux" }],
    id: "a".repeat(56),
    localLinkNetworkId: "lln-0f",
    networkAddress: "192.168.1.20",
    rolesInCluster: ["role"],
    services: [{
      id: "acct-1-hello",
      serviceType: "hello-v1",
      tenant: { id: "acct-1", self: "/accounts/acct-1" },
    }],
    startedAt: 1_800_000_000_000,
    tenant: { id: "acct-1", self: "/accounts/acct-1" },
  });
  assert.ok(v.is(ClusterListingSchema, { nodes: [node] }), "an account listing as the spec says");
});

Deno.test("mdsNode: an IPv6 address without brackets, no address, no account", () => {
  const v6 = mdsNode(
    described("b", { addresses: [{ type: "local", url: { href: "http://[fe80::1]:8083" } }] }),
    [],
  );
  assert.equal(v6.networkAddress, "fe80::1");
  const bare = mdsNode(described("c", { addresses: [], accountId: "" }), []);
  assert.equal(bare.networkAddress, "");
  assert.deepEqual(bare.account, { id: "", self: "" });
  assert.deepEqual(bare.services[0].tenant, { id: "", self: "" });
});

Deno.test("localLinkListing: every member in discovery's order, only the supernode with its role", () => {
  const members = [described("1", { startedAt: 1 }), described("2", { startedAt: 2 })];
  const listing = localLinkListing({
    networkId: "lln-0f",
    members: () => members,
    supernode: () => members[0],
  });
  assert.equal(listing.localLinkNetwork.localLinkNetworkId, "lln-0f");
  assert.deepEqual(
    listing.localLinkNetwork.nodes.map((node) => [node.id[0], node.rolesInCluster]),
    [["1", [SUPERNODE_ROLE]], ["2", []]],
  );
  assert.ok(v.is(LocalLinkListingSchema, listing), "a linkLocal listing as the spec says");
});

Deno.test("insightNode: what insight lists of a node, services as they are", () => {
  const node = described("d");
  assert.deepEqual(insightNode(node), {
    id: node.id,
    accountId: "acct-1",
    name: "node-d",
    os: "linux",
    addresses: node.addresses,
    services: [{
      id: "acct-1-hello",
      serviceType: "hello-v1",
      version: "1.0.0",
      status: "running",
    }],
  });
  assert.ok(v.is(NodeSchema, insightNode(node)), "an insight node as the spec says");
});

Deno.test("mdsNode and insightNode: a node's models and backend when it advertises them", () => {
  const models = [{ id: "tiny", kind: "llm", ready: true, loaded: true, freeSlots: 1, queued: 0 }];
  const node = described("d", { models, backend: "cpu" });
  for (const listed of [mdsNode(node, []), insightNode(node)]) {
    assert.deepEqual(listed.models, models);
    assert.equal(listed.backend, "cpu");
  }
  v.parse(ClusterListingSchema, { nodes: [mdsNode(node, [])] });
  v.parse(NodeSchema, insightNode(node));
  // A node without them (or an older one) lists no such fields.
  assert.equal("models" in mdsNode(described("e"), []), false);
  assert.equal("backend" in insightNode(described("e")), false);
});
