import assert from "node:assert/strict";
import { ClusterKey } from "./cluster_key.ts";

const key = new ClusterKey(new Uint8Array(32).fill(7));
const other = new ClusterKey(new Uint8Array(32).fill(8));

Deno.test("cluster key: a sealed record opens under its own bucket and key only", () => {
  const sealed = key.seal("edgenode_nodes", "n1", { hub: "h1", account: "a" });
  assert.deepEqual(key.open("edgenode_nodes", "n1", sealed), { hub: "h1", account: "a" });
  assert.equal(key.open("edgenode_nodes", "n2", sealed), undefined, "copied under another key");
  assert.equal(key.open("edgenode_hubs", "n1", sealed), undefined, "copied to another bucket");
  assert.equal(other.open("edgenode_nodes", "n1", sealed), undefined, "sealed with another key");
});

Deno.test("cluster key: a changed byte, or no MAC at all, does not open", () => {
  const text = new TextDecoder().decode(key.seal("b", "k", { account: "a" }));
  const forged = new TextEncoder().encode(text.replace('"a"', '"b"'));
  assert.equal(key.open("b", "k", forged), undefined);
  assert.equal(key.open("b", "k", new TextEncoder().encode('{"account":"a"}')), undefined);
  assert.equal(key.open("b", "k", new TextEncoder().encode(".{}")), undefined);
});

Deno.test("cluster key: shorter than 32 bytes is refused", () => {
  assert.throws(() => new ClusterKey(new Uint8Array(31)), /32 bytes/);
});
