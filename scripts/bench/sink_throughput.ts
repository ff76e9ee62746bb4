/**
 * The file sink alone (src/storage/file_sinks.ts), without HTTP: N MiB written from memory with the
 * hash and the write taking turns and overlapping, beside SHA-256 alone, Deno writing and syncing
 * the same bytes without a hash, and `dd conv=fsync`, all on the same disk in the same run. It
 * tells whether an upload's bound is the sink (hash, write, sync) or the receiving side.
 *
 * `deno run -A --unstable-worker-options scripts/bench/sink_throughput.ts [MiB=1024] [rounds=3]`
 *
 * @module
 */
import { createHash } from "node:crypto";
import { FileSinks } from "../../src/storage/file_sinks.ts";
import { median, run } from "./tools.ts";

const mib = Number(Deno.args[0] ?? 1024);
const rounds = Number(Deno.args[1] ?? 3);
const chunk = crypto.getRandomValues(new Uint8Array(1 << 16)).slice();
const piece = new Uint8Array(1 << 20);
for (let i = 0; i < piece.length; i += chunk.length) piece.set(chunk, i);
const dir = await Deno.makeTempDir({ prefix: "edgenode-sink-bench-", dir: "." });
const rate = (ms: number) => (mib * 2 ** 20) / 1e6 / (ms / 1000);

async function timed(what: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await what();
  return performance.now() - started;
}

async function sink(overlap: boolean, name: string, syncEveryBytes?: number): Promise<number> {
  const sinks = new FileSinks(dir, 1, { overlap, syncEveryBytes });
  try {
    return await timed(async () => {
      const file = sinks.open(`${dir}/${name}`);
      for (let i = 0; i < mib; i++) await file.write(piece);
      await file.finish();
    });
  } finally {
    sinks.close();
    await Deno.remove(`${dir}/${name}`).catch(() => {});
  }
}

async function writeAndSync(name: string): Promise<number> {
  const ms = await timed(async () => {
    using file = await Deno.open(`${dir}/${name}`, { write: true, create: true });
    for (let i = 0; i < mib; i++) {
      for (let done = 0; done < piece.length;) done += await file.write(piece.subarray(done));
    }
    await file.syncData();
  });
  await Deno.remove(`${dir}/${name}`);
  return ms;
}

function hashOnly(): Promise<number> {
  return timed(() => {
    const hash = createHash("sha256");
    for (let i = 0; i < mib; i++) hash.update(piece);
    hash.digest("hex");
    return Promise.resolve();
  });
}

async function dd(name: string): Promise<number> {
  const ms = await timed(() =>
    run("dd", [
      "if=/dev/zero",
      `of=${dir}/${name}`,
      "bs=1M",
      `count=${mib}`,
      "conv=fsync",
      "status=none",
    ]).then(() => {})
  );
  await Deno.remove(`${dir}/${name}`);
  return ms;
}

const results: Record<string, number[]> = {};
try {
  for (let round = 0; round < rounds; round++) {
    for (
      const [key, measure] of [
        ["dd conv=fsync", () => dd("dd")],
        ["write + fdatasync, no hash", () => writeAndSync("plain")],
        ["sha256 alone", hashOnly],
        ["sink, hash then write", () => sink(false, "turns")],
        ["sink, hash and write overlapping", () => sink(true, "overlap")],
        ["sink, taking turns, only the final sync", () => sink(false, "turns0", 0)],
        ["sink, overlapping, only the final sync", () => sink(true, "overlap0", 0)],
        ["sink, overlapping, a sync every 64 MiB", () => sink(true, "overlap64", 64 << 20)],
      ] as const
    ) (results[key] ??= []).push(rate(await measure()));
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
console.log(`${mib} MiB, ${navigator.hardwareConcurrency} cores, medians of ${rounds}:`);
for (const [key, rates] of Object.entries(results)) {
  console.log(
    `  ${key}: ${median(rates).toFixed(0)} MB/s (${rates.map((r) => r.toFixed(0)).join("/")})`,
  );
}
