import assert from "node:assert/strict";
import { resolveStorageFile, StorageNameError, storageNameSegments } from "./storage_names.ts";

Deno.test("storage names: '/'-separated relative paths of checked segments", () => {
  assert.deepEqual(storageNameSegments("cache/tiny.gguf"), ["cache", "tiny.gguf"]);
  assert.deepEqual(storageNameSegments("model.bin"), ["model.bin"]);
  assert.deepEqual(storageNameSegments("a/b/c-mmproj.gguf"), ["a", "b", "c-mmproj.gguf"]);
  const refused = [
    "",
    "..",
    ".",
    "../x",
    "cache/../../x",
    "cache/./x",
    "/etc/passwd",
    "a//b",
    "cache/",
    "a\\b",
    "a/.partial-0",
    "a/b c?",
    `${"a/".repeat(512)}b`,
    `${"x".repeat(256)}`,
  ];
  for (const name of refused) {
    assert.throws(() => storageNameSegments(name), StorageNameError, JSON.stringify(name));
  }
});

Deno.test("storage names: links and files on the way are refused, missing folders reported", async () => {
  const dir = await Deno.makeTempDir();
  const outside = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/cache`);
    await Deno.writeTextFile(`${dir}/plain`, "x");
    await Deno.symlink(outside, `${dir}/out`);
    await Deno.symlink(`${outside}/f`, `${dir}/cache/link.gguf`);
    assert.deepEqual(resolveStorageFile(dir, "cache/a.gguf"), {
      path: `${dir}/cache/a.gguf`,
      missingFolders: [],
    });
    assert.deepEqual(resolveStorageFile(dir, "new/sub/a.gguf").missingFolders, [
      `${dir}/new`,
      `${dir}/new/sub`,
    ]);
    for (const name of ["out/x", "out/sub/x", "cache/link.gguf", "plain/x"]) {
      assert.throws(() => resolveStorageFile(dir, name), StorageNameError, name);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});
