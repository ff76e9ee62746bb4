/**
 * `context.ml` on the calling container's own GGUF files, the reference's mILM way
 * (`model: "cache/<id>.gguf"`): chats streamed and whole on a file of its storage, loaded with
 * the caller's settings, shown in its container's record, loaded again when the file is replaced
 * and unloaded when it is deleted; names that lead out of the storage (`..`, absolute paths,
 * links) and crafted files are refused clearly, and a bystander's model runs on unharmed. And
 * the whole mILM way (tests/helpers/reference_style_mims.ts): download into `cache/`, list it
 * ready, chat, delete (the model unloaded).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { ensureTestEngine } from "../testing/engine.ts";
import { startFileServer } from "../testing/file_server.ts";
import { deployScript, mcm } from "../testing/mcm.ts";
import { startTestNode, type TestNode, waitFor } from "../testing/node.ts";
import { hugeDeclaredGguf, tinyLlamaGguf } from "../testing/tiny_llama.ts";
import { declaredTensorGguf, withU32 } from "./helpers/hostile_inference_models.ts";
import { chat, enginePid, inferenceNode, say } from "./helpers/inference.ts";
import { MILM_STYLE } from "./helpers/reference_style_mims.ts";

/** POST /chat: the body is context.ml's options; the callbacks answer. */
const CHAT_MIM = String.raw`
mimikModule.exports = function (context, req, res) {
  var options = JSON.parse(req.body || '{}');
  options.error = function (err) {
    res.statusCode = 422;
    res.end(JSON.stringify({ callback: 'error', message: err.message, status: err.status }));
  };
  options.success = function (e) {
    res.setHeader('content-type', e.headers['content-type']);
    if (!options.stream) return res.end(e.data);
    res.write(e.data);
    if (e.done) res.end();
  };
  if (req.url.indexOf('/embed') === 0) {
    options.success = function (e) { res.end(e.data); };
    return context.ml.embeddings(options);
  }
  context.ml.chatCompletions(options);
};`;

/**
 * The folder of a container's storage files, as the node names it
 * (src/mcm/images/bundle_files.ts, src/mcm/sandbox/host/storage_files.ts).
 */
function filesOf(node: TestNode, container: string): string {
  const name = createHash("sha256").update(container).digest("hex").slice(0, 32);
  return `${node.dataDir}/mcm/storage/${name}/files`;
}

function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** The error callback's `{status, message}`, asserting the microservice got it. */
async function mlError(url: string, body: unknown) {
  const response = await post(url, body);
  const answer = await response.json();
  assert.equal(response.status, 422, JSON.stringify(answer));
  assert.equal(answer.callback, "error");
  return answer as { status: number; message: string };
}

/** The container record's loaded files (`inference.loadedFiles`), if any. */
async function loadedFiles(node: TestNode, container: string) {
  const response = await mcm(node, `/containers/${container}`);
  const record = await response.json();
  assert.equal(response.status, 200, JSON.stringify(record));
  return (record.inference?.loadedFiles ?? []) as {
    name: string;
    estimatedBytes: number;
    contextSize: number;
  }[];
}

const HELLO = [{ role: "user", content: "hello there" }];

Deno.test("context.ml on a GGUF of the caller's storage", async (t) => {
  const tiny = tinyLlamaGguf();
  await using node = await inferenceNode({ tiny: { bytes: tiny } });
  const { url, container } = await deployScript(node, "milmlike", CHAT_MIM);
  const other = await deployScript(node, "other", CHAT_MIM);
  const storage = filesOf(node, container.id);
  await Deno.mkdir(`${storage}/cache`, { recursive: true });
  await Deno.writeFile(`${storage}/tiny.gguf`, tiny);
  await Deno.writeFile(`${storage}/cache/tiny.gguf`, tiny);

  await t.step("streamed: the API's chunks, named by the file, then [DONE]", async () => {
    const response = await post(`${url}/`, {
      model: "tiny.gguf",
      messages: HELLO,
      stream: true,
      max_tokens: 4,
      max_context: 256,
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/event-stream");
    const messages = (await response.text()).split("\n\n");
    assert.equal(messages.pop(), "");
    assert.equal(messages.pop(), "data: [DONE]");
    const chunks = messages.map((message) => JSON.parse(message.slice("data: ".length)));
    for (const chunk of chunks) assert.equal(chunk.model, "tiny.gguf");
    assert.equal(chunks.at(-1).usage.completion_tokens, 4);
  });

  await t.step("its record shows the loaded file, with the caller's context", async () => {
    const files = await loadedFiles(node, container.id);
    assert.equal(files.length, 1, JSON.stringify(files));
    assert.equal(files[0].name, "tiny.gguf");
    assert.equal(files[0].contextSize, 256, "the caller's max_context applies");
    assert.ok(files[0].estimatedBytes > 0);
  });

  await t.step("whole, from a sub-folder: a chat.completion", async () => {
    const response = await post(`${url}/`, {
      model: "cache/tiny.gguf",
      messages: HELLO,
      max_tokens: 3,
      max_context: 256,
    });
    const completion = await response.json();
    assert.equal(response.status, 200, JSON.stringify(completion));
    assert.equal(completion.object, "chat.completion");
    assert.equal(completion.model, "cache/tiny.gguf");
    assert.equal(completion.usage.completion_tokens, 3);
  });

  await t.step("the caller's other settings load it again; embeddings too", async () => {
    const body = { model: "cache/tiny.gguf", messages: HELLO, max_tokens: 1, max_context: 128 };
    const response = await post(`${url}/`, body);
    assert.equal(response.status, 200, await response.text());
    const files = await loadedFiles(node, container.id);
    assert.equal(files.find((f) => f.name === "cache/tiny.gguf")?.contextSize, 128);
    const embedded = await post(`${url}/embed`, { model: "cache/tiny.gguf", input: ["hi", "yo"] });
    const vectors = await embedded.json();
    assert.equal(embedded.status, 200, JSON.stringify(vectors));
    assert.equal(vectors.length, 2);
    assert.equal(vectors[0].length, 64, "the tiny model's n_embd");
  });

  await t.step("a replaced file is loaded again, not served stale", async () => {
    const before = (await loadedFiles(node, container.id)).find((f) => f.name === "tiny.gguf");
    await Deno.writeFile(`${storage}/tiny.gguf`, tinyLlamaGguf({ embedding: 128 }));
    const body = { model: "tiny.gguf", messages: HELLO, max_tokens: 2, max_context: 256 };
    const response = await post(`${url}/`, body);
    assert.equal(response.status, 200, await response.text());
    const after = (await loadedFiles(node, container.id)).find((f) => f.name === "tiny.gguf");
    assert.ok(before && after);
    assert.ok(after.estimatedBytes > before.estimatedBytes, "the larger file is the one loaded");
  });

  await t.step("a deleted file is unloaded by the check, and refused after", async () => {
    await Deno.remove(`${storage}/tiny.gguf`);
    await waitFor(
      async () => !(await loadedFiles(node, container.id)).some((f) => f.name === "tiny.gguf"),
      "the deleted file unloaded",
    );
    const error = await mlError(`${url}/`, { model: "tiny.gguf", messages: HELLO });
    assert.equal(error.status, 404, "a name that is no file nor registry id: the registry's 404");
    const nested = await mlError(`${url}/`, { model: "cache/gone.gguf", messages: HELLO });
    assert.equal(nested.status, 400);
    assert.match(nested.message, /no such file in the container's storage/);
  });

  await t.step("names out of the storage and crafted files are refused clearly", async () => {
    const modelsDir = `${await Deno.realPath(node.dataDir)}/models`;
    const otherStorage = filesOf(node, other.container.id);
    await Deno.mkdir(otherStorage, { recursive: true });
    await Deno.writeFile(`${otherStorage}/theirs.gguf`, tiny);
    const otherFolder = otherStorage.split("/").at(-2);
    await Deno.symlink(`${modelsDir}/tiny/tiny.gguf`, `${storage}/link.gguf`);
    await Deno.symlink(modelsDir, `${storage}/models`);
    await Deno.writeFile(`${storage}/junk.gguf`, new TextEncoder().encode("not a model at all"));
    await Deno.writeFile(
      `${storage}/zero-heads.gguf`,
      withU32(tiny, "llama.attention.head_count", 0),
    );
    await Deno.writeFile(`${storage}/overflow.gguf`, declaredTensorGguf([2 ** 32, 2 ** 32]));
    await Deno.writeFile(`${storage}/huge.gguf`, hugeDeclaredGguf());
    await Deno.writeFile(`${storage}/cut.gguf`, tiny.slice(0, tiny.length - 4096));
    const engine = await enginePid(node);
    const refused: [string, number, RegExp][] = [
      [`../../${otherFolder}/files/theirs.gguf`, 400, /'\.\.' segments are refused/],
      ["cache/../tiny.gguf", 400, /'\.\.' segments are refused/],
      [`${otherStorage}/theirs.gguf`, 400, /is not a model of this node's registry/],
      [`${storage}/cache/tiny.gguf`, 400, /is not a model of this node's registry/],
      ["link.gguf", 400, /is a link or a special file: refused/],
      ["models/tiny/tiny.gguf", 400, /'models' is not a folder of the storage/],
      ["cache", 400, /not a file/],
      ["junk.gguf", 400, /not a GGUF file: it does not start/],
      ["zero-heads.gguf", 400, /not a usable GGUF file/],
      ["overflow.gguf", 400, /not a usable GGUF file/],
      ["cut.gguf", 400, /runs past the end/],
      ["huge.gguf", 507, /not enough memory/],
    ];
    for (const [model, status, message] of refused) {
      const error = await mlError(`${url}/`, { model, messages: HELLO, max_tokens: 1 });
      assert.equal(error.status, status, `${model}: ${error.message}`);
      assert.match(error.message, message, `${model}: ${error.message}`);
      if (model.startsWith("/")) continue; // the caller's own path, quoted back
      assert.ok(!error.message.includes(node.dataDir), `a host path in: ${error.message}`);
      assert.ok(!error.message.includes("/mcm/storage"), `a host path in: ${error.message}`);
    }
    assert.deepEqual(
      (await loadedFiles(node, container.id)).map((f) => f.name),
      ["cache/tiny.gguf"],
      "nothing refused was loaded",
    );
    const bystander = await chat(node, { model: "tiny", messages: say("hi"), max_tokens: 2 });
    assert.equal(bystander.usage.completion_tokens, 2);
    if (engine) assert.equal(await enginePid(node), engine, "the shared engine is the same");
  });
});

Deno.test("a mILM-style microservice downloads its model into cache/, lists it, chats, deletes it", async () => {
  await ensureTestEngine();
  await using files = startFileServer();
  await using node = await startTestNode({
    config: {
      apiKey: "a-test-key-of-enough-length",
      discovery: { mdns: false },
      mcm: { outboundNetworks: ["public", "private", "loopback"] },
    },
  });
  const { url, container } = await deployScript(node, "milm", MILM_STYLE, { API_KEY: "1234" });
  const milm = (path: string, init: RequestInit = {}, key = "1234") =>
    fetch(`${url}${path}`, {
      ...init,
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    });
  const modelUrl = files.serve("/tiny.gguf", tinyLlamaGguf());
  const download = { method: "POST", body: JSON.stringify({ id: "tiny", url: modelUrl }) };
  const forbidden = await milm("/models", download, "not-the-key");
  assert.equal(forbidden.status, 403, "mILM's key check");
  assert.equal((await forbidden.json()).message, "Forbidden");
  const downloaded = await milm("/models", download);
  assert.equal(downloaded.status, 201, await downloaded.text());
  const listed = await fetch(`${url}/models`);
  assert.deepEqual((await listed.json()).data, [{ id: "tiny", object: "model", readyToUse: true }]);

  const streamed = await milm("/chat/completions", {
    method: "POST",
    body: JSON.stringify({ model: "tiny", messages: HELLO, stream: true, max_tokens: 3 }),
  });
  assert.equal(streamed.status, 200);
  const text = await streamed.text();
  assert.match(text, /"model":"cache\/tiny\.gguf"/);
  assert.ok(text.endsWith("data: [DONE]\n\n"), text);
  assert.deepEqual((await loadedFiles(node, container.id)).map((f) => f.name), [
    "cache/tiny.gguf",
  ]);

  const deleted = await milm("/models?modelId=tiny", { method: "DELETE" });
  assert.equal(deleted.status, 200, await deleted.text());
  await waitFor(
    async () => (await loadedFiles(node, container.id)).length === 0,
    "the deleted model unloaded",
  );
  assert.deepEqual((await (await fetch(`${url}/models`)).json()).data, []);
  const after = await milm("/chat/completions", {
    method: "POST",
    body: JSON.stringify({ model: "tiny", messages: HELLO }),
  });
  const refused = await after.json();
  assert.equal(after.status, 400, JSON.stringify(refused));
  assert.equal(refused.statusCode, 400);
  assert.match(refused.message, /no such file in the container's storage/);
});
