import assert from "node:assert/strict";
import { DeleteResultSchema, ModelListSchema, ModelSchema } from "../gen/store/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import { startTestNode, type TestNode } from "../testing/node.ts";

function post(node: TestNode, body: unknown, headers = node.auth()) {
  return fetch(`${node.storeUrl}/models`, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

function put(node: TestNode, body: unknown) {
  return fetch(`${node.storeUrl}/models`, {
    method: "PUT",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify(body),
  });
}

Deno.test("create answers 201 with a not-ready Model, then 200 and merged metadata for the same id", async () => {
  await using node = await startTestNode();
  const before = Date.now();
  const created = await expectJson(
    await post(node, {
      id: "qwen3-1.7b",
      version: "1.0.0",
      kind: "llm",
      gguf: { initContextSize: 12000, initGpuLayerSize: 99 },
    }),
    201,
    ModelSchema,
  );
  assert.equal(created.readyToUse, false);
  assert.equal(created.totalSize, undefined);
  assert.ok(created.createdAt >= before && created.createdAt <= Date.now());
  assert.deepEqual(created.gguf, { initContextSize: 12000, initGpuLayerSize: 99 });

  const again = await expectJson(
    await post(node, {
      id: "qwen3-1.7b",
      version: "1.1.0",
      kind: "llm",
      gguf: { chatTemplateHint: "chatml" },
    }),
    200,
    ModelSchema,
  );
  assert.equal(again.version, "1.1.0");
  assert.equal(again.createdAt, created.createdAt);
  assert.deepEqual(again.gguf, {
    initContextSize: 12000,
    initGpuLayerSize: 99,
    chatTemplateHint: "chatml",
  });
  const listed = await expectJson(await fetch(`${node.storeUrl}/models`), 200, ModelListSchema);
  assert.equal(listed.data.length, 1);
});

Deno.test("list filters by kind and readiness, combinable, oldest first", async () => {
  await using node = await startTestNode();
  for (const [id, kind] of [["a", "llm"], ["b", "embed"], ["c", "onnx"], ["d", "llm"]]) {
    await expectJson(await post(node, { id, version: "1", kind }), 201, ModelSchema);
  }
  const ids = async (query: string) =>
    (await expectJson(await fetch(`${node.storeUrl}/models${query}`), 200, ModelListSchema)).data
      .map((m) => m.id);
  assert.deepEqual(await ids(""), ["a", "b", "c", "d"]);
  assert.deepEqual(await ids("?kind=llm"), ["a", "d"]);
  assert.deepEqual(await ids("?ready=false&kind=onnx"), ["c"]);
  assert.deepEqual(await ids("?ready=true"), []);
  await expectError(
    await fetch(`${node.storeUrl}/models?kind=gpt`),
    400,
    /query parameter 'kind' must be one of: llm, vlm, embed, onnx/,
  );
  await expectError(
    await fetch(`${node.storeUrl}/models?ready=yes`),
    400,
    /'ready' must be true or false/,
  );
  await expectError(
    await fetch(`${node.storeUrl}/models?kinds=llm`),
    400,
    /unknown query parameter 'kinds'/,
  );
  await expectError(
    await fetch(`${node.storeUrl}/models?kind=llm&kind=vlm`),
    400,
    /more than once/,
  );
});

Deno.test("the typed client reads, updates and deletes a record", async () => {
  await using node = await startTestNode();
  await expectJson(await post(node, { id: "phi", version: "1", kind: "llm" }), 201, ModelSchema);
  const got = await node.store.GET("/models/{id}", { params: { path: { id: "phi" } } });
  assert.equal(got.response.status, 200);
  // The spec gives this path two bodies (the Model, or the file with alt=media): narrow it.
  assert.ok(typeof got.data === "object");
  assert.equal(got.data.id, "phi");

  const updated = await node.store.PUT("/models", {
    body: { id: "phi", action: "update", gguf: { initContextSize: 2048 } },
  });
  assert.equal(updated.response.status, 200);
  // The spec gives PUT several bodies (a Model, a load's stream, the unloaded state): narrow it.
  assert.ok(typeof updated.data === "object" && "gguf" in updated.data);
  assert.deepEqual(updated.data.gguf, { initContextSize: 2048 });
  const again = await expectJson(
    await put(node, { id: "phi", action: "update", gguf: { chatTemplateHint: "phi3" } }),
    200,
    ModelSchema,
  );
  assert.deepEqual(again.gguf, { initContextSize: 2048, chatTemplateHint: "phi3" });

  const deleted = await expectJson(
    await fetch(`${node.storeUrl}/models/phi`, { method: "DELETE", headers: node.auth() }),
    200,
    DeleteResultSchema,
  );
  assert.deepEqual(deleted, { id: "phi", object: "model", deleted: true });
  await expectError(await fetch(`${node.storeUrl}/models/phi`), 404, /model 'phi' does not exist/);
  await expectError(
    await fetch(`${node.storeUrl}/models/phi`, { method: "DELETE", headers: node.auth() }),
    404,
  );
});

Deno.test("update: unknown id is 404, bad action and misplaced config are 400", async () => {
  await using node = await startTestNode();
  await expectJson(
    await post(node, {
      id: "vision",
      version: "1",
      kind: "onnx",
      onnx: { executionProvider: "cpu" },
    }),
    201,
    ModelSchema,
  );
  await expectError(
    await put(node, { id: "nope", action: "update" }),
    404,
    /'nope' does not exist/,
  );
  await expectError(
    await put(node, { id: "vision", action: "train" }),
    400,
    /field 'action' must be one of: update, load, unload/,
  );
  // An onnx model is not the inference engine's to load.
  await expectError(
    await put(node, { id: "vision", action: "load" }),
    400,
    /kind onnx; the engine runs GGUF models/,
  );
  await expectError(
    await put(node, { id: "vision", action: "unload", gguf: { initContextSize: 1 } }),
    400,
    /action 'unload' takes only 'id'/,
  );
  await expectError(
    await put(node, { id: "vision", action: "update", gguf: { initContextSize: 1 } }),
    400,
    /'gguf' is only for kinds llm, vlm and embed/,
  );
  const updated = await expectJson(
    await put(node, { id: "vision", action: "update", onnx: { executionProvider: "cuda" } }),
    200,
    ModelSchema,
  );
  assert.deepEqual(updated.onnx, { executionProvider: "cuda" });
});

Deno.test("ID rules are enforced on bodies and paths before anything else", async () => {
  await using node = await startTestNode();
  const cases: [string, RegExp][] = [
    [".hidden", /must not start with '\.' or '-'/],
    ["-dash", /must not start with '\.' or '-'/],
    ["a..b", /must not contain '\.\.'/],
    ["a/b", /only letters, digits/],
    ["sp ace", /only letters, digits/],
    ["", /must not be empty/],
    ["x".repeat(256), /at most 255 characters/],
  ];
  for (const [id, message] of cases) {
    await expectError(await post(node, { id, version: "1", kind: "llm" }), 400, message);
  }
  await expectJson(
    await post(node, { id: "x".repeat(255), version: "1", kind: "llm" }),
    201,
    ModelSchema,
  );
  await expectJson(
    await post(node, { id: "Llama-3.2_1B.Q4", version: "1", kind: "llm" }),
    201,
    ModelSchema,
  );
  // ("%2e%2e" is not here: the client's URL parser turns it into ".." and drops the segment.)
  for (const path of ["..%2F..%2Fetc", "a..b", ".env", "a%2Fb", "..."]) {
    await expectError(await fetch(`${node.storeUrl}/models/${path}`), 400, /path parameter 'id'/);
    await expectError(
      await fetch(`${node.storeUrl}/models/${path}`, { method: "DELETE", headers: node.auth() }),
      400,
    );
  }
});

Deno.test("bodies: wrong types, unknown fields, bounds, bad JSON, wrong content type, oversize", async () => {
  await using node = await startTestNode();
  const cases: [unknown, RegExp][] = [
    [{ id: "m", version: "1" }, /field 'kind' is required/],
    [{ id: "m", version: 1, kind: "llm" }, /field 'version' must be a string/],
    [{ id: "m", version: "1", kind: "gpt" }, /field 'kind' must be one of/],
    [{ id: "m", version: "1", kind: "llm", url: "http://x" }, /unknown field 'url'/],
    [
      { id: "m", version: "1", kind: "llm", gguf: { initContextSize: 1.5 } },
      /'gguf.initContextSize' must be an integer/,
    ],
    [{ id: "m", version: "1", kind: "llm", gguf: { initContextSize: -1 } }, /must be at least 0/],
    [
      { id: "m", version: "1", kind: "llm", gguf: { initContextSize: 16777217 } },
      /must be at most 16777216/,
    ],
    [
      { id: "m", version: "1", kind: "llm", gguf: { initGpuLayerSize: 65536 } },
      /must be at most 65535/,
    ],
    [
      { id: "m", version: "1", kind: "llm", gguf: { chatTemplateHint: "gpt" } },
      /'gguf.chatTemplateHint' must be one of: chatml/,
    ],
    [{ id: "m", version: "1", kind: "llm", gguf: { extra: 1 } }, /unknown field 'gguf.extra'/],
    [
      { id: "m", version: "1", kind: "onnx", onnx: { executionProvider: "rocm" } },
      /must be one of: cpu, cuda, coreml, tensorrt/,
    ],
    [
      { id: "m", version: "1", kind: "onnx", gguf: {} },
      /'gguf' is only for kinds llm, vlm and embed/,
    ],
    [{ id: "m", version: "1", kind: "embed", onnx: {} }, /'onnx' is only for kind onnx/],
    [[1, 2], /body must be a JSON object/],
    ["{not json", /body is not valid JSON/],
    ["null", /body must be a JSON object/],
    ['"text"', /body must be a JSON object/],
  ];
  for (const [body, message] of cases) await expectError(await post(node, body), 400, message);
  await expectError(
    await fetch(`${node.storeUrl}/models`, {
      method: "POST",
      headers: node.auth({ "Content-Type": "text/plain" }),
      body: "{}",
    }),
    415,
    /Content-Type must be application\/json/,
  );
  await expectError(
    await fetch(`${node.storeUrl}/models`, {
      method: "POST",
      headers: node.auth({ "Content-Type": "application/json" }),
    }),
    400,
    /request body is empty/,
  );
  await expectError(
    await post(node, { id: "m", version: "x".repeat(70_000), kind: "llm" }),
    413,
    /larger than 65536 bytes/,
  );
  await expectError(
    await post(node, { id: "m", version: "x".repeat(257), kind: "llm" }),
    400,
    /'version' must be at most 256/,
  );
  const listed = await expectJson(await fetch(`${node.storeUrl}/models`), 200, ModelListSchema);
  assert.equal(listed.data.length, 0, "no bad request may leave a record");
});

Deno.test("auth: mutations need the key (401 missing, 403 wrong), reads are open", async () => {
  await using node = await startTestNode();
  const body = { id: "m", version: "1", kind: "llm" };
  const r401 = await post(node, body, {});
  assert.match(r401.headers.get("www-authenticate") ?? "", /^Bearer/);
  await expectError(r401, 401, /missing credentials/);
  await expectError(
    await post(node, body, { Authorization: "Bearer wrong" }),
    403,
    /incorrect API key/,
  );
  await expectError(await post(node, body, { Authorization: `Basic ${node.apiKey}` }), 403);
  await expectError(await post(node, body, { Authorization: `Bearer ${node.apiKey}x` }), 403);
  await expectError(await fetch(`${node.storeUrl}/models`, { method: "PUT" }), 401);
  await expectError(await fetch(`${node.storeUrl}/models/m`, { method: "DELETE" }), 401);
  await expectError(await fetch(`${node.storeUrl}/models/m/upload`, { method: "POST" }), 401);
  await expectJson(await post(node, body), 201, ModelSchema);
  await expectJson(await fetch(`${node.storeUrl}/models`), 200, ModelListSchema);
  await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
});

Deno.test("readsRequireKey and extra prefixes from the config file", async () => {
  await using node = await startTestNode({
    config: {
      apiKey: "a-test-key-of-enough-length",
      readsRequireKey: true,
      storePrefixes: ["/ai/store/v1", "/mimik-ai/store/v1"],
    },
  });
  assert.equal(node.apiKey, "a-test-key-of-enough-length");
  await expectError(await fetch(`${node.storeUrl}/models`), 401);
  await expectJson(
    await fetch(`${node.storeUrl}/models`, { headers: node.auth() }),
    200,
    ModelListSchema,
  );
  await expectJson(await post(node, { id: "m", version: "1", kind: "llm" }), 201, ModelSchema);
  const legacy = await fetch(`${node.url}/mimik-ai/store/v1/models/m`, { headers: node.auth() });
  assert.equal((await expectJson(legacy, 200, ModelSchema)).id, "m");
});

Deno.test("unknown routes are 404 and wrong methods 405, both in the error shape; CORS preflight answers", async () => {
  await using node = await startTestNode();
  await expectError(
    await fetch(`${node.url}/nothing`),
    404,
    /no route for GET \/nothing; the model registry is under \/ai\/store\/v1/,
  );
  const r405 = await fetch(`${node.storeUrl}/models`, { method: "PATCH" });
  assert.equal(r405.headers.get("allow"), "GET, POST, PUT, HEAD, OPTIONS");
  await expectError(r405, 405, /PATCH is not allowed here/);
  const preflight = await fetch(`${node.storeUrl}/models`, { method: "OPTIONS" });
  await preflight.body?.cancel();
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get("access-control-allow-origin"), "*");
  assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /Authorization/);
  assert.match(preflight.headers.get("access-control-allow-headers") ?? "", /(^|, )Accept(,|$)/);
});

Deno.test("create on an existing ready model keeps its file; a kind of another format is 409", async () => {
  await using node = await startTestNode();
  await expectJson(await post(node, { id: "m", version: "1", kind: "llm" }), 201, ModelSchema);
  const file = new Uint8Array(100);
  file.set([0x47, 0x47, 0x55, 0x46, 3]);
  await expectJson(
    await fetch(`${node.storeUrl}/models/m/upload`, {
      method: "POST",
      headers: node.auth({ "Content-Type": "application/octet-stream" }),
      body: file,
    }),
    200,
    ModelSchema,
  );
  const recreated = await expectJson(
    await post(node, { id: "m", version: "2", kind: "embed" }),
    200,
    ModelSchema,
  );
  assert.equal(recreated.readyToUse, true);
  assert.equal(recreated.totalSize, 100);
  assert.equal(recreated.kind, "embed");
  await expectError(
    await post(node, { id: "m", version: "3", kind: "onnx" }),
    409,
    /delete the model first/,
  );
  assert.equal(
    (await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema)).kind,
    "embed",
  );
});

Deno.test("reads reflect every write at once (cached JSON is dropped on each write)", async () => {
  await using node = await startTestNode();
  const read = async () => {
    const one = await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
    const list = await expectJson(
      await fetch(`${node.storeUrl}/models?kind=llm`),
      200,
      ModelListSchema,
    );
    const ready = await expectJson(
      await fetch(`${node.storeUrl}/models?ready=true`),
      200,
      ModelListSchema,
    );
    return { one, list: list.data, ready: ready.data.map((m) => m.id) };
  };
  await expectJson(await post(node, { id: "m", version: "1", kind: "llm" }), 201, ModelSchema);
  assert.equal((await read()).one.version, "1");
  await expectJson(await post(node, { id: "m", version: "2", kind: "llm" }), 200, ModelSchema);
  assert.equal((await read()).list[0].version, "2");
  await expectJson(
    await put(node, { id: "m", action: "update", gguf: { initContextSize: 8 } }),
    200,
    ModelSchema,
  );
  assert.deepEqual((await read()).one.gguf, { initContextSize: 8 });
  const file = new Uint8Array(64);
  file.set([0x47, 0x47, 0x55, 0x46, 3]);
  const upload = await fetch(`${node.storeUrl}/models/m/upload`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/octet-stream" }),
    body: file,
  });
  await expectJson(upload, 200, ModelSchema);
  const after = await read();
  assert.equal(after.one.totalSize, 64);
  assert.deepEqual(after.ready, ["m"]);
  await fetch(`${node.storeUrl}/models/m`, { method: "DELETE", headers: node.auth() }).then((r) =>
    r.body?.cancel()
  );
  await expectError(await fetch(`${node.storeUrl}/models/m`), 404);
  const empty = await expectJson(
    await fetch(`${node.storeUrl}/models?kind=llm`),
    200,
    ModelListSchema,
  );
  assert.deepEqual(empty.data, []);
});
