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

/** Both ways a worker writes: hash then write on one thread, or the two overlapping. */
const MODES = [{ overlap: false }, { overlap: true }];

async function withSinks(
  options: { overlap: boolean },
  test: (sinks: FileSinks, dir: string) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-sinks-" });
  const sinks = new FileSinks(dir, 2, options);
  try {
    await test(sinks, dir);
  } finally {
    sinks.close();
    await Deno.remove(dir, { recursive: true });
  }
}

for (const mode of MODES) {
  const named = (what: string) =>
    `file sinks (${mode.overlap ? "hash and write overlapping" : "hash then write"}): ${what}`;

  Deno.test(
    named("concurrent files are written whole, in order, with their SHA-256"),
    () =>
      withSinks(mode, async (sinks, dir) => {
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
      }),
  );

  Deno.test(
    named("the worker writes only under its root, and an existing file is refused"),
    () =>
      withSinks(mode, async (sinks, dir) => {
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
      }),
  );

  Deno.test(
    named("an abort closes the file before it returns, so it can be removed"),
    () =>
      withSinks(mode, async (sinks, dir) => {
        const sink = sinks.open(`${dir}/aborted`);
        await sink.write(pattern(5_000_000, 9));
        await sink.abort();
        await Deno.remove(`${dir}/aborted`);
        // Nothing still queued for it may create it again.
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.ok(!(await Deno.stat(`${dir}/aborted`).then(() => true, () => false)));
      }),
  );

  Deno.test(
    named("a file three times the window waits for its buffers and comes out whole"),
    () =>
      withSinks(mode, async (sinks, dir) => {
        // 24 MiB through 8 MiB of buffers: the sink waits for buffers the worker hands back.
        const bytes = pattern(24 << 20, 5);
        const sink = sinks.open(`${dir}/large`);
        for (let at = 0; at < bytes.length; at += 300_000) {
          await sink.write(bytes.subarray(at, at + 300_000));
        }
        assert.equal(await sink.finish(), sha256(bytes));
        assert.equal(sha256(await Deno.readFile(`${dir}/large`)), sha256(bytes));
      }),
  );

  Deno.test(
    named("the next file reuses a finished file's buffers, and its bytes are its own"),
    () =>
      withSinks(mode, async (sinks, dir) => {
        // A larger file first leaves its bytes in the buffers; the next, smaller, must not show them.
        for (const [n, size] of [[1, 5_000_000], [2, 1_234_567], [3, 77]] as const) {
          const bytes = pattern(size, n);
          const sink = sinks.open(`${dir}/r${n}`);
          for (let at = 0; at < size; at += 100_000) {
            await sink.write(bytes.subarray(at, at + 100_000));
          }
          assert.equal(await sink.finish(), sha256(bytes));
          assert.equal(sha256(await Deno.readFile(`${dir}/r${n}`)), sha256(bytes));
        }
      }),
  );
}

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

/** Whether this test may mount a file system in a mount namespace of its own (root only). */
async function canMount(): Promise<boolean> {
  return await new Deno.Command("unshare", {
    args: ["-m", "--propagation", "private", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
    stderr: "null",
  }).output().then((output) => output.success, () => false);
}

for (const mode of MODES) {
  Deno.test({
    name: `file sinks (overlap ${mode.overlap}): a full disk fails the file with ENOSPC, at once`,
    ignore: !(await canMount()),
    async fn() {
      const dir = await Deno.makeTempDir({ prefix: "edgenode-sinks-full-" });
      // A 4 MiB tmpfs in a mount namespace of the child's own, which writes 64 MiB to it.
      const child = `
        import { FileSinks } from ${JSON.stringify(import.meta.resolve("./file_sinks.ts"))};
        const sinks = new FileSinks(Deno.args[0], 1, ${JSON.stringify(mode)});
        const sink = sinks.open(Deno.args[0] + "/full");
        let sent = 0;
        try {
          for (; sent < 64 << 20; sent += 1 << 20) await sink.write(new Uint8Array(1 << 20));
          await sink.finish();
          console.log("finished");
        } catch (error) {
          // Failed before the whole body was sent: the window is 8 MiB.
          console.log(sent < 16 << 20 ? "early" : "late", String(error));
        }
        sinks.close();`;
      try {
        const script = `mount -t tmpfs -o size=4m tmpfs "$0" && exec "$@"`;
        const output = await new Deno.Command("unshare", {
          args: ["-m", "--propagation", "private", "sh", "-c", script, dir, Deno.execPath()]
            .concat(["eval", "--no-prompt", "--unstable-worker-options", child, dir]),
          stderr: "inherit",
        }).output();
        const said = new TextDecoder().decode(output.stdout);
        assert.match(said, /^early .*(No space left|os error 28)/);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
