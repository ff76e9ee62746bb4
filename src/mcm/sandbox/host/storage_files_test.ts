import assert from "node:assert/strict";
import { StorageFileError, StorageFiles } from "./storage_files.ts";

Deno.test("storage files: folders are made on demand and count a block each in the quota", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const files = new StorageFiles(dir, 10_000, () => 0);
    await assert.rejects(files.save("a/b/c/d.bin", new Uint8Array()), StorageFileError);
    await files.save("a/x.bin", new Uint8Array(100));
    assert.deepEqual(await Deno.readFile(`${dir}/files/a/x.bin`), new Uint8Array(100));
    // 10 000 - 4096 (the folder) - 100 bytes are left, counted again when reopened.
    for (const opened of [files, new StorageFiles(dir, 10_000, () => 0)]) {
      await assert.rejects(opened.save("y.bin", new Uint8Array(5805)), /full/);
      await opened.save("y.bin", new Uint8Array(5804));
      await opened.delete("y.bin");
    }
    await assert.rejects(files.delete("a"), /not empty/);
    await assert.rejects(files.save("a", new Uint8Array(1)), /is a folder/);
    await files.delete("a/x.bin");
    assert.ok((await Deno.stat(`${dir}/files/a`)).isDirectory, "the folder stays");
    await files.delete("a");
    await files.save("z.bin", new Uint8Array(10_000));
    assert.equal(await files.open("a/x.bin"), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
