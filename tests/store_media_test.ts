import assert from "node:assert/strict";
import { ModelSchema } from "../gen/store/validators.ts";
import { expectError, expectJson } from "../testing/contract.ts";
import { ggufBytes, sha256Hex, startTestNode, type TestNode } from "../testing/node.ts";
import { createModel, readyModel, uploadRaw } from "./helpers/store.ts";

async function get(
  node: TestNode,
  id: string,
  headers: Record<string, string> = {},
  method = "GET",
) {
  const response = await fetch(`${node.storeUrl}/models/${id}?alt=media`, { headers, method });
  return { response, body: new Uint8Array(await response.arrayBuffer()) };
}

Deno.test("alt=media serves the whole file with length, type, ETag, Last-Modified and a file name", async () => {
  await using node = await startTestNode();
  const bytes = ggufBytes(2_000_000);
  await readyModel(node, "m", bytes);
  const { response, body } = await get(node, "m");
  assert.equal(response.status, 200);
  assert.deepEqual(body, bytes);
  assert.equal(response.headers.get("content-length"), String(bytes.length));
  assert.equal(response.headers.get("content-type"), "application/octet-stream");
  assert.equal(response.headers.get("etag"), `"${await sha256Hex(bytes)}"`);
  assert.equal(response.headers.get("accept-ranges"), "bytes");
  assert.equal(response.headers.get("content-disposition"), 'attachment; filename="m.gguf"');
  const modified = Date.parse(response.headers.get("last-modified") ?? "");
  assert.ok(Math.abs(modified - Date.now()) < 60_000);
});

Deno.test("Range requests: 206 for a-b, a- and -n; 416 outside the file; several ranges get the whole file", async () => {
  await using node = await startTestNode();
  const bytes = ggufBytes(10_000);
  const size = bytes.length;
  await readyModel(node, "m", bytes);
  const cases: [string, number, number][] = [
    ["bytes=0-99", 0, 99],
    ["bytes=24-", 24, size - 1],
    ["bytes=-500", size - 500, size - 1],
    ["bytes=9000-999999", 9000, size - 1],
    [`bytes=${size - 1}-${size - 1}`, size - 1, size - 1],
  ];
  for (const [range, start, end] of cases) {
    const { response, body } = await get(node, "m", { Range: range });
    assert.equal(response.status, 206, range);
    assert.equal(response.headers.get("content-range"), `bytes ${start}-${end}/${size}`);
    assert.equal(response.headers.get("content-length"), String(end - start + 1));
    assert.deepEqual(body, bytes.subarray(start, end + 1), range);
  }
  for (const range of [`bytes=${size}-`, "bytes=500-100", "bytes=-0"]) {
    const response = await fetch(`${node.storeUrl}/models/m?alt=media`, {
      headers: { Range: range },
    });
    assert.equal(response.headers.get("content-range"), `bytes */${size}`);
    assert.equal(response.headers.get("access-control-expose-headers"), "Content-Range");
    await expectError(response, 416, new RegExp(`the file has ${size} bytes`));
  }
  const whole = await get(node, "m", { Range: "bytes=0-1,5-6" });
  assert.equal(whole.response.status, 200);
  assert.equal(whole.body.length, size);
});

Deno.test("conditional requests: If-None-Match gives 304, a stale If-Range gives the whole file", async () => {
  await using node = await startTestNode();
  const bytes = ggufBytes(5000);
  await readyModel(node, "m", bytes);
  const etag = `"${await sha256Hex(bytes)}"`;
  const notModified = await get(node, "m", { "If-None-Match": etag });
  assert.equal(notModified.response.status, 304);
  assert.equal(notModified.body.length, 0);
  const fresh = await get(node, "m", { Range: "bytes=0-9", "If-Range": etag });
  assert.equal(fresh.response.status, 206);
  const stale = await get(node, "m", { Range: "bytes=0-9", "If-Range": '"something-else"' });
  assert.equal(stale.response.status, 200);
  assert.equal(stale.body.length, bytes.length);
});

Deno.test("HEAD gives the headers of GET without a body, for the file and the record", async () => {
  await using node = await startTestNode();
  const bytes = ggufBytes(4000);
  await readyModel(node, "m", bytes);
  const file = await get(node, "m", {}, "HEAD");
  assert.equal(file.response.status, 200);
  assert.equal(file.response.headers.get("content-length"), String(bytes.length));
  assert.equal(file.body.length, 0);
  const part = await get(node, "m", { Range: "bytes=10-19" }, "HEAD");
  assert.equal(part.response.status, 206);
  assert.equal(part.response.headers.get("content-length"), "10");
  const record = await fetch(`${node.storeUrl}/models/m`, { method: "HEAD" });
  assert.equal(record.status, 200);
  assert.match(record.headers.get("content-type") ?? "", /application\/json/);
  assert.equal((await record.arrayBuffer()).byteLength, 0);
  const recordBody = await (await fetch(`${node.storeUrl}/models/m`)).arrayBuffer();
  assert.equal(
    record.headers.get("content-length"),
    String(recordBody.byteLength),
    "RFC 9110: HEAD sends GET's Content-Length",
  );
  const missing = await fetch(`${node.storeUrl}/models/nope?alt=media`, { method: "HEAD" });
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
});

Deno.test("HEAD is answered wherever GET is (RFC 9110), with GET's headers and no body", async () => {
  await using node = await startTestNode();
  const paths = [
    "/jsonrpc/v1/jwks",
    "/ai/store/v1/models",
    "/mds/v1/nodes?ping=true",
    "/",
  ];
  for (const path of paths) {
    // identity: fetch would otherwise ask for gzip and hand back the inflated body.
    const headers = node.auth({ "Accept-Encoding": "identity" });
    const get = await fetch(`${node.url}${path}`, { headers });
    const getBody = await get.arrayBuffer();
    const head = await fetch(`${node.url}${path}`, { method: "HEAD", headers });
    assert.equal(head.status, get.status, path);
    assert.equal(head.headers.get("content-type"), get.headers.get("content-type"), path);
    assert.equal(head.headers.get("content-length"), String(getBody.byteLength), path);
    assert.equal((await head.arrayBuffer()).byteLength, 0, path);
  }
});

Deno.test("alt=media is 404 for an unknown model and for one without a file; other alt values are 400", async () => {
  await using node = await startTestNode();
  await expectError(
    await fetch(`${node.storeUrl}/models/nope?alt=media`),
    404,
    /model 'nope' does not exist/,
  );
  await createModel(node, "empty");
  await expectError(await fetch(`${node.storeUrl}/models/empty?alt=media`), 404, /has no file yet/);
  await expectError(
    await fetch(`${node.storeUrl}/models/empty?alt=json`),
    400,
    /query parameter 'alt' must be one of: media/,
  );
});

Deno.test("a reader keeps the file it opened while an upload replaces it", async () => {
  await using node = await startTestNode();
  const first = ggufBytes(3_000_000, 1);
  await readyModel(node, "m", first);
  const reading = await fetch(`${node.storeUrl}/models/m?alt=media`);
  const reader = reading.body!.getReader();
  const firstChunk = await reader.read();
  const second = ggufBytes(1000, 2);
  await expectJson(await uploadRaw(node, "m", second), 200, ModelSchema);
  const parts = [firstChunk.value!];
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    parts.push(chunk.value);
  }
  const received = new Uint8Array(await new Blob(parts as BlobPart[]).arrayBuffer());
  assert.deepEqual(received, first);
  assert.deepEqual(
    new Uint8Array(await (await fetch(`${node.storeUrl}/models/m?alt=media`)).arrayBuffer()),
    second,
  );
});
