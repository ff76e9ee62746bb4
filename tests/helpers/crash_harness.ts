/**
 * Crash consistency: a node is killed with SIGKILL at a random moment during an upload, a
 * download, a delete, a container deploy or a token change, restarted on the same data, and
 * checked:
 * - the database passes `PRAGMA integrity_check`;
 * - every record with readyToUse has its complete file (size and SHA-256 match);
 * - no model folder is without a record, and no temporary file survived the start;
 * - every container marked started answers;
 * - identity calls still work.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { DatabaseSync } from "node:sqlite";
import { packTar } from "modern-tar";
import { rpcCall } from "../../src/sdk/json_rpc.ts";
import { startFileServer } from "../../testing/file_server.ts";
import { cliToken, makeIssuer, type TestIssuer } from "../../testing/identity.ts";
import { postImage, startContainer } from "../../testing/mcm.ts";
import { ggufBytes, listFiles, startTestNode, type TestNode, waitFor } from "../../testing/node.ts";

const KEY = "a-crash-test-key-of-enough-length";
const SERVICE = new TextEncoder().encode(
  'mimikModule.exports = function (c, req, res) { res.end("alive"); };',
);

/** What a run did. */
export interface CrashReport {
  iterations: number;
  /** Models ready at the end: the transfers that finished before their kill. */
  ready: number;
  byOperation: Record<string, number>;
  seconds: number;
}

type Operation = "upload" | "download" | "delete" | "deploy" | "token";
const OPERATIONS: Operation[] = ["upload", "download", "delete", "deploy", "token"];

function pick<T>(items: T[]): T {
  return items[Math.floor(Math.random() * items.length)];
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `bytes` as a stream of 64 KiB chunks at about 10 MB/s, so that a kill lands mid-upload. */
function trickle(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    async pull(controller) {
      if (at >= bytes.length) return controller.close();
      await sleep(6);
      controller.enqueue(bytes.slice(at, at += 65_536));
    },
  });
}

async function call(node: TestNode, path: string, init: RequestInit = {}): Promise<Response> {
  return await fetch(`${node.url}${path}`, {
    ...init,
    headers: { Authorization: `Bearer ${KEY}`, ...init.headers },
  });
}

/** Starts `operation` against the node and returns without waiting for it to finish. */
async function begin(
  node: TestNode,
  operation: Operation,
  i: number,
  context: { source: string; issuer: TestIssuer; models: string[] },
): Promise<void> {
  const quietly = (work: Promise<unknown>) => void work.catch(() => {});
  const create = (id: string) =>
    call(node, "/ai/store/v1/models", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ id, version: "1", kind: "llm" }),
    }).then((r) => r.body?.cancel());
  switch (operation) {
    case "upload": {
      const id = `u${i}`;
      await create(id);
      context.models.push(id);
      quietly(
        call(node, `/ai/store/v1/models/${id}/upload`, {
          method: "POST",
          headers: { "Content-Type": "application/octet-stream" },
          body: trickle(ggufBytes(3_000_000, i)),
        }).then((r) => r.text()),
      );
      return;
    }
    case "download": {
      const id = `d${i}`;
      await create(id);
      context.models.push(id);
      quietly(
        call(node, `/ai/store/v1/models/${id}/download`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ url: context.source }),
        }).then((r) => r.text()),
      );
      return;
    }
    case "delete": {
      const id = context.models.length > 0 ? pick(context.models) : "none";
      quietly(call(node, `/ai/store/v1/models/${id}`, { method: "DELETE" }).then((r) => r.text()));
      return;
    }
    case "deploy":
      quietly(
        call(node, "/mcm/v1/containers", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ name: `c${i % 3}`, image: "svc" }),
        }).then((r) => r.text()),
      );
      return;
    case "token": {
      const token = await cliToken(context.issuer, "acct-crash", "edge:clusters");
      quietly(
        call(node, "/mesh/insight/v1/token", {
          method: "PUT",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ token }),
        }).then((r) => r.text()),
      );
      return;
    }
  }
}

/** The invariants after a restart; throws with what broke. */
async function checkInvariants(node: TestNode): Promise<void> {
  const db = new DatabaseSync(`${node.dataDir}/edgenode.db`, { readOnly: true });
  try {
    const [row] = db.prepare("PRAGMA integrity_check").all() as { integrity_check: string }[];
    assert.equal(row.integrity_check, "ok", "the database is intact");
  } finally {
    db.close();
  }
  const models = (await (await call(node, "/ai/store/v1/models")).json()).data as {
    id: string;
    readyToUse: boolean;
    totalSize?: number;
    sha256?: string;
  }[];
  for (const model of models.filter((m) => m.readyToUse)) {
    const file = await call(node, `/ai/store/v1/models/${model.id}?alt=media`);
    assert.equal(file.status, 200, `ready ${model.id} has its file`);
    const bytes = new Uint8Array(await file.arrayBuffer());
    assert.equal(bytes.length, model.totalSize, `${model.id}: size`);
    assert.equal(createHash("sha256").update(bytes).digest("hex"), model.sha256, `${model.id}`);
  }
  const ids = new Set(models.map((m) => m.id));
  const files = await listFiles(node.dataDir);
  const leftovers = files.filter((f) => f.endsWith(".partial") || f.startsWith("mcm/tmp/"));
  assert.deepEqual(leftovers, [], "no temporary file survives a start");
  const folders = new Set(
    files.filter((f) => f.startsWith("models/")).map((f) => f.split("/")[1]),
  );
  for (const folder of folders) assert.ok(ids.has(folder), `models/${folder} has a record`);

  let containers: { name: string; state: string; env: Record<string, string> }[] = [];
  await waitFor(
    async () => {
      containers = (await (await call(node, "/mcm/v1/containers")).json()).data;
      return containers.every((c) => c.state !== "starting" && c.state !== "restarting");
    },
    "the containers to come back",
    20_000,
  );
  for (const container of containers.filter((c) => c.state === "started")) {
    const answer = await fetch(`${node.url}${container.env["MCM.BASE_API_PATH"]}/`);
    assert.equal(await answer.text(), "alive", `${container.name} answers`);
  }
  const me = await rpcCall({ url: node.url }, "getMe");
  assert.ok(me.nodeId.length > 0);
}

/**
 * Runs crash rounds until `iterations` are done or `seconds` have passed; throws on the first
 * broken invariant, naming the operation and when the node was killed.
 */
export async function runCrashRounds(
  dir: string,
  iterations: number,
  seconds: number,
): Promise<CrashReport> {
  const started = performance.now();
  const issuer = await makeIssuer(`${dir}/issuer`);
  await using files = startFileServer();
  const source = files.serve("/m.gguf", ggufBytes(2_000_000, 7), { bytesPerSecond: 3_000_000 });
  const dataDir = `${dir}/node`;
  await Deno.mkdir(dataDir);
  const start = () =>
    startTestNode({
      dataDir,
      args: ["--trust", issuer.trustFile],
      config: { apiKey: KEY, discovery: { mdns: false } },
    });
  let node = await start();
  const tar = await packTar([{
    header: { name: "index.js", size: SERVICE.length, type: "file" },
    body: SERVICE,
  }]);
  await (await postImage(node, tar, "svc.tar")).body?.cancel();
  await startContainer(node, { name: "c0", image: "svc" });
  await rpcCall({ url: node.url }, "associateAccount", [
    await cliToken(issuer, "acct-crash", "edge:account:associate"),
  ]);
  const context = { source, issuer, models: [] as string[] };
  const byOperation: Record<string, number> = {};
  let i = 0;
  try {
    for (; i < iterations && performance.now() - started < seconds * 1000; i++) {
      const operation = pick(OPERATIONS);
      const killAfter = Math.floor(Math.random() * 400);
      await begin(node, operation, i, context);
      await sleep(killAfter);
      await node.crash();
      byOperation[operation] = (byOperation[operation] ?? 0) + 1;
      node = await start();
      try {
        await checkInvariants(node);
      } catch (error) {
        throw new Error(
          `after a crash ${killAfter} ms into ${operation} (round ${i}): ${
            (error as Error).message
          }\n${node.output().slice(-2000)}`,
        );
      }
    }
    const listed = (await (await call(node, "/ai/store/v1/models")).json()).data as {
      readyToUse: boolean;
    }[];
    const ready = listed.filter((model) => model.readyToUse).length;
    return { iterations: i, ready, byOperation, seconds: (performance.now() - started) / 1000 };
  } finally {
    await node.stop();
  }
}
