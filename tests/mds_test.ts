/**
 * GET /mds/v1/nodes: the ping, the encrypted listing and its key derivation (implemented here
 * again from spec/mds.yaml, so that the spec and the node must agree), the CLI that decrypts
 * it, and plain DNS-SD queries answered the way standard tools expect.
 */
import assert from "node:assert/strict";
import { compactDecrypt, decodeProtectedHeader } from "jose";
import { cliToken, makeIssuer, rpc } from "../testing/identity.ts";
import {
  linkLocalNodes,
  nodeIdOf,
  openMdnsClient,
  randomMdnsPort,
  startMeshNode,
} from "../testing/mesh.ts";
import { runEdgenode, waitFor, withTempDir } from "../testing/node.ts";

/** The spec's key derivation, written independently of the node's code. */
async function specKey(token: string, clusters: string): Promise<Uint8Array> {
  const encode = (text: string) => new TextEncoder().encode(text);
  const material = await crypto.subtle.importKey("raw", encode(token), "HKDF", false, [
    "deriveBits",
  ]);
  return new Uint8Array(
    await crypto.subtle.deriveBits(
      {
        name: "HKDF",
        hash: "SHA-256",
        salt: encode("edgenode mds v1"),
        info: encode(`nodes:${clusters}`),
      },
      material,
      256,
    ),
  );
}

async function listing(url: string, token?: string) {
  return await fetch(`${url}/mds/v1/nodes?clusters=linkLocal`, {
    headers: token ? { Authorization: `Bearer ${token}` } : {},
  });
}

Deno.test("the encrypted listing decrypts with the caller's token and not without it", async () => {
  await withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const port = randomMdnsPort();
    const trust = { args: ["--trust", issuer.trustFile] };
    const a = await startMeshNode(port, { name: "a", ...trust });
    const b = await startMeshNode(port, { name: "b", ...trust });
    try {
      const [idA, idB] = [await nodeIdOf(a), await nodeIdOf(b)];
      await rpc(a, "associateAccount", [
        await cliToken(issuer, "acct-1", "edge:account:associate"),
      ]);
      // The change of account reaches b's listing through a's new announcement.
      await waitFor(
        async () => {
          const data = await linkLocalNodes(b);
          return data.some((n: { id: string; accountId: string }) =>
            n.id === idA && n.accountId === "acct-1"
          );
        },
        "b to see a's account",
        5000,
      );

      const token = await cliToken(issuer, "acct-1", "edge:clusters");
      let data = "";
      // deno-lint-ignore no-explicit-any
      let localLinkNetwork: any;
      // b adopts a's network id and announces it; a lists b with it once it has checked again.
      await waitFor(
        async () => {
          const response = await listing(a.url, token);
          assert.equal(response.status, 200);
          data = (await response.json()).data;
          assert.equal(typeof data, "string");
          const { plaintext } = await compactDecrypt(data, await specKey(token, "linkLocal"));
          ({ localLinkNetwork } = JSON.parse(new TextDecoder().decode(plaintext)));
          return localLinkNetwork.nodes.every((n: { localLinkNetworkId: string }) =>
            n.localLinkNetworkId === localLinkNetwork.localLinkNetworkId
          );
        },
        "the members to agree on the network id",
        5000,
      );
      assert.deepEqual(decodeProtectedHeader(data), { alg: "dir", enc: "A256GCM", cty: "json" });
      const nodes = localLinkNetwork.nodes;
      assert.deepEqual(nodes.map((n: { id: string }) => n.id), [idA, idB]);
      assert.deepEqual(nodes[0].rolesInCluster, ["superNodeLocalLinkNetwork"]);
      assert.deepEqual(nodes[1].rolesInCluster, []);
      const first = nodes[0];
      assert.equal(first.APIVersion, "v1");
      assert.deepEqual(first.account, { id: "acct-1", self: "/accounts/acct-1" });
      assert.deepEqual(first.tenant, first.account);
      assert.deepEqual(first.addresses, [{ type: "local", url: { href: a.url } }]);
      assert.equal(first.networkAddress, "127.0.0.1");
      assert.deepEqual(first.attributes, [{ name: "name", value: "a" }]);
      const traits = Object.fromEntries(
        first.characteristics.map((c: { name: string; value: string }) => [c.name, c.value]),
      );
      assert.deepEqual(Object.keys(traits).sort(), [
        "cpu",
        "edgeVersion",
        "os",
        "totalPhysicalMemory",
        "totalStorage",
      ]);
      assert.ok(Number(traits.totalPhysicalMemory) > 0, "memory is read");
      assert.ok(Number(traits.totalStorage) > 0, "storage is read");
      assert.equal(nodes[1].account.id, "");

      // Another valid token of the same account cannot decrypt it.
      const other = await cliToken(issuer, "acct-1", "edge:clusters");
      await assert.rejects(compactDecrypt(data, await specKey(other, "linkLocal")));

      // The CLI decrypts a saved answer with the right token, and refuses the wrong one.
      await Deno.writeTextFile(`${dir}/answer.json`, JSON.stringify({ data }));
      const decrypt = (key: string) =>
        runEdgenode(["nodes", "decrypt", "--token", key, `${dir}/answer.json`]);
      const decrypted = await decrypt(token);
      assert.equal(decrypted.code, 0, decrypted.stderr);
      assert.equal(JSON.parse(decrypted.stdout).localLinkNetwork.nodes.length, 2);
      const refused = await decrypt(other);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /cannot decrypt the listing with this token/);
      const usage = await runEdgenode(["nodes", "decrypt", `${dir}/answer.json`]);
      assert.equal(usage.code, 2);
      assert.match(usage.stderr, /--token or --token-file is required/);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});

Deno.test("the listing refuses callers without a good token; ping needs none", async () => {
  await withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    // readsRequireKey guards the registry's reads, never the ping that peers need.
    const node = await startMeshNode(randomMdnsPort(), {
      args: ["--trust", issuer.trustFile],
      config: { readsRequireKey: true },
    });
    try {
      const ping = await fetch(`${node.url}/mds/v1/nodes?ping=true`);
      assert.deepEqual(await ping.json(), { data: { id: await nodeIdOf(node) } });

      const clusters = await cliToken(issuer, "acct-1", "edge:clusters");
      // Not associated yet: no account for the token to belong to.
      let response = await listing(node.url, clusters);
      assert.equal(response.status, 403);
      assert.match((await response.json()).error.message, /not associated/);
      await rpc(node, "associateAccount", [
        await cliToken(issuer, "acct-1", "edge:account:associate"),
      ]);

      response = await listing(node.url);
      assert.equal(response.status, 401);
      assert.deepEqual(Object.keys((await response.json()).error), ["code", "message"]);
      const refusals: [string, RegExp][] = [
        [await cliToken(issuer, "acct-2", "edge:clusters"), /account 'acct-2'/],
        [await cliToken(issuer, "acct-1", "edge:mcm"), /lacks scope 'edge:clusters'/],
        [node.apiKey, /not a JWT/],
      ];
      for (const [token, message] of refusals) {
        response = await listing(node.url, token);
        assert.equal(response.status, 403);
        assert.match((await response.json()).error.message, message);
      }
      const bad: [string, number, RegExp][] = [
        ["clusters=account", 503, /needs a hub/],
        ["clusters=galaxy", 400, /unknown clusters 'galaxy'/],
        ["", 400, /pass clusters=linkLocal/],
        [`challenge=${"x".repeat(20)}`, 400, /challenge goes with ping=true/],
        ["ping=true&challenge=short", 400, /challenge' must be at least 16/],
        [`ping=true&challenge=${"!".repeat(20)}`, 400, /16 to 128 base64url/],
        ["ping=maybe", 400, /true or false/],
      ];
      for (const [query, status, message] of bad) {
        response = await fetch(`${node.url}/mds/v1/nodes?${query}`, {
          headers: { Authorization: `Bearer ${clusters}` },
        });
        assert.equal(response.status, status, query);
        assert.match((await response.json()).error.message, message, query);
      }
    } finally {
      await node.stop();
    }
  });
});

Deno.test("a plain DNS-SD query gets a unicast answer, as dig and other resolvers expect", async () => {
  const port = randomMdnsPort();
  const node = await startMeshNode(port, { name: "resolver test" });
  const client = await openMdnsClient(port);
  try {
    const id = await nodeIdOf(node);
    await client.send({
      type: "query",
      id: 4242,
      questions: [
        { type: "PTR", name: "_edgenode._tcp.local" },
        { type: "PTR", name: "_services._dns-sd._udp.local" },
      ],
    });
    await waitFor(() => client.packets.some((p) => p.packet.id === 4242), "a unicast answer");
    const { packet } = client.packets.find((p) => p.packet.id === 4242)!;
    assert.equal(packet.type, "response");
    assert.equal(packet.questions?.length, 2, "legacy answers repeat the question");
    const records = [...(packet.answers ?? []), ...(packet.additionals ?? [])];
    assert.ok(records.every((r) => "ttl" in r && r.ttl! <= 10), "legacy TTLs are at most 10 s");
    const data = (type: string) =>
      records.filter((r) => r.type === type).map((r) => (r as { data: unknown }).data);
    assert.ok(data("PTR").includes("_edgenode._tcp.local"));
    const instance = `resolver test-${id.slice(0, 8)}._edgenode._tcp.local`;
    assert.ok(data("PTR").includes(instance));
    const srv = data("SRV")[0] as { port: number; target: string };
    assert.equal(srv.port, Number(new URL(node.url).port));
    assert.equal(srv.target, `edgenode-${id.slice(0, 12)}.local`);
    assert.deepEqual(data("A"), ["127.0.0.1"]);
    const txt = (data("TXT")[0] as Uint8Array[]).map((b) => new TextDecoder().decode(b));
    assert.ok(txt.includes(`id=${id}`));
    assert.ok(txt.includes("name=resolver test"));
    assert.ok(txt.includes(`port=${new URL(node.url).port}`));
    assert.ok(txt.some((t) => /^lln=lln-[0-9a-f]{32}$/.test(t)));
  } finally {
    await client.close();
    await node.stop();
  }
});
