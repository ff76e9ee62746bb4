import assert from "node:assert/strict";
import type { NetworkClass } from "./channel_protocol.ts";
import { deniedRanges, NetworkPolicy } from "./network_policy.ts";

Deno.test("NetworkPolicy.classify: the class of an address, the node's own first", () => {
  const policy = new NetworkPolicy(["public"], ["192.168.1.20", "127.0.0.1", "fe80::1"]);
  const cases: [string, NetworkClass | "never"][] = [
    ["8.8.8.8", "public"],
    ["2606:4700::1111", "public"],
    ["127.0.0.1", "loopback"],
    ["127.9.9.9", "loopback"],
    ["0.0.0.0", "loopback"],
    ["::1", "loopback"],
    ["::ffff:127.0.0.1", "loopback"],
    ["169.254.169.254", "link-local"],
    ["fe80::2", "link-local"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["100.64.0.1", "private"],
    ["fd00::1", "private"],
    ["192.168.1.21", "private"],
    ["192.168.1.20", "node"],
    ["::ffff:192.168.1.20", "node"],
    ["224.0.0.251", "never"],
    ["255.255.255.255", "never"],
  ];
  for (const [address, want] of cases) assert.equal(policy.classify(address), want, address);
});

Deno.test("NetworkPolicy.check refuses what is not allowed, names resolved first", async () => {
  const policy = new NetworkPolicy(["public", "private"], []);
  await policy.check(new URL("http://10.0.0.5:8083/"));
  await policy.check(new URL("http://[2606:4700::1111]/"));
  for (const url of ["http://127.0.0.1/", "http://[::1]:8083/", "http://169.254.169.254/"]) {
    await assert.rejects(policy.check(new URL(url)), /may not reach/, url);
  }
  await assert.rejects(policy.check(new URL("http://localhost:9/")), /127\.0\.0\.1|::1/);
});

Deno.test("deniedRanges: Deno's --deny-net list for the refused classes", () => {
  assert.deepEqual(
    deniedRanges(["public", "private", "loopback", "link-local", "node"], ["1.2.3.4"]),
    [],
  );
  const denied = deniedRanges(["public", "private"], [
    "192.168.1.20",
    "127.0.0.1",
    "fe80::1%eth0",
    "2001:db8::5",
  ]);
  assert.deepEqual(denied, [
    "127.0.0.0/8",
    "0.0.0.0/8",
    "[::1]",
    "[::]",
    "169.254.0.0/16",
    "192.168.1.20",
    "[2001:db8::5]",
  ]);
  assert.ok(deniedRanges(["public"], []).includes("10.0.0.0/8"));
});

Deno.test("NetworkPolicy: an address the machine gains after the start is the node's at once", async () => {
  let machine = new Set<string>();
  const policy = new NetworkPolicy(["public", "private"], ["192.168.1.20"], () => machine);
  await policy.check(new URL("http://10.99.0.1:8083/"));
  machine = new Set(["10.99.0.1"]);
  assert.equal(policy.classify("10.99.0.1"), "node");
  await assert.rejects(policy.check(new URL("http://10.99.0.1:8083/")), /a node address/);
  assert.equal(policy.classify("192.168.1.20"), "node", "the start's addresses stay the node's");
});
