/**
 * Downloads from a URL: the progress stream, vlm projectors, what is refused before the stream
 * starts, failure messages, ready models and forced re-downloads, and the GGUF metadata.
 */
import assert from "node:assert/strict";
import { ModelSchema } from "../gen/store/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import { allMessages, doneModel, startDownload, streamError } from "../testing/events.ts";
import { startFileServer } from "../testing/file_server.ts";
import { ggufWithMetadata, LLAMA3_TEMPLATE } from "./helpers/gguf.ts";
import { ggufBytes, listFiles, sha256Hex, startTestNode } from "../testing/node.ts";
import { createModel, readyModel, uploadRaw } from "./helpers/store.ts";

Deno.test("a download streams throttled progress, ends with done, and the file is served", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const bytes = ggufBytes(3 * 1024 * 1024);
  // About 1.5 s of transfer: enough for the throttle to show.
  const url = source.serve("/m.gguf", bytes, { bytesPerSecond: 2 * 1024 * 1024 });
  await createModel(node, "m");
  const started = Date.now();
  const all = await allMessages(await startDownload(node, "m", { url }));
  const seconds = (Date.now() - started) / 1000;
  const progress = all.filter((m) => "size" in m);
  assert.ok(progress.length >= 2, JSON.stringify(all));
  assert.ok(progress.length <= Math.ceil(seconds * 4) + 3, `${progress.length} in ${seconds} s`);
  for (const m of progress) assert.equal(m.totalSize, bytes.byteLength);
  const sizes = progress.map((m) => m.size);
  assert.deepEqual(sizes, [...sizes].sort((a, b) => a - b), "progress never goes back");
  assert.deepEqual(progress.at(-1), { size: bytes.byteLength, totalSize: bytes.byteLength });
  const model = doneModel(all);
  assert.equal(model.readyToUse, true);
  assert.equal(model.totalSize, bytes.byteLength);
  assert.equal(model.sha256, await sha256Hex(bytes));
  const served = await fetch(`${node.storeUrl}/models/m?alt=media`);
  assert.deepEqual(new Uint8Array(await served.arrayBuffer()), bytes);
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), ["m/m.gguf"]);
});

Deno.test("a vlm downloads its projector first, records it, and serves it with ranges", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const model = ggufBytes(200_000, 1);
  const projector = ggufBytes(50_000, 2);
  await createModel(node, "v", "vlm");
  const all = await allMessages(
    await startDownload(node, "v", {
      url: source.serve("/v.gguf", model),
      mmprojUrl: source.serve("/v-mmproj.gguf", projector),
      mmprojSha256: await sha256Hex(projector),
    }),
  );
  const kinds = all.map((m) => Object.keys(m)[0]);
  assert.equal(kinds.indexOf("mmproj") < kinds.indexOf("size"), true, kinds.join());
  assert.deepEqual(all.filter((m) => "mmproj" in m).at(-1), {
    mmproj: { size: projector.byteLength, totalSize: projector.byteLength },
  });
  const done = doneModel(all);
  assert.deepEqual(done.mmproj, {
    totalSize: projector.byteLength,
    sha256: await sha256Hex(projector),
  });
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), ["v/v.gguf", "v/v.mmproj.gguf"]);
  const part = await fetch(`${node.storeUrl}/models/v?alt=media&file=mmproj`, {
    headers: { Range: "bytes=100-199" },
  });
  assert.equal(part.status, 206);
  assert.deepEqual(new Uint8Array(await part.arrayBuffer()), projector.slice(100, 200));
  await expectError(await fetch(`${node.storeUrl}/models/v?file=mmproj`), 400, /needs 'alt=media'/);
});

Deno.test("bad download requests are plain JSON errors before any stream", async () => {
  await using node = await startTestNode({
    config: { apiKey: "a-test-key-of-enough-length", downloadHosts: ["127.0.0.1"] },
  });
  await using source = startFileServer();
  const url = source.serve("/x.gguf", ggufBytes());
  await createModel(node, "llm1");
  await createModel(node, "vlm1", "vlm");
  const post = (id: string, body: unknown, headers = node.auth()) =>
    fetch(`${node.storeUrl}/models/${id}/download`, {
      method: "POST",
      headers: { ...headers, "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  await expectError(await post("llm1", { url }, {}), 401);
  await expectError(await post("llm1", {}), 400, /field 'url' is required/);
  await expectError(await post("llm1", { url: "ftp://127.0.0.1/x" }), 400, /http:\/\/ or https/);
  await expectError(await post("llm1", { url: "http://[nope/x" }), 400, /not a valid URL/);
  await expectError(await post("nope", { url }), 404, /model 'nope' does not exist/);
  await expectError(await post("vlm1", { url }), 400, /vlm: give 'mmprojUrl'/);
  await expectError(await post("llm1", { url, mmprojUrl: url }), 400, /only for kind vlm/);
  await expectError(await post("llm1", { url, sha256: "xyz" }), 400, /64 hex digits/);
  await expectError(
    await post("llm1", { url: "http://example.org/x.gguf" }),
    400,
    /downloads may come only from 127\.0\.0\.1 \(downloadHosts\)/,
  );
  assert.equal(source.requests.length, 0, "nothing was fetched");
});

Deno.test("a failing source ends the stream with an error message and changes nothing", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  await createModel(node, "m");
  const missing = await allMessages(
    await startDownload(node, "m", { url: `${source.url}/missing.gguf` }),
  );
  streamError(
    missing,
    502,
    /the source answered 404 Not Found for http:\/\/127\.0\.0\.1:\d+\/missing\.gguf/,
  );
  const closed = await allMessages(await startDownload(node, "m", { url: "http://127.0.0.1:9/x" }));
  streamError(closed, 502, /the connection to http:\/\/127\.0\.0\.1:9\/x failed/);
  // The cause is named (here: nothing listens), not fetch's bare "fetch failed".
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  listener.close();
  const refusedUrl = `http://127.0.0.1:${listener.addr.port}/m.gguf`;
  const refused = await allMessages(await startDownload(node, "m", { url: refusedUrl }));
  streamError(refused, 502, /failed: the connection was refused \(nothing listens/);
  const full = await allMessages(
    await startDownload(node, "m", {
      url: source.serve("/huge.gguf", ggufBytes(), { announce: 1e16 }),
    }),
  );
  streamError(full, 507, /not enough disk space: the file needs 10000000000000000 bytes/);
  const model = await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
  assert.equal(model.readyToUse, false);
  assert.equal(model.totalSize, undefined);
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), []);
});

Deno.test("redirects are followed, and a redirect loop fails with a message", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const bytes = ggufBytes(10_000);
  source.serve("/real.gguf", bytes);
  const url = source.serve("/latest", new Uint8Array(), { redirectTo: "/real.gguf" });
  await createModel(node, "m");
  const model = doneModel(await allMessages(await startDownload(node, "m", { url })));
  assert.equal(model.sha256, await sha256Hex(bytes));
  const loop = source.serve("/loop", new Uint8Array(), { redirectTo: "/loop" });
  const all = await allMessages(await startDownload(node, "m", { url: loop, force: true }));
  streamError(all, 502, /the connection to .*\/loop failed: .*redirect/i);
  const loops = source.requests.filter((r) => r.path === "/loop").length;
  assert.ok(loops > 1 && loops <= 21, `${loops} requests`);
});

Deno.test("a ready model answers done at once; force replaces the file once verified", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const old = ggufBytes(1000, 1);
  const fresh = ggufBytes(2000, 2);
  await readyModel(node, "m", old);
  const url = source.serve("/new.gguf", fresh);
  const quick = await allMessages(await startDownload(node, "m", { url }));
  assert.deepEqual(quick[0], { size: old.byteLength, totalSize: old.byteLength });
  assert.equal(doneModel(quick).sha256, await sha256Hex(old));
  assert.equal(source.requests.length, 0, "a ready model is not fetched again");
  const wrong = await allMessages(
    await startDownload(node, "m", { url, force: true, sha256: "0".repeat(64) }),
  );
  streamError(wrong, 400, /sha256 mismatch: expected 0{64}, the download has [0-9a-f]{64}/);
  const kept = await fetch(`${node.storeUrl}/models/m?alt=media`);
  assert.deepEqual(new Uint8Array(await kept.arrayBuffer()), old, "the old file stays");
  const forced = await allMessages(await startDownload(node, "m", { url, force: true }));
  assert.equal(doneModel(forced).sha256, await sha256Hex(fresh));
  const served = await fetch(`${node.storeUrl}/models/m?alt=media`);
  assert.deepEqual(new Uint8Array(await served.arrayBuffer()), fresh);
});

Deno.test("GGUF metadata is recorded on download and upload, with a chat template suggestion", async () => {
  await using node = await startTestNode();
  await using source = startFileServer();
  const file = ggufWithMetadata({
    architecture: "llama",
    name: "Tiny Llama",
    contextLength: 8192,
    fileType: 15,
    chatTemplate: LLAMA3_TEMPLATE,
    vocabulary: 50_000,
    tensors: [[4096, 32000], [4096], [11008, 4096]],
    filler: 4096,
  });
  await createModel(node, "dl");
  const model = doneModel(
    await allMessages(await startDownload(node, "dl", { url: source.serve("/t.gguf", file) })),
  );
  const info = {
    architecture: "llama",
    name: "Tiny Llama",
    parameterCount: 4096 * 32000 + 4096 + 11008 * 4096,
    contextLength: 8192,
    quantization: "Q4_K_M",
    hasChatTemplate: true,
  };
  assert.deepEqual(model.ggufInfo, info);
  assert.equal(model.suggestedChatTemplateHint, "llama3");
  await createModel(node, "up", "llm", { gguf: { chatTemplateHint: "chatml" } });
  const uploaded = await expectJson(await uploadRaw(node, "up", file), 200, ModelSchema);
  assert.deepEqual(uploaded.ggufInfo, info);
  assert.equal(
    uploaded.suggestedChatTemplateHint,
    undefined,
    "the user's hint is never overridden",
  );
  assert.equal(uploaded.gguf?.chatTemplateHint, "chatml");
  const bare = await expectJson(await uploadRaw(node, "dl", ggufBytes()), 200, ModelSchema);
  assert.deepEqual(bare.ggufInfo, { hasChatTemplate: false });
  assert.equal(bare.suggestedChatTemplateHint, undefined);
});

Deno.test("a vlm's projector can be uploaded too; other kinds have none", async () => {
  await using node = await startTestNode();
  const projector = ggufBytes(5000, 3);
  await createModel(node, "v", "vlm");
  await createModel(node, "l");
  const model = await expectJson(
    await uploadRaw(node, "v", projector, "?file=mmproj"),
    200,
    ModelSchema,
  );
  assert.equal(model.readyToUse, false, "the projector alone does not make the model ready");
  assert.deepEqual(model.mmproj, { totalSize: 5000 + 24, sha256: await sha256Hex(projector) });
  await expectError(await uploadRaw(node, "l", projector, "?file=mmproj"), 400, /only a vlm/);
  await expectError(await fetch(`${node.storeUrl}/models/l?alt=media&file=mmproj`), 404);
  const served = await fetch(`${node.storeUrl}/models/v?alt=media&file=mmproj`);
  assert.deepEqual(new Uint8Array(await served.arrayBuffer()), projector);
});
