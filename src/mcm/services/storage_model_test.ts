import assert from "node:assert/strict";
import { tinyLlamaGguf } from "../../../testing/tiny_llama.ts";
import { callerFile, inStorage, resolveStorageModel } from "./storage_model.ts";

Deno.test("a storage model resolves inside its files folder only, after the header checks", async () => {
  const outside = await Deno.makeTempDir();
  const storage = await Deno.makeTempDir();
  const files = `${storage}/files`;
  try {
    const tiny = tinyLlamaGguf();
    await Deno.mkdir(`${files}/cache`, { recursive: true });
    await Deno.writeFile(`${files}/cache/tiny.gguf`, tiny);
    await Deno.writeFile(`${outside}/theirs.gguf`, tiny);
    await Deno.writeFile(`${storage}/beside.gguf`, tiny);
    await Deno.symlink(`${outside}/theirs.gguf`, `${files}/out.gguf`);
    await Deno.symlink(outside, `${files}/away`);
    await Deno.writeFile(`${files}/text.gguf`, new TextEncoder().encode("hello"));
    const file = await resolveStorageModel(storage, "cache/tiny.gguf");
    assert.equal(file.name, "cache/tiny.gguf");
    assert.equal(file.size, tiny.length);
    assert.equal(file.path, await Deno.realPath(`${files}/cache/tiny.gguf`));
    for (
      const [name, why] of [
        ["out.gguf", /link/],
        ["away/theirs.gguf", /not a folder of the storage/],
        ["../beside.gguf", /'\.\.' segments are refused/],
        ["/etc/passwd", /relative/],
        ["text.gguf", /not a GGUF file/],
        ["cache", /not a file/],
        ["nothing.gguf", /no such file/],
        ["cache/.partial-x", /reserved/],
      ] as const
    ) {
      await assert.rejects(resolveStorageModel(storage, name), why, name);
    }
    assert.equal(await inStorage(storage, "cache"), true);
    assert.equal(await inStorage(storage, "nothing.gguf"), false);
    assert.equal(await inStorage(storage, "../beside.gguf"), false);
    const called = await callerFile(storage, "c1", {
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
      callerFile(storage, "c1", { model: "cache/tiny.gguf", max_context: "big" }, "llm"),
      /max_context/,
    );
    await assert.rejects(
      callerFile(storage, "c1", { model: "cache/tiny.gguf", mmproj: "../x.gguf" }, "llm"),
      /'\.\.' segments are refused/,
    );
  } finally {
    await Deno.remove(storage, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("a container that never stored a file has no storage model", async () => {
  const storage = await Deno.makeTempDir();
  try {
    await assert.rejects(resolveStorageModel(storage, "tiny.gguf"), /no such file/);
  } finally {
    await Deno.remove(storage, { recursive: true });
  }
});
