/**
 * Discovery across real interfaces: two nodes in their own network namespaces, joined by a
 * bridge, each with the default settings (mDNS on port 5353 on every non-loopback interface).
 * Needs root and `ip netns`; skipped with a message otherwise.
 */
import assert from "node:assert/strict";
import { startTestNode, type TestNode, waitFor } from "../testing/node.ts";

async function ip(...args: string[]): Promise<{ ok: boolean; text: string }> {
  const output = await new Deno.Command("ip", { args, stdout: "piped", stderr: "piped" }).output()
    .catch((error) => ({ success: false, stdout: new Uint8Array(), stderr: String(error) }));
  const decode = (b: Uint8Array | string) =>
    typeof b === "string" ? b : new TextDecoder().decode(b);
  return { ok: output.success, text: decode(output.stdout) + decode(output.stderr) };
}

const suffix = Math.random().toString(36).slice(2, 7);
const probe = `enprobe${suffix}`;
const available = (await ip("netns", "add", probe)).ok && (await ip("netns", "del", probe)).ok;
if (!available) {
  console.log(
    "discovery_netns_test: skipped; creating network namespaces needs root and 'ip netns'",
  );
}

/** A bridge and two namespaces with one veth each; returns the namespaces and addresses. */
async function twoHosts() {
  const bridge = `enbr${suffix}`;
  const hosts = [
    { ns: `ena${suffix}`, veth: `eva${suffix}`, address: "10.231.7.11" },
    { ns: `enb${suffix}`, veth: `evb${suffix}`, address: "10.231.7.12" },
  ];
  const must = async (...args: string[]) => {
    const result = await ip(...args);
    assert.ok(result.ok, `ip ${args.join(" ")}: ${result.text}`);
  };
  await must("link", "add", bridge, "type", "bridge");
  await must("link", "set", bridge, "up");
  for (const { ns, veth, address } of hosts) {
    await must("netns", "add", ns);
    await must("link", "add", veth, "type", "veth", "peer", "name", `${veth}p`);
    await must("link", "set", `${veth}p`, "netns", ns);
    await must("link", "set", veth, "master", bridge);
    await must("link", "set", veth, "up");
    await must("-n", ns, "addr", "add", `${address}/24`, "dev", `${veth}p`);
    await must("-n", ns, "link", "set", `${veth}p`, "up");
    await must("-n", ns, "link", "set", "lo", "up");
  }
  return {
    hosts,
    async [Symbol.asyncDispose]() {
      for (const { ns } of hosts) await ip("netns", "del", ns);
      await ip("link", "del", bridge);
    },
  };
}

/** GET inside a namespace (the test process itself stays in the host's namespace). */
async function getInside(ns: string, node: TestNode, path: string) {
  const port = new URL(node.url).port;
  const output = await new Deno.Command("ip", {
    args: [
      "netns",
      "exec",
      ns,
      "curl",
      "-sf",
      "-H",
      `Authorization: Bearer ${node.apiKey}`,
      `http://127.0.0.1:${port}${path}`,
    ],
    stdout: "piped",
  }).output();
  return output.success ? JSON.parse(new TextDecoder().decode(output.stdout)) : undefined;
}

Deno.test({
  name: "nodes in separate network namespaces find each other over a bridge",
  ignore: !available,
  async fn() {
    await using net = await twoHosts();
    const nodes: TestNode[] = [];
    try {
      for (const { ns } of net.hosts) {
        nodes.push(
          await startTestNode({
            wrapper: ["ip", "netns", "exec", ns],
            host: "0.0.0.0",
            // The default port: each network namespace is a LAN of its own, apart from the host's.
            config: {
              apiKey: "netns-test-key-0123456789",
              discovery: { port: 5353, announceSeconds: 1 },
            },
          }),
        );
      }
      const ids = await Promise.all(
        nodes.map(async (node, i) =>
          (await getInside(net.hosts[i].ns, node, "/mds/v1/nodes?ping=true")).data.id
        ),
      );
      for (const [i, node] of nodes.entries()) {
        await waitFor(
          async () => {
            const answer = await getInside(
              net.hosts[i].ns,
              node,
              "/mesh/insight/v1/nodes?type=linkLocal",
            );
            return answer?.data.length === 2;
          },
          `node ${i} to list both`,
          10_000,
        );
      }
      const { data } = await getInside(
        net.hosts[1].ns,
        nodes[1],
        "/mesh/insight/v1/nodes?type=linkLocal",
      );
      const first = data.find((n: { id: string }) => n.id === ids[0]);
      // The peer's own URL on the bridged link, as it announced and proved it.
      assert.deepEqual(first.addresses, [{
        type: "local",
        url: { href: `http://10.231.7.11:${new URL(nodes[0].url).port}` },
      }]);
    } finally {
      await Promise.all(nodes.map((node) => node.stop()));
    }
  },
});
