/**
 * A model file written through a temporary file, both ways a file sink may write it (hash then
 * write on one thread; hash and write overlapping, the way of machines of 4 cores or more): the
 * same bytes give the same file, size, head and SHA-256, and the same failures leave nothing.
 */
import assert from "node:assert/strict";
import { ggufBytes, sha256Hex } from "../../testing/node.ts";
import { ModelFiles } from "./model_files.ts";

/** Filler bytes after the GGUF header: 20 MiB and some, across many buffers and windows. */
const SIZE = 20 * 1024 * 1024 + 12_345;

/** A raw request body's kind of stream: a byte stream, read straight into the sink's buffers. */
function byteStream(bytes: Uint8Array, piece: number): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (at < bytes.length) return controller.enqueue(bytes.slice(at, at += piece));
      controller.close();
      // A BYOB read waiting at the end is answered by hand (as Deno's request bodies do).
      controller.byobRequest?.respond(0);
    },
  });
}

/** Chunks as a multipart body's file gives them; with `abort`, aborted halfway. */
async function* pieces(bytes: Uint8Array, piece: number, abort?: AbortController) {
  for (let at = 0; at < bytes.length; at += piece) {
    if (abort && at >= bytes.length / 2) abort.abort(new Error("gone"));
    yield bytes.slice(at, at + piece);
  }
}

/** What writing `body` gave: the file's figures or the error, and the files left in the folder. */
async function outcome(
  overlap: boolean,
  body: (abort: AbortController) => AsyncIterable<Uint8Array>,
  maxBytes?: number,
) {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-model-files-" });
  const files = await ModelFiles.open(dir, { overlap });
  const abort = new AbortController();
  try {
    const written = await files.writeTemp("m", "m.gguf", body(abort), {
      signal: abort.signal,
      maxBytes,
      headBytes: 64,
    });
    const content = await sha256Hex(await Deno.readFile(written.tempPath));
    await files.discard(written);
    const { size, sha256, head } = written;
    return { size, sha256, head: [...head], content, left: await leftIn(files.dirOf("m")) };
  } catch (error) {
    return { error: String(error), left: await leftIn(files.dirOf("m")) };
  } finally {
    files.close();
    await Deno.remove(dir, { recursive: true });
  }
}

async function leftIn(dir: string): Promise<string[]> {
  return (await Array.fromAsync(Deno.readDir(dir))).map((entry) => entry.name);
}

const bytes = ggufBytes(SIZE, 7);
const cases: Array<[string, (abort: AbortController) => AsyncIterable<Uint8Array>, number?]> = [
  ["a byte stream", () => byteStream(bytes, 100_000)],
  ["chunks", () => pieces(bytes, 65_536)],
  ["a byte stream over maxBytes", () => byteStream(bytes, 100_000), 8 << 20],
  ["chunks over maxBytes", () => pieces(bytes, 65_536), SIZE - 1],
  ["chunks aborted midway", (abort) => pieces(bytes, 65_536, abort)],
];

for (const [name, body, maxBytes] of cases) {
  Deno.test(`model files: ${name} gives the same outcome whether hash and write overlap`, async () => {
    const [apart, overlapping] = [
      await outcome(false, body, maxBytes),
      await outcome(true, body, maxBytes),
    ];
    assert.deepEqual(overlapping, apart);
    assert.deepEqual(apart.left, []);
    if (maxBytes !== undefined) assert.match(String(apart.error), /larger than the limit/);
    else if (name.includes("aborted")) assert.match(String(apart.error), /gone/);
    else {
      const sha256 = await sha256Hex(bytes);
      assert.deepEqual(
        { size: apart.size, sha256: apart.sha256, content: apart.content, head: apart.head },
        { size: bytes.length, sha256, content: sha256, head: [...bytes.subarray(0, 64)] },
      );
    }
  });
}
