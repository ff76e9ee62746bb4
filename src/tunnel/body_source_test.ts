import assert from "node:assert/strict";
import { bodySource } from "./body_source.ts";
import { binaryCodec } from "./wire_frames.ts";

/** Reads `source` to its end, calling streams() after the first piece; the bytes and pieces. */
async function readAll(source: ReturnType<typeof bodySource>) {
  const pieces: Uint8Array[] = [];
  for (let first = true;; first = false) {
    const { value, done } = await source.read(64 * 1024);
    if (done) break;
    pieces.push(value);
    if (first) source.streams();
  }
  return { bytes: new Uint8Array(pieces.flatMap((piece) => [...piece])), pieces };
}

Deno.test("body source: a complete body comes whole, without frame space", async () => {
  const inPlace = new WeakSet<ArrayBufferLike>();
  const body = new Response("hello, tunnel").body!;
  const source = bodySource(body, binaryCodec.frameSpace, inPlace);
  const first = await source.read(64 * 1024);
  assert.equal(new TextDecoder().decode(first.value), "hello, tunnel");
  assert.equal(inPlace.has(first.value!.buffer), false);
  assert.equal((await source.read(64 * 1024)).done, true);
});

Deno.test("body source: a byte stream that streams is read into frame space from then on", async () => {
  const inPlace = new WeakSet<ArrayBufferLike>();
  const sent = new Uint8Array(200_000).map((_, i) => i * 31);
  // As a file's stream: a byte stream whose source hands over a piece per pull.
  let offset = 0;
  const body = new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (offset >= sent.length) {
        controller.close();
        // A BYOB read waiting for bytes is told that none come.
        return controller.byobRequest?.respond(0);
      }
      controller.enqueue(sent.slice(offset, offset += 30_000));
    },
  });
  const source = bodySource(body, binaryCodec.frameSpace, inPlace);
  const { bytes, pieces } = await readAll(source);
  assert.deepEqual(bytes, sent);
  // After the first piece every piece lies where its frame's header goes in front of it.
  assert.ok(pieces.length > 1);
  for (const piece of pieces.slice(1)) {
    assert.ok(inPlace.has(piece.buffer));
    assert.equal(piece.byteOffset, 9);
  }
});

Deno.test("body source: a stream of chunks that streams goes on with its own reader", async () => {
  const inPlace = new WeakSet<ArrayBufferLike>();
  const chunks = [new Uint8Array([1, 2]), new Uint8Array([3]), new Uint8Array([4, 5, 6])];
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < chunks.length) controller.enqueue(chunks[next++]);
      else controller.close();
    },
  });
  const { bytes, pieces } = await readAll(bodySource(body, binaryCodec.frameSpace, inPlace));
  assert.deepEqual(bytes, new Uint8Array([1, 2, 3, 4, 5, 6]));
  assert.equal(pieces.some((piece) => inPlace.has(piece.buffer)), false);
});

Deno.test("body source: without frame space a byte stream is read as it comes", async () => {
  const inPlace = new WeakSet<ArrayBufferLike>();
  const sent = new Uint8Array(100_000).fill(7);
  const { bytes, pieces } = await readAll(
    bodySource(new Blob([sent]).stream(), undefined, inPlace),
  );
  assert.deepEqual(bytes, sent);
  assert.equal(pieces.some((piece) => inPlace.has(piece.buffer)), false);
});
