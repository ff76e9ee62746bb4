import assert from "node:assert/strict";
import { tinyLlamaGguf } from "../../../testing/tiny_llama.ts";
import { callerFile, resolveStorageModel, storageSegments } from "./storage_model.ts";

Deno.test("storage names: '/'-separated storage file names, nothing that climbs out", () => {
  assert.deepEqual(storageSegments("cache/tiny.gguf"), ["cache", "tiny.gguf"]);
  assert.deepEqual(storageSegments("tiny.gguf"), ["tiny.gguf"]);
  for (const bad of ["/etc/x", "../x", "a/../x", "./x", "a//x", "a/", "", "a/\u0000", "a/.."]) {
    assert.equal(typeof storageSegments(bad), "string", bad);
  }
  assert.match(storageSegments("cache/.partial-x") as string, /being written/);
});

Deno.test("a storage model resolves inside its folder only, after the header checks", async () => {
  const outside = await Deno.makeTempDir();
  const root = await Deno.makeTempDir();
  try {
    const tiny = tinyLlamaGguf();
    await Deno.mkdir(`${root}/cache`);
    await Deno.writeFile(`${root}/cache/tiny.gguf`, tiny);
    await Deno.writeFile(`${outside}/theirs.gguf`, tiny);
    await Deno.symlink(`${root}/cache/tiny.gguf`, `${root}/alias.gguf`);
    await Deno.symlink(`${outside}/theirs.gguf`, `${root}/out.gguf`);
    await Deno.writeFile(`${root}/text.gguf`, new TextEncoder().encode("hello"));
    const file = await resolveStorageModel(root, "cache/tiny.gguf");
    assert.equal(file.name, "cache/tiny.gguf");
    assert.equal(file.size, tiny.length);
    assert.equal(file.path, await Deno.realPath(`${root}/cache/tiny.gguf`));
    const alias = await resolveStorageModel(root, "alias.gguf");
    assert.equal(alias.path, file.path, "a link that stays inside is followed");
    await assert.rejects(resolveStorageModel(root, "out.gguf"), /leads out/);
    await assert.rejects(resolveStorageModel(root, "text.gguf"), /not a GGUF file/);
    await assert.rejects(resolveStorageModel(root, "cache"), /not a file/);
    await assert.rejects(resolveStorageModel(root, "nothing.gguf"), /no such file/);
    const called = await callerFile(root, "c1", {
      model: "cache/tiny.gguf",
      max_context: 512,
      n_gpu_layers: 0,
      chatTemplateHint: "chatml",
    }, "llm");
    assert.equal(called.contextSize, 512);
    assert.equal(called.gpuLayers, 0);
    assert.equal(called.chatTemplateHint, "chatml");
    assert.equal(called.kind, "llm");
    await assert.rejects(
      callerFile(root, "c1", { model: "cache/tiny.gguf", max_context: "big" }, "llm"),
      /max_context/,
    );
    await assert.rejects(
      callerFile(root, "c1", { model: "cache/tiny.gguf", mmproj: "../x.gguf" }, "llm"),
      /not '\.' or '\.\.'/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});
