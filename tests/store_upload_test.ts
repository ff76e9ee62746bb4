import assert from "node:assert/strict";
import { ModelListSchema, ModelSchema } from "../gen/store/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import {
  ggufBytes,
  listFiles,
  sha256Hex,
  startTestNode,
  type TestNode,
  waitFor,
} from "../testing/node.ts";
import { createModel as create, uploadRaw } from "./helpers/store.ts";

function uploadMultipart(
  node: TestNode,
  id: string,
  bytes: Uint8Array,
  field = "file",
  query = "",
) {
  const form = new FormData();
  form.append("note", "ignored");
  form.append(field, new Blob([bytes as BlobPart]), `${id}.gguf`);
  return fetch(`${node.storeUrl}/models/${id}/upload${query}`, {
    method: "POST",
    headers: node.auth(),
    body: form,
  });
}

async function media(node: TestNode, id: string): Promise<Uint8Array> {
  const response = await fetch(`${node.storeUrl}/models/${id}?alt=media`);
  assert.equal(response.status, 200);
  return new Uint8Array(await response.arrayBuffer());
}

/** Sends an upload's headers and the first part of its body over raw TCP, then stops. */
async function startPartialUpload(node: TestNode, id: string, declared: number, sent: Uint8Array) {
  const { port } = new URL(node.url);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: Number(port) });
  const head = `POST /ai/store/v1/models/${id}/upload HTTP/1.1\r\nHost: x\r\n` +
    `Authorization: Bearer ${node.apiKey}\r\nContent-Type: application/octet-stream\r\n` +
    `Content-Length: ${declared}\r\n\r\n`;
  await conn.write(new TextEncoder().encode(head));
  for (let off = 0; off < sent.length;) off += await conn.write(sent.subarray(off));
  return conn;
}

/** Reads a whole response (headers and its Content-Length of body) from a raw connection. */
async function readResponse(conn: Deno.Conn): Promise<string> {
  const buffer = new Uint8Array(4096);
  let text = "";
  while (true) {
    const read = await conn.read(buffer);
    if (read === null) return text;
    text += new TextDecoder().decode(buffer.subarray(0, read));
    const end = text.indexOf("\r\n\r\n");
    const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? NaN);
    if (end >= 0 && text.length >= end + 4 + length) return text;
  }
}

Deno.test("multipart and raw uploads store the file; the Model gets readyToUse, totalSize and sha256", async () => {
  await using node = await startTestNode();
  await create(node, "multi");
  await create(node, "raw");
  const a = ggufBytes(300_000, 1);
  const b = ggufBytes(5_000, 2);
  const multi = await expectJson(await uploadMultipart(node, "multi", a), 200, ModelSchema);
  assert.equal(multi.readyToUse, true);
  assert.equal(multi.totalSize, a.length);
  assert.equal(multi.sha256, await sha256Hex(a));
  const raw = await expectJson(
    await uploadRaw(node, "raw", b, `?sha256=${(await sha256Hex(b)).toUpperCase()}`),
    200,
    ModelSchema,
  );
  assert.equal(raw.totalSize, b.length);
  assert.deepEqual(await media(node, "multi"), a);
  assert.deepEqual(await media(node, "raw"), b);
  const ready = await expectJson(
    await fetch(`${node.storeUrl}/models?ready=true`),
    200,
    ModelListSchema,
  );
  assert.deepEqual(ready.data.map((m) => m.id), ["multi", "raw"]);
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), ["multi/multi.gguf", "raw/raw.gguf"]);
});

Deno.test("bad uploads are 4xx and leave the model as it was", async () => {
  await using node = await startTestNode();
  await create(node, "m");
  await create(node, "net", "onnx");
  const good = ggufBytes(1000);
  await expectJson(await uploadRaw(node, "m", good), 200, ModelSchema);
  const cases: [() => Promise<Response>, number, RegExp][] = [
    [
      () =>
        uploadRaw(node, "m", new TextEncoder().encode("PK\x03\x04 a zip file, not a model at all")),
      400,
      /not a GGUF file: it does not start with the bytes 'GGUF'/,
    ],
    [
      () => uploadRaw(node, "m", new TextEncoder().encode("GGUF")),
      400,
      /shorter than the 24-byte GGUF header/,
    ],
    [
      () =>
        uploadRaw(
          node,
          "m",
          new Uint8Array([0x47, 0x47, 0x55, 0x46, 9, 0, 0, 0, ...new Uint8Array(40)]),
        ),
      400,
      /GGUF version 9 is not supported/,
    ],
    [() => uploadRaw(node, "m", new Uint8Array(0)), 400, /the file is empty/],
    [
      () => uploadRaw(node, "m", ggufBytes(10, 9), `?sha256=${"0".repeat(64)}`),
      400,
      /sha256 mismatch: expected 0{64}/,
    ],
    [
      () => uploadRaw(node, "m", ggufBytes(10, 9), `?sha256=xyz`),
      400,
      /query parameter 'sha256' must be 64 hex digits/,
    ],
    [
      () => uploadMultipart(node, "m", ggufBytes(10, 9), "other"),
      400,
      /multipart body has no file field 'file'/,
    ],
    [
      () =>
        fetch(`${node.storeUrl}/models/m/upload`, {
          method: "POST",
          headers: node.auth({ "Content-Type": "multipart/form-data" }),
          body: "x",
        }),
      400,
      /malformed multipart body/,
    ],
    [
      () =>
        fetch(`${node.storeUrl}/models/m/upload`, {
          method: "POST",
          headers: node.auth({ "Content-Type": "multipart/form-data; boundary=XX" }),
          body:
            '--XX\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nGGUF\x03\0\0\0 and then it stops',
        }),
      400,
      /malformed multipart body/,
    ],
    [
      () =>
        fetch(`${node.storeUrl}/models/m/upload`, {
          method: "POST",
          headers: node.auth({ "Content-Type": "text/plain" }),
          body: "x",
        }),
      415,
      /Content-Type must be multipart\/form-data or application\/octet-stream/,
    ],
    [() => uploadRaw(node, "missing", good), 404, /model 'missing' does not exist/],
  ];
  for (const [send, status, message] of cases) await expectError(await send(), status, message);
  const model = await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
  assert.equal(model.totalSize, good.length);
  assert.equal(model.sha256, await sha256Hex(good));
  assert.deepEqual(await media(node, "m"), good);
  // An ONNX model takes any non-empty file; the GGUF check is only for GGUF kinds.
  const onnx = await expectJson(
    await uploadRaw(node, "net", new Uint8Array([8, 7, 1, 2, 3])),
    200,
    ModelSchema,
  );
  assert.equal(onnx.totalSize, 5);
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), ["m/m.gguf", "net/net.onnx"]);
});

Deno.test("an upload onto a ready model replaces its file", async () => {
  await using node = await startTestNode();
  await create(node, "m");
  await expectJson(await uploadRaw(node, "m", ggufBytes(5000, 1)), 200, ModelSchema);
  const second = ggufBytes(7000, 2);
  const model = await expectJson(await uploadMultipart(node, "m", second), 200, ModelSchema);
  assert.equal(model.totalSize, second.length);
  assert.deepEqual(await media(node, "m"), second);
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), ["m/m.gguf"]);
});

Deno.test("an upload aborted midway leaves the old file and record, and no temporary file", async () => {
  await using node = await startTestNode();
  await create(node, "m");
  const old = ggufBytes(2000, 1);
  await expectJson(await uploadRaw(node, "m", old), 200, ModelSchema);
  const conn = await startPartialUpload(node, "m", 10_000_000, ggufBytes(1_000_000, 2));
  const partials = async () =>
    (await listFiles(`${node.dataDir}/models`)).filter((f) => f.endsWith(".partial"));
  await waitFor(async () => (await partials()).length === 1, "the temporary file to appear");
  conn.close();
  await waitFor(async () => (await partials()).length === 0, "the temporary file to be removed");
  const model = await expectJson(await fetch(`${node.storeUrl}/models/m`), 200, ModelSchema);
  assert.equal(model.totalSize, old.length);
  assert.equal(model.readyToUse, true);
  assert.deepEqual(await media(node, "m"), old);
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), ["m/m.gguf"]);
});

Deno.test("deleting a model cancels its upload in progress: 409 for the upload, nothing left", async () => {
  await using node = await startTestNode();
  await create(node, "m");
  const conn = await startPartialUpload(node, "m", 5_000_000, ggufBytes(500_000));
  await waitFor(
    async () => (await listFiles(`${node.dataDir}/models`)).length === 1,
    "the upload to start",
  );
  const deleted = await fetch(`${node.storeUrl}/models/m`, {
    method: "DELETE",
    headers: node.auth(),
  });
  assert.equal(deleted.status, 200);
  await deleted.body?.cancel();
  const head = await readResponse(conn);
  conn.close();
  assert.match(head, /^HTTP\/1\.1 409/);
  assert.match(head, /was deleted while its file was being uploaded/);
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), []);
  await expectError(await fetch(`${node.storeUrl}/models/m`), 404);
});

Deno.test("a file over maxModelFileBytes is 413, from Content-Length or while streaming", async () => {
  await using node = await startTestNode({
    config: { apiKey: "a-test-key-of-enough-length", maxModelFileBytes: 4096 },
  });
  await create(node, "m");
  await expectError(
    await uploadRaw(node, "m", ggufBytes(5000)),
    413,
    /larger than the limit of 4096 bytes/,
  );
  await expectError(
    await uploadMultipart(node, "m", ggufBytes(5000)),
    413,
    /larger than the limit of 4096 bytes/,
  );
  await expectJson(await uploadRaw(node, "m", ggufBytes(4000)), 200, ModelSchema);
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), ["m/m.gguf"]);
});

Deno.test("curl uploads a multipart file with Expect: 100-continue", async () => {
  await using node = await startTestNode();
  await create(node, "big");
  const path = await Deno.makeTempFile({ suffix: ".gguf" });
  const bytes = ggufBytes(3_000_000, 5);
  await Deno.writeFile(path, bytes);
  const curl = await new Deno.Command("curl", {
    args: [
      "-sS",
      "-v",
      "-F",
      `file=@${path}`,
      "-H",
      `Authorization: Bearer ${node.apiKey}`,
      `${node.storeUrl}/models/big/upload`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(path);
  const trace = new TextDecoder().decode(curl.stderr);
  assert.match(trace, /> Expect: 100-continue/i);
  assert.match(trace, /< HTTP\/1\.1 100 Continue/);
  const model = JSON.parse(new TextDecoder().decode(curl.stdout));
  assert.equal(model.totalSize, bytes.length);
  assert.equal(model.sha256, await sha256Hex(bytes));
});

Deno.test("an upload larger than the free disk space is 507 before anything is written", async () => {
  await using node = await startTestNode();
  await create(node, "m");
  const conn = await startPartialUpload(node, "m", 10 ** 16, ggufBytes(100));
  const head = await readResponse(conn);
  conn.close();
  assert.match(head, /^HTTP\/1\.1 507/);
  assert.match(
    head,
    /not enough disk space: the file needs 10000000000000000 bytes and \d+ are free/,
  );
  assert.deepEqual(await listFiles(`${node.dataDir}/models`), []);
});
