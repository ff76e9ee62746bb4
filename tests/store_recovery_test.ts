import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { ModelListSchema } from "../gen/store/validators.ts";
import { expectJson } from "../testing/contract.ts";
import {
  ggufBytes,
  listFiles,
  sha256Hex,
  startTestNode,
  type TestNode,
  waitFor,
  withTempDir,
} from "../testing/node.ts";
import { readyModel } from "./helpers/store.ts";

async function models(node: TestNode) {
  const list = await expectJson(await fetch(`${node.storeUrl}/models`), 200, ModelListSchema);
  return Object.fromEntries(list.data.map((m) => [m.id, m]));
}

Deno.test("records and files survive a restart", () =>
  withTempDir(async (dataDir) => {
    const bytes = ggufBytes(50_000);
    {
      await using node = await startTestNode({ dataDir });
      await readyModel(node, "m", bytes, { gguf: { initContextSize: 4096 } });
    }
    await using node = await startTestNode({ dataDir });
    const m = (await models(node)).m;
    assert.equal(m.readyToUse, true);
    assert.equal(m.totalSize, bytes.length);
    assert.deepEqual(m.gguf, { initContextSize: 4096 });
    const served = new Uint8Array(
      await (await fetch(`${node.storeUrl}/models/m?alt=media`)).arrayBuffer(),
    );
    assert.deepEqual(served, bytes);
  }));

Deno.test("start-up removes temporary files and orphan folders, and unreadies records whose file is gone or wrong", () =>
  withTempDir(async (dataDir) => {
    {
      await using node = await startTestNode({ dataDir });
      await readyModel(node, "kept", ggufBytes(1000, 1));
      await readyModel(node, "lost", ggufBytes(1000, 2));
      await readyModel(node, "cut", ggufBytes(1000, 3));
    }
    const root = `${dataDir}/models`;
    await Deno.writeFile(`${root}/kept/.kept.gguf.1234.partial`, new Uint8Array(10));
    await Deno.mkdir(`${root}/ghost`);
    await Deno.writeFile(`${root}/ghost/ghost.gguf`, ggufBytes(10));
    await Deno.remove(`${root}/lost/lost.gguf`);
    await Deno.truncate(`${root}/cut/cut.gguf`, 500);

    await using node = await startTestNode({ dataDir });
    assert.match(
      node.output(),
      /recovered model store: .*"removedPartials":1,"removedOrphanFolders":1/,
    );
    const all = await models(node);
    assert.equal(all.kept.readyToUse, true);
    assert.equal(all.lost.readyToUse, false);
    assert.equal(all.lost.totalSize, undefined);
    assert.equal(all.cut.readyToUse, false);
    assert.equal(all.ghost, undefined);
    assert.deepEqual(await listFiles(root), ["cut/cut.gguf", "kept/kept.gguf"]);
    const missing = await fetch(`${node.storeUrl}/models/lost?alt=media`);
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  }));

Deno.test("a crash between renaming a new file into place and recording it is settled at start-up", () =>
  withTempDir(async (dataDir) => {
    const old = ggufBytes(1000, 1);
    const renamed = ggufBytes(2000, 2);
    {
      await using node = await startTestNode({ dataDir });
      await readyModel(node, "arrived", old);
      await readyModel(node, "never", old);
    }
    // The state such a crash leaves: the pending columns are set; for "arrived" the rename
    // happened, for "never" it did not.
    const db = new DatabaseSync(`${dataDir}/edgenode.db`);
    const pending = db.prepare(
      "UPDATE models SET pending_size = ?, pending_sha256 = ? WHERE id = ?",
    );
    pending.run(renamed.length, await sha256Hex(renamed), "arrived");
    pending.run(renamed.length, await sha256Hex(renamed), "never");
    db.close();
    await Deno.writeFile(`${dataDir}/models/arrived/arrived.gguf`, renamed);

    await using node = await startTestNode({ dataDir });
    const all = await models(node);
    assert.equal(all.arrived.readyToUse, true);
    assert.equal(all.arrived.totalSize, renamed.length);
    assert.equal(all.arrived.sha256, await sha256Hex(renamed));
    assert.equal(all.never.readyToUse, true);
    assert.equal(all.never.sha256, await sha256Hex(old));
  }));

Deno.test("SIGKILL during an upload: after a restart the old file and record stand and no temporary file is left", () =>
  withTempDir(async (dataDir) => {
    const old = ggufBytes(1000, 1);
    {
      const node = await startTestNode({ dataDir });
      await readyModel(node, "m", old);
      const conn = await Deno.connect({
        hostname: "127.0.0.1",
        port: Number(new URL(node.url).port),
      });
      const head =
        `POST /ai/store/v1/models/m/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${node.apiKey}\r\n` +
        `Content-Type: application/octet-stream\r\nContent-Length: 50000000\r\n\r\n`;
      await conn.write(new TextEncoder().encode(head));
      await conn.write(ggufBytes(2_000_000, 2));
      await waitFor(
        async () => (await listFiles(`${dataDir}/models`)).some((f) => f.endsWith(".partial")),
        "the upload to start",
      );
      await node.crash();
      conn.close();
      assert.ok(
        (await listFiles(`${dataDir}/models`)).some((f) => f.endsWith(".partial")),
        "the crash leaves a partial file",
      );
    }
    await using node = await startTestNode({ dataDir });
    assert.deepEqual(await listFiles(`${dataDir}/models`), ["m/m.gguf"]);
    const m = (await models(node)).m;
    assert.equal(m.readyToUse, true);
    assert.equal(m.sha256, await sha256Hex(old));
    const db = new DatabaseSync(`${dataDir}/edgenode.db`, { readOnly: true });
    assert.deepEqual({ ...db.prepare("PRAGMA integrity_check").get() }, { integrity_check: "ok" });
    db.close();
  }));

Deno.test("a database from the first release gains the new columns and keeps its records", () =>
  withTempDir(async (dataDir) => {
    const bytes = ggufBytes(1000);
    const db = new DatabaseSync(`${dataDir}/edgenode.db`);
    // The table exactly as release 0.1 created it.
    db.exec(`CREATE TABLE models (id TEXT PRIMARY KEY, version TEXT NOT NULL, kind TEXT NOT NULL,
      ready INTEGER NOT NULL DEFAULT 0, total_size INTEGER, sha256 TEXT, created_at INTEGER NOT NULL,
      gguf TEXT, onnx TEXT, pending_size INTEGER, pending_sha256 TEXT) STRICT`);
    db.prepare(
      "INSERT INTO models (id, version, kind, ready, total_size, sha256, created_at) VALUES (?, '1', 'llm', 1, ?, ?, 5)",
    ).run("old", bytes.length, await sha256Hex(bytes));
    db.close();
    await Deno.mkdir(`${dataDir}/models/old`, { recursive: true });
    await Deno.writeFile(`${dataDir}/models/old/old.gguf`, bytes);
    await using node = await startTestNode({ dataDir });
    const all = await models(node);
    assert.deepEqual(all.old, {
      id: "old",
      version: "1",
      kind: "llm",
      readyToUse: true,
      totalSize: bytes.length,
      sha256: await sha256Hex(bytes),
      createdAt: 5,
    });
  }));

Deno.test("a crash while a vlm's two files were being put in place is settled file by file", () =>
  withTempDir(async (dataDir) => {
    const projector = ggufBytes(500, 5);
    {
      await using node = await startTestNode({ dataDir });
      await fetch(`${node.storeUrl}/models`, {
        method: "POST",
        headers: node.auth({ "Content-Type": "application/json" }),
        body: JSON.stringify({ id: "v", version: "1", kind: "vlm" }),
      }).then((r) => r.body?.cancel());
    }
    // The projector was renamed into place; the model file never arrived.
    const db = new DatabaseSync(`${dataDir}/edgenode.db`);
    db.prepare(
      `UPDATE models SET pending_size = 99, pending_sha256 = ?, pending_mmproj_size = ?,
       pending_mmproj_sha256 = ? WHERE id = 'v'`,
    ).run("0".repeat(64), projector.length, await sha256Hex(projector));
    db.close();
    await Deno.mkdir(`${dataDir}/models/v`, { recursive: true });
    await Deno.writeFile(`${dataDir}/models/v/v.mmproj.gguf`, projector);
    await using node = await startTestNode({ dataDir });
    const { v } = await models(node);
    assert.equal(v.readyToUse, false);
    assert.deepEqual(v.mmproj, { totalSize: projector.length, sha256: await sha256Hex(projector) });
  }));
