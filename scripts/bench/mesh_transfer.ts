/**
 * A model transfer on the LAN for `deno task bench` (alone: `deno task bench --only mesh`): two
 * nodes of one account in a private mDNS group on 127.0.0.1; B holds a `sizeMib` model file, A
 * downloads it given its sha256 and a dead URL (so every byte comes from B: a signed, ranged
 * GET /files/{sha256}, hashed and synced by A), next to `curl -o` of the same file from B's
 * `alt=media` followed by `sync FILE` (what A does besides the hash, issue 37's baseline; the
 * target is at least 0.9 of it) and by nothing.
 *
 * @module
 */
import { cliToken, makeIssuer, rpc } from "../../testing/identity.ts";
import { linkLocalNodes, nodeIdOf, randomMdnsPort, startMeshNode } from "../../testing/mesh.ts";
import { waitFor } from "../../testing/node.ts";
import { createModel, curlUpload, makeModelFile, run, timed } from "./tools.ts";

/** A URL nobody answers: the download can only come from the mesh. */
const DEAD_URL = "http://127.0.0.1:9/model.gguf";

/** Seconds of A's download of `id` from the mesh (three forced runs, the median). */
async function meshDownloadSeconds(storeUrl: string, auth: HeadersInit, sha256: string) {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    const response = await fetch(`${storeUrl}/models/big/download`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ url: DEAD_URL, sha256, force: true }),
    });
    const events = await response.text();
    if (!events.includes(`"done":true`) || !events.includes(`"node"`)) {
      throw new Error(`the mesh download failed: ${events.slice(-300)}`);
    }
    times.push((performance.now() - start) / 1000);
  }
  return times.sort((a, b) => a - b)[1];
}

/** The LAN transfer row. */
export async function meshTransferRows(sizeMib: number): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-mesh-" });
  try {
    const issuer = await makeIssuer(`${dir}/issuer`);
    const port = randomMdnsPort();
    const trust = { args: ["--trust", issuer.trustFile], announceSeconds: 1 };
    await using a = await startMeshNode(port, { name: "a", ...trust });
    await using b = await startMeshNode(port, { name: "b", ...trust });
    for (const node of [a, b]) {
      await rpc(node, "associateAccount", [
        await cliToken(issuer, "bench", "edge:account:associate"),
      ]);
    }
    const file = `${dir}/model.gguf`;
    await makeModelFile(file, sizeMib);
    const sha256 = (await run("sha256sum", [file])).split(" ")[0];
    await createModel(b, "big");
    await run("curl", curlUpload(`${b.storeUrl}/models/big/upload`, b.apiKey, file));
    await Deno.remove(file);
    const bId = await nodeIdOf(b);
    await waitFor(
      async () =>
        (await linkLocalNodes(a)).some((n) =>
          n.id === bId && n.accountId === "bench" &&
          // deno-lint-ignore no-explicit-any
          (n.models ?? []).some((m: any) => m.sha256 === sha256 && m.ready)
        ),
      "A to list B's model",
      30_000,
    );
    await createModel(a, "big");
    const mesh = await meshDownloadSeconds(a.storeUrl, a.auth(), sha256);
    const media = `${b.storeUrl}/models/big?alt=media`;
    const curl = await timed("curl", ["-sS", "--fail", "-o", `${dir}/curl.bin`, media]);
    const durable = await timed("sh", [
      "-c",
      `curl -sS --fail -o ${dir}/curl.bin '${media}' && sync ${dir}/curl.bin`,
    ]);
    const mb = sizeMib * 1.048576;
    const ratio = durable / mesh;
    return [[
      `LAN model transfer, ${sizeMib} MiB node to node by sha256 (POST .../download)`,
      `${(mb / mesh).toFixed(0)} MB/s (${ratio.toFixed(2)}×)`,
      `curl -o of the peer's alt=media then sync FILE: ${(mb / durable).toFixed(0)} MB/s; ` +
      `curl -o alone: ${(mb / curl).toFixed(0)} MB/s`,
    ]];
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const rows = await meshTransferRows(Number(Deno.args[0] ?? 256));
  for (const row of rows) console.log(row.join(" | "));
}
