/**
 * Models travel on the LAN (issue 37): real nodes in a private mDNS group, A and B of account
 * acct-1, C of acct-2, D of acct-1 with `inference.mesh: "off"`. A download on A given the
 * file's sha256 is served by B (signed node requests, GET /files/{sha256}), never by C; a peer
 * whose bytes hash wrong or that stalls mid-file is left for the URL; B serves nobody else.
 * With `inference.mesh: "account"`, a node of the account behind the hub serves it too.
 *
 * @module
 */
import assert from "node:assert/strict";
import { NODE_REQUEST_HEADER, signNodeRequest } from "../src/identity/node_request.ts";
import { loadNodeKey } from "../src/identity/node_key.ts";
import { allMessages, doneModel, type DownloadMessage, startDownload } from "../testing/events.ts";
import { startFileServer } from "../testing/file_server.ts";
import { insightGet, joinHub, startTestHub } from "../testing/hub.ts";
import { cliToken, makeIssuer, rpc, type TestIssuer } from "../testing/identity.ts";
import { linkLocalNodes, nodeIdOf, randomMdnsPort, startMeshNode } from "../testing/mesh.ts";
import { ggufBytes, sha256Hex, type TestNode, waitFor, withTempDir } from "../testing/node.ts";
import { createModel, readyModel } from "./helpers/store.ts";

/** A URL nobody answers (a closed port). */
const DEAD_URL = "http://127.0.0.1:9/m.gguf";

/** Where the progress messages of a download said the bytes came from, in order, deduplicated. */
function sources(all: DownloadMessage[]): string[] {
  const said: string[] = [];
  for (const message of all) {
    if (!("size" in message) || message.source === undefined) continue;
    const name = message.source === "url" ? "url" : message.source.node;
    if (said.at(-1) !== name) said.push(name);
  }
  return said;
}

/** The model file A holds for `id`. */
async function fileOf(node: TestNode, id: string): Promise<Uint8Array> {
  const response = await fetch(`${node.storeUrl}/models/${id}?alt=media`, {
    headers: node.auth(),
  });
  assert.equal(response.status, 200);
  return new Uint8Array(await response.arrayBuffer());
}

/** Associates the node with `account`. */
async function associate(node: TestNode, issuer: TestIssuer, account: string) {
  await rpc(node, "associateAccount", [
    await cliToken(issuer, account, "edge:account:associate"),
  ]);
}

/** Waits until `a` lists node `id` of `account` advertising a ready file with `sha256`. */
async function advertised(a: TestNode, id: string, account: string, sha256: string) {
  await waitFor(
    async () =>
      (await linkLocalNodes(a)).some((n) =>
        n.id === id && n.accountId === account &&
        // deno-lint-ignore no-explicit-any
        (n.models ?? []).some((m: any) => m.sha256 === sha256 && m.ready)
      ),
    `A to list node ${id}'s model ${sha256.slice(0, 8)}`,
    20_000,
  );
}

/** GET /files/{sha256} on `node`, signed by the node whose data folder is `signerDir`. */
async function signedFetch(node: TestNode, nodeId: string, sha256: string, signerDir?: string) {
  const path = `/ai/store/v1/files/${sha256}`;
  const headers: Record<string, string> = {};
  if (signerDir) {
    const key = await loadNodeKey(signerDir);
    headers[NODE_REQUEST_HEADER] = await signNodeRequest(key.privateKey, key.publicJwk, {
      from: key.nodeId,
      to: nodeId,
      method: "GET",
      path,
    });
  }
  const response = await fetch(`${node.url}${path}`, { headers });
  await response.body?.cancel();
  return response.status;
}

Deno.test("models travel on the LAN between the nodes of one account, by sha256", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const port = randomMdnsPort();
    const trust = { args: ["--trust", issuer.trustFile] };
    // A leaves a silent peer after 2 s (the shorter of downloadStallSeconds and 5 s).
    await using a = await startMeshNode(port, {
      name: "a",
      ...trust,
      config: { downloadStallSeconds: 2 },
    });
    await using b = await startMeshNode(port, { name: "b", ...trust });
    await using c = await startMeshNode(port, { name: "c", ...trust });
    await using d = await startMeshNode(port, {
      name: "d",
      ...trust,
      config: { inference: { mesh: "off" } },
    });
    await using source = startFileServer();
    const [aId, bId, cId, dId] = await Promise.all([a, b, c, d].map(nodeIdOf));
    await associate(a, issuer, "acct-1");
    await associate(b, issuer, "acct-1");
    await associate(c, issuer, "acct-2");
    await associate(d, issuer, "acct-1");

    const m1 = ggufBytes(3 * 1024 * 1024, 1);
    const m1Sha = await sha256Hex(m1);
    await readyModel(b, "m1", m1);
    await readyModel(c, "m1", m1);
    const onlyC = ggufBytes(2 * 1024 * 1024, 2);
    const onlyCSha = await sha256Hex(onlyC);
    await readyModel(c, "only-c", onlyC);
    await advertised(a, bId, "acct-1", m1Sha);
    await advertised(a, cId, "acct-2", onlyCSha);
    await advertised(d, bId, "acct-1", m1Sha);

    // A download with M's sha256 and a dead URL completes from B, byte-identical.
    await createModel(a, "m1");
    const fromB = await allMessages(
      await startDownload(a, "m1", { url: DEAD_URL, sha256: m1Sha }),
    );
    assert.equal(doneModel(fromB).sha256, m1Sha, JSON.stringify(fromB.slice(-2)));
    assert.deepEqual(sources(fromB), [bId], "the progress names B, and only B");
    assert.deepEqual(await fileOf(a, "m1"), m1);

    // C (another account) holds a file nobody else has: A never asks it, and the URL is dead.
    await createModel(a, "only-c");
    const notFromC = await allMessages(
      await startDownload(a, "only-c", { url: DEAD_URL, sha256: onlyCSha }),
    );
    const last = notFromC.at(-1);
    assert.ok(last && "error" in last && last.error.code === 502, JSON.stringify(last));
    assert.deepEqual(sources(notFromC), [], "no byte came from anywhere: C was not asked");

    // B serves a node of its account, and nobody else: unsigned, the API key, C's signature, a
    // node nobody verified; D (mesh off) serves nobody, not even A.
    assert.equal(await signedFetch(b, bId, m1Sha, a.dataDir), 200);
    assert.equal(await signedFetch(b, bId, m1Sha), 401);
    const withKey = await fetch(`${b.url}/ai/store/v1/files/${m1Sha}`, { headers: b.auth() });
    await withKey.body?.cancel();
    assert.equal(withKey.status, 403, "the API key is no node's signature");
    assert.equal(await signedFetch(b, bId, m1Sha, c.dataDir), 403);
    assert.equal(await signedFetch(b, bId, m1Sha, `${dir}/stranger`), 403);
    assert.equal(await signedFetch(b, aId, m1Sha, a.dataDir), 403, "signed for another node");
    await readyModel(d, "m1", m1);
    assert.equal(await signedFetch(d, dId, m1Sha, a.dataDir), 403, "D's mesh is off");

    // D's mesh is off: its download asks no node (no `source` in its progress), only the URL.
    const offUrl = source.serve("/off.gguf", m1);
    await createModel(d, "m1-again");
    const fromUrl = await allMessages(
      await startDownload(d, "m1-again", { url: offUrl, sha256: m1Sha }),
    );
    assert.equal(doneModel(fromUrl).sha256, m1Sha);
    assert.ok(fromUrl.every((m) => !("size" in m) || m.source === undefined));
    assert.equal(source.requests.filter((r) => r.path === "/off.gguf").length, 1);

    // B's bytes hash wrong (its stored file was changed behind its back): refused, URL used.
    const m2 = ggufBytes(2 * 1024 * 1024, 3);
    const m2Sha = await sha256Hex(m2);
    await readyModel(b, "m2", m2);
    const corrupt = new Uint8Array(m2);
    corrupt[corrupt.length - 1] ^= 0xff;
    await Deno.writeFile(`${b.dataDir}/models/m2/m2.gguf`, corrupt);
    await advertised(a, bId, "acct-1", m2Sha);
    const m2Url = source.serve("/m2.gguf", m2);
    await createModel(a, "m2");
    const refused = await allMessages(
      await startDownload(a, "m2", { url: m2Url, sha256: m2Sha }),
    );
    assert.equal(doneModel(refused).sha256, m2Sha);
    assert.deepEqual(sources(refused), [bId, "url"]);
    assert.deepEqual(
      source.requests.filter((r) => r.path === "/m2.gguf").map((r) => r.range),
      [null],
      "the URL sends the whole file again",
    );
    assert.deepEqual(await fileOf(a, "m2"), m2);

    // B stalls mid-file (stopped): A goes on from the bytes it has, from the URL.
    const m3 = ggufBytes(160 * 1024 * 1024, 4);
    const m3Sha = await sha256Hex(m3);
    await readyModel(b, "m3", m3);
    await advertised(a, bId, "acct-1", m3Sha);
    const m3Url = source.serve("/m3.gguf", m3);
    await createModel(a, "m3");
    const download = startDownload(a, "m3", { url: m3Url, sha256: m3Sha }).then(allMessages);
    const folder = `${a.dataDir}/models/m3`;
    const started = async () => {
      try {
        for await (const entry of Deno.readDir(folder)) {
          const info = await Deno.stat(`${folder}/${entry.name}`).catch(() => undefined);
          if (entry.name.endsWith(".partial") && (info?.size ?? 0) > 0) return true;
        }
      } catch { /* not made yet */ }
      return false;
    };
    await waitFor(started, "A to write B's first bytes", 20_000);
    Deno.kill(b.pid, "SIGSTOP");
    try {
      const stalled = await download;
      assert.equal(doneModel(stalled).sha256, m3Sha, JSON.stringify(stalled.slice(-2)));
      assert.deepEqual(sources(stalled), [bId, "url"]);
      const ranges = source.requests.filter((r) => r.path === "/m3.gguf").map((r) => r.range);
      assert.equal(ranges.length, 1, JSON.stringify(ranges));
      const resumedAt = Number(/^bytes=(\d+)-$/.exec(ranges[0] ?? "")?.[1]);
      assert.ok(resumedAt > 0 && resumedAt < m3.byteLength, `resumed at ${ranges[0]}`);
      console.log(`mesh_model_transfer_test: B stopped, the URL went on from byte ${resumedAt}`);
      assert.equal(await sha256Hex(await fileOf(a, "m3")), m3Sha);
    } finally {
      Deno.kill(b.pid, "SIGCONT");
    }
  }));

Deno.test("with inference.mesh account, a node of the account behind the hub serves the file", () =>
  withTempDir(async (dir) => {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const hub = await startTestHub(issuer, `${dir}/hub`);
    const account = { config: { inference: { mesh: "account" } } };
    const a = await joinHub(hub.url, issuer, "acct-h", { name: "a", ...account });
    const b = await joinHub(hub.url, issuer, "acct-h", { name: "b", ...account });
    // C keeps the default mesh, `lan`: it serves no request that came through the hub.
    const c = await joinHub(hub.url, issuer, "acct-h", { name: "c" });
    try {
      const m = ggufBytes(3 * 1024 * 1024, 5);
      const sha256 = await sha256Hex(m);
      await readyModel(b.node, "m", m);
      await waitFor(
        async () => {
          const listed = await (await insightGet(a.node, "/nodes?type=account")).json();
          return (listed.data ?? []).some((n: { id: string; models?: { sha256?: string }[] }) =>
            n.id === b.id && (n.models ?? []).some((model) => model.sha256 === sha256)
          );
        },
        "A's account listing to show B's model",
        20_000,
      );
      await createModel(a.node, "m");
      const all = await allMessages(await startDownload(a.node, "m", { url: DEAD_URL, sha256 }));
      assert.equal(doneModel(all).sha256, sha256, JSON.stringify(all.slice(-2)));
      assert.deepEqual(sources(all), [b.id], "the progress names B");
      assert.deepEqual(await fileOf(a.node, "m"), m);

      const onlyC = ggufBytes(2 * 1024 * 1024, 6);
      const onlyCSha = await sha256Hex(onlyC);
      await readyModel(c.node, "only-c", onlyC);
      await waitFor(
        async () => {
          const listed = await (await insightGet(a.node, "/nodes?type=account")).json();
          return (listed.data ?? []).some((n: { id: string; models?: { sha256?: string }[] }) =>
            n.id === c.id && (n.models ?? []).some((model) => model.sha256 === onlyCSha)
          );
        },
        "A's account listing to show C's model",
        20_000,
      );
      await createModel(a.node, "only-c");
      const refused = await allMessages(
        await startDownload(a.node, "only-c", { url: DEAD_URL, sha256: onlyCSha }),
      );
      const last = refused.at(-1);
      assert.ok(last && "error" in last && last.error.code === 502, JSON.stringify(last));
      // A asked C through the hub, and C refused it.
      assert.match(a.node.output(), new RegExp(`node ${c.id} failed, going on: .*403`));
    } finally {
      await c.node.stop();
      await a.node.stop();
      await b.node.stop();
      await hub.stop();
    }
  }));
