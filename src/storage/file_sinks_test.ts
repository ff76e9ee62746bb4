import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { FileSinks } from "./file_sinks.ts";
import { BufferPool } from "./file_sinks_pool.ts";

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Bytes that differ from place to place, so a chunk written twice or out of order shows. */
function pattern(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed * 7 + (i >> 12)) & 0xff;
  return bytes;
}

async function withSinks(test: (sinks: FileSinks, dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-sinks-" });
  const sinks = new FileSinks(dir, 2);
  try {
    await test(sinks, dir);
  } finally {
    sinks.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("file sinks: concurrent files are written whole, in order, with their SHA-256", () =>
  withSinks(async (sinks, dir) => {
    // Odd sizes and chunkings across the 512 KiB buffers and the 8 MiB window.
    const files = [0, 1, 2, 3, 4].map((n) => pattern(3_000_000 + n * 777_777, n));
    const digests = await Promise.all(files.map(async (bytes, n) => {
      const sink = sinks.open(`${dir}/f${n}`);
      for (let at = 0; at < bytes.length; at += 65_000 + n * 1_000) {
        await sink.write(bytes.subarray(at, at + 65_000 + n * 1_000));
      }
      return await sink.finish();
    }));
    for (const [n, bytes] of files.entries()) {
      assert.equal(digests[n], sha256(bytes));
      assert.equal(sha256(await Deno.readFile(`${dir}/f${n}`)), sha256(bytes));
      assert.equal((await Deno.stat(`${dir}/f${n}`)).mode! & 0o777, 0o600);
    }
  }));

Deno.test("file sinks: the worker writes only under its root, and an existing file is refused", () =>
  withSinks(async (sinks, dir) => {
    const outside = await Deno.makeTempFile();
    await Deno.remove(outside);
    try {
      const escaped = sinks.open(outside);
      await assert.rejects(async () => {
        await escaped.write(pattern(10, 1));
        await escaped.finish();
      }, /write access/);
      assert.ok(!(await Deno.stat(outside).then(() => true, () => false)));
    } finally {
      await Deno.remove(outside).catch(() => {});
    }
    await Deno.writeTextFile(`${dir}/taken`, "keep me");
    const clash = sinks.open(`${dir}/taken`);
    await assert.rejects(() => clash.finish(), /exists/);
    assert.equal(await Deno.readTextFile(`${dir}/taken`), "keep me");
  }));

Deno.test("file sinks: an abort closes the file before it returns, so it can be removed", () =>
  withSinks(async (sinks, dir) => {
    const sink = sinks.open(`${dir}/aborted`);
    await sink.write(pattern(5_000_000, 9));
    await sink.abort();
    await Deno.remove(`${dir}/aborted`);
    // Nothing still queued for it may create it again.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(!(await Deno.stat(`${dir}/aborted`).then(() => true, () => false)));
  }));

Deno.test("file sinks: the next file reuses a finished file's buffers, and its bytes are its own", () =>
  withSinks(async (sinks, dir) => {
    // A larger file first leaves its bytes in the buffers; the next, smaller, must not show them.
    for (const [n, size] of [[1, 5_000_000], [2, 1_234_567], [3, 77]] as const) {
      const bytes = pattern(size, n);
      const sink = sinks.open(`${dir}/r${n}`);
      for (let at = 0; at < size; at += 100_000) await sink.write(bytes.subarray(at, at + 100_000));
      assert.equal(await sink.finish(), sha256(bytes));
      assert.equal(sha256(await Deno.readFile(`${dir}/r${n}`)), sha256(bytes));
    }
  }));

Deno.test("buffer pool: keeps what it may, at most its size, and nothing moved away", () => {
  const pool = new BufferPool(16, 2);
  const [a, b, c] = [pool.take(), pool.take(), pool.take()];
  const moved = pool.take();
  structuredClone(moved, { transfer: [moved] });
  for (const buffer of [a, a, moved, new ArrayBuffer(8), b, c]) pool.give(buffer);
  assert.deepEqual(new Set([pool.take(), pool.take()]), new Set([a, b]));
  assert.notEqual(pool.take(), c);
  pool.give(a);
  pool.clear();
  assert.notEqual(pool.take(), a);
});
