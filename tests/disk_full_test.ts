/**
 * A full disk: the node runs on a 24 MiB tmpfs (mounted in a mount namespace of its own, so
 * nothing leaks; root only, skipped otherwise), which an upload and then a download fill. Each
 * fails with a clear error, the models already there stay intact, no partial file is left, and
 * once space is freed the same transfers succeed.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { dashboardClient } from "../src/sdk/clients.ts";
import { startFileServer } from "../testing/file_server.ts";
import { allMessages, startDownload } from "../testing/events.ts";
import { ggufBytes, startTestNode, type TestNode, withTempDir } from "../testing/node.ts";
import { createModel, readyModel } from "./helpers/store.ts";

/** Whether this test may mount a file system in a mount namespace of its own. */
async function canMount(): Promise<boolean> {
  return await new Deno.Command("unshare", {
    args: ["-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
    stderr: "null",
  }).output().then((output) => output.success, () => false);
}

/** The node's data directory on a tmpfs of `size` inside its own mount namespace. */
function onSmallDisk(dataDir: string, size: string): string[] {
  // The config is written before the start: carry it over onto the new file system.
  const script = `cp "$0/config.json" "$0.config" && mount -t tmpfs -o size=${size},mode=700 ` +
    `tmpfs "$0" && mv "$0.config" "$0/config.json" && exec "$@"`;
  return ["unshare", "-m", "--propagation", "private", "sh", "-c", script, dataDir];
}

/** A body of `bytes` as a stream, so that its size is not declared up front. */
function streamed(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at += 256 * 1024));
    },
  });
}

/** Free bytes on the node's disk, as its status says. */
async function freeBytes(node: TestNode): Promise<number> {
  const { data } = await dashboardClient({ url: node.url }).GET("/dashboard/v1/status");
  return data!.disk.freeBytes;
}

async function sha256Of(node: TestNode, id: string): Promise<string> {
  const file = await fetch(`${node.storeUrl}/models/${id}?alt=media`);
  assert.equal(file.status, 200);
  return createHash("sha256").update(new Uint8Array(await file.arrayBuffer())).digest("hex");
}

Deno.test("a full disk fails uploads and downloads cleanly and loses nothing", async (t) => {
  if (!(await canMount())) {
    await t.step("skipped: mounting a small file system needs root and unshare", () => {});
    return;
  }
  await withTempDir(async (dir) => {
    const dataDir = `${dir}/data`;
    await Deno.mkdir(dataDir);
    await using node = await startTestNode({
      dataDir,
      wrapper: onSmallDisk(dataDir, "24m"),
      config: { apiKey: "a-disk-test-key-of-enough-length", discovery: { mdns: false } },
    });
    const kept = ggufBytes(4_000_000, 3);
    const keptModel = await readyModel(node, "kept", kept);
    const big = ggufBytes(30_000_000, 4);

    const free = await freeBytes(node);
    const nothingLeft = async () => {
      // The partial file is gone: the space it took is free again.
      assert.ok(Math.abs(await freeBytes(node) - free) < 1_000_000, "the partial file is removed");
    };

    await t.step("an upload of undeclared size that fills the disk", async () => {
      await createModel(node, "big");
      const response = await fetch(`${node.storeUrl}/models/big/upload`, {
        method: "POST",
        headers: node.auth({ "Content-Type": "application/octet-stream" }),
        body: streamed(big),
      });
      const text = await response.text();
      assert.equal(response.status, 507, text);
      assert.match(JSON.parse(text).error.message, /disk became full/);
      const { data } = await node.store.GET("/models/{id}", {
        params: { path: { id: "big" }, query: {} },
        parseAs: "json",
      });
      assert.equal((data as { readyToUse: boolean }).readyToUse, false);
      await nothingLeft();
    });

    await using files = startFileServer();
    const source = files.serve("/big.gguf", big, { noLength: true });
    await t.step("a download of undeclared size that fills the disk", async () => {
      await createModel(node, "pulled");
      const messages = await allMessages(await startDownload(node, "pulled", { url: source }));
      const last = messages.at(-1)!;
      assert.ok("error" in last, JSON.stringify(last));
      assert.match(last.error.message, /disk became full/);
      await nothingLeft();
    });

    await t.step("what was there is intact, and space freed is used again", async () => {
      assert.equal(await sha256Of(node, "kept"), keptModel.sha256);
      const small = ggufBytes(3_000_000, 5);
      const retried = await fetch(`${node.storeUrl}/models/big/upload`, {
        method: "POST",
        headers: node.auth({ "Content-Type": "application/octet-stream" }),
        body: streamed(small),
      });
      assert.equal(retried.status, 200, await retried.text());
      const deleted = await fetch(`${node.storeUrl}/models/kept`, {
        method: "DELETE",
        headers: node.auth(),
      });
      assert.equal(deleted.status, 200);
      await deleted.body?.cancel();
      const fits = files.serve("/fits.gguf", ggufBytes(8_000_000, 6), { noLength: true });
      const messages = await allMessages(await startDownload(node, "pulled", { url: fits }));
      assert.ok("done" in messages.at(-1)!, JSON.stringify(messages.at(-1)));
    });
  });
});
