import assert from "node:assert/strict";
import { multipartUpload } from "./multipart_upload.ts";

/** Bytes that differ from place to place, so a chunk repeated or overwritten shows. */
function pattern(size: number, seed: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed * 7 + (i >> 12)) & 0xff;
  return bytes;
}

/** A form's body and Content-Type, as a client sends them. */
async function encode(form: FormData): Promise<{ bytes: Uint8Array; type: string }> {
  const response = new Response(form);
  return { bytes: await response.bytes(), type: response.headers.get("content-type")! };
}

/** A byte stream (as a request body is) that gives `bytes` in pieces of `piece`, then `end`s. */
function body(bytes: Uint8Array, piece: number, end: "close" | "error" = "close") {
  let at = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (at >= bytes.length) {
        if (end === "error") controller.error(new Error("connection reset"));
        else {
          controller.close();
          // A pending BYOB read ends only with this (as a request body's does).
          controller.byobRequest?.respond(0);
        }
        return;
      }
      controller.enqueue(bytes.slice(at, at + piece));
      at += piece;
    },
  });
}

/** The file's bytes, each chunk copied as it comes (a lent chunk is gone after). */
async function copied(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array<ArrayBuffer>[] = [];
  for await (const chunk of chunks) parts.push(new Uint8Array(chunk)); // Buffer#slice is a view
  return await new Blob(parts).bytes();
}

const file = pattern(1_500_000, 1);
const before = new TextDecoder().decode(pattern(20_000, 2).map((b) => 97 + (b % 26)));
const after = new TextDecoder().decode(pattern(30_000, 3).map((b) => 97 + (b % 26)));

async function form(): Promise<{ bytes: Uint8Array; type: string }> {
  const data = new FormData();
  data.append("before", before);
  data.append("file", new Blob([file]), "m.gguf");
  data.append("after", after);
  return await encode(data);
}

Deno.test("multipart upload: the file whole, lent or kept, whatever the pieces; fields on both sides", async () => {
  const { bytes, type } = await form();
  // Pieces smaller than a read, of odd sizes, and larger than one.
  for (const piece of [4_999, 65_536, 100_003]) {
    for (const lentChunks of [true, false]) {
      const upload = await multipartUpload(body(bytes, piece), type, "file", { lentChunks });
      assert.equal(upload.filename, "m.gguf");
      // Kept chunks must stay as they were: read them all before looking at any.
      const got = lentChunks ? await copied(upload.chunks) : await Array.fromAsync(upload.chunks);
      await upload.complete;
      const whole = got instanceof Uint8Array ? got : await new Blob(got as BlobPart[]).bytes();
      assert.deepEqual(whole, file, `piece ${piece}, lent ${lentChunks}`);
      assert.equal(upload.fields.get("before"), before);
      // The field after the file spans reads, the first of which also held the file's end.
      assert.equal(upload.fields.get("after"), after);
    }
  }
});

Deno.test("multipart upload: a body that ends or breaks inside the file is a 400, from the chunks and complete", async () => {
  const { bytes, type } = await form();
  const cut = bytes.subarray(0, 800_000);
  for (const end of ["close", "error"] as const) {
    const upload = await multipartUpload(body(cut, 10_000, end), type, "file", {
      lentChunks: true,
    });
    const expected = end === "close" ? /Unexpected end of form/ : /connection reset/;
    await assert.rejects(() => copied(upload.chunks), (error: Error) => {
      assert.match(error.message, /^malformed multipart body: /);
      assert.match(error.message, expected);
      return true;
    });
    await assert.rejects(upload.complete, /malformed multipart body/);
  }
});

Deno.test("multipart upload: no such file field, or no boundary, is a 400 before any chunk", async () => {
  const { bytes, type } = await form();
  await assert.rejects(
    () => multipartUpload(body(bytes, 70_000), type, "other", { lentChunks: true }),
    /multipart body has no file field 'other'/,
  );
  await assert.rejects(
    () => multipartUpload(body(bytes, 70_000), "multipart/form-data", "file", { lentChunks: true }),
    /malformed multipart body: Multipart: Boundary not found/,
  );
});

Deno.test("multipart upload: a consumer that stops cancels the body and fails complete", async () => {
  const { bytes, type } = await form();
  let cancelled = false;
  const source = body(bytes, 8_192);
  const reader = source.getReader();
  const watched = new ReadableStream({
    type: "bytes",
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel() {
      cancelled = true;
    },
  });
  const upload = await multipartUpload(watched, type, "file", { lentChunks: true });
  for await (const _ of upload.chunks) break;
  await assert.rejects(upload.complete, /not read to its end/);
  assert.ok(cancelled);
});
