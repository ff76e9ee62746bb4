import assert from "node:assert/strict";
import { ClusterKey, clusterKeyWeakness } from "./cluster_key.ts";

const random = (length = 32) => crypto.getRandomValues(new Uint8Array(length));
const key = new ClusterKey(random());
const other = new ClusterKey(random());
const text = (value: string) => new TextEncoder().encode(value);

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

Deno.test("cluster key: keys without randomness are refused, random ones of any form kept", () => {
  assert.throws(() => new ClusterKey(new Uint8Array(32)), /32 times the byte 0x00, not random/);
  assert.match(clusterKeyWeakness(new Uint8Array(64).fill(0xff))!, /byte 0xff/);
  const counting = Uint8Array.from({ length: 32 }, (_, n) => (250 + 3 * n) & 0xff);
  assert.match(clusterKeyWeakness(counting)!, /counting sequence/);
  // a short pattern however long the file, and text with too few distinct bytes
  const pattern = Uint8Array.from({ length: 4096 }, (_, n) => (n % 8) * 37);
  assert.match(clusterKeyWeakness(pattern)!, /8-byte pattern repeated/);
  assert.match(clusterKeyWeakness(text("password".repeat(8)))!, /bits of randomness/);
  assert.match(clusterKeyWeakness(text("abababababababababababababababab"))!, /2-byte pattern/);
  assert.match(clusterKeyWeakness(text("0101101001011010011010010110100101"))!, /bits/);
  // 10,000 keys from the generator: none refused (32 random bytes show 137 bits or more)
  for (let n = 0; n < 10_000; n++) assert.equal(clusterKeyWeakness(random()), undefined);
  const hex = (bytes: Uint8Array) => [...bytes].map((b) => b.toString(16).padStart(2, "0"));
  assert.equal(clusterKeyWeakness(text(`${hex(random()).join("")}\n`)), undefined, "openssl -hex");
  assert.equal(clusterKeyWeakness(text(btoa(String.fromCharCode(...random())))), undefined);
});
