/**
 * Small tools shared by the benchmark scripts.
 *
 * @module
 */
import type { TestNode } from "../tests/helpers/node.ts";

/** Runs a command to completion; its standard output, or an error with its standard error. */
export async function run(command: string, args: string[]): Promise<string> {
  const output = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" })
    .output();
  if (!output.success) {
    throw new Error(
      `${command} ${args.join(" ")} failed: ${new TextDecoder().decode(output.stderr)}`,
    );
  }
  return new TextDecoder().decode(output.stdout);
}

function headerArgs(headers: Record<string, string>): string[] {
  return Object.entries(headers).flatMap(([name, value]) => ["-H", `${name}: ${value}`]);
}

/** Options of {@link wrk}. */
export interface WrkOptions {
  /** POST this body with Content-Type application/json (through a wrk lua script). */
  body?: string;
  /** Seconds measured; 5 by default. */
  seconds?: number;
  /** Seconds of warm-up load before, not measured; 2 by default. */
  warmup?: number;
}

/** Requests/s of GET `url` (POST with `options.body`) with wrk on one core (-c50, 5 s), after a
 * 2 s warm-up. */
export async function wrk(
  url: string,
  headers: Record<string, string> = {},
  options: WrkOptions = {},
): Promise<number> {
  const { body, seconds = 5, warmup = 2 } = options;
  let script: string | undefined;
  if (body !== undefined) {
    script = await Deno.makeTempFile({ prefix: "edgenode-bench-wrk-", suffix: ".lua" });
    await Deno.writeTextFile(
      script,
      // A Lua long string holds the body as it is.
      `wrk.method = "POST"\nwrk.body = [==[${body}]==]\n` +
        `wrk.headers["Content-Type"] = "application/json"\n`,
    );
  }
  const load = (seconds: number) =>
    run("taskset", [
      "-c",
      "1",
      "wrk",
      "-t1",
      "-c50",
      `-d${seconds}s`,
      ...(script ? ["-s", script] : []),
      ...headerArgs(headers),
      url,
    ]);
  try {
    if (warmup > 0) await load(warmup);
    const out = await load(seconds);
    // wrk counts answers other than 2xx/3xx apart: such a figure measures errors.
    const failed = /Non-2xx or 3xx responses: (\d+)/.exec(out);
    if (failed) console.error(`warning: wrk ${url}: ${failed[1]} non-2xx/3xx responses`);
    return Math.round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]));
  } finally {
    if (script) await Deno.remove(script);
  }
}

/** Median wall time of three runs of a command, in seconds: single transfers are noisy. */
export async function timed(command: string, args: string[]): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    await run(command, args);
    times.push((performance.now() - start) / 1000);
  }
  return times.sort((a, b) => a - b)[1];
}

/** Writes a GGUF-headed file of `mib` MiB of random bytes. */
export async function makeModelFile(path: string, mib: number): Promise<void> {
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  const block = new Uint8Array(1 << 20);
  for (let i = 0; i < block.length; i += 65536) {
    crypto.getRandomValues(block.subarray(i, i + 65536));
  }
  // A GGUF v3 header with no tensors and no metadata (the node walks the header: random counts
  // would be refused), then random bytes.
  block.set([0x47, 0x47, 0x55, 0x46, 3, 0, 0, 0]);
  block.fill(0, 8, 24);
  for (let i = 0; i < mib; i++) {
    await file.write(block);
    block[100] = i & 0xff; // Later blocks differ a little from the first.
  }
}

/** Resident memory of a process in MiB: now (VmRSS) or its peak so far (VmHWM). */
export async function rssMib(pid: number, field: "VmRSS" | "VmHWM" = "VmRSS"): Promise<number> {
  // Reading /proc needs --allow-all in Deno; cat does not.
  const status = await run("cat", [`/proc/${pid}/status`]);
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]) / 1024;
}

/** The peak resident memory of a process so far, in whole MiB. */
export async function peakRssMib(pid: number): Promise<number> {
  return Math.round(await rssMib(pid, "VmHWM"));
}

/** p99 latency in ms of GET `url` for 3 s (wrk -c10). */
export async function p99(url: string, headers: Record<string, string> = {}): Promise<number> {
  const out = await run("wrk", ["-t1", "-c10", "-d3s", "--latency", ...headerArgs(headers), url]);
  const [, value, unit] = /99%\s+([\d.]+)(us|ms|s)/.exec(out) ?? [];
  return Number(value) * ({ us: 0.001, ms: 1, s: 1000 }[unit as "us" | "ms" | "s"] ?? NaN);
}

/** Creates an llm model record `id` on a node (POST /models). */
export async function createModel(node: TestNode, id: string): Promise<void> {
  const response = await fetch(`${node.storeUrl}/models`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify({
      id,
      version: "1.0.0",
      kind: "llm",
      gguf: { initContextSize: 4096, initGpuLayerSize: 99, chatTemplateHint: "chatml" },
    }),
  });
  if (response.status !== 201) {
    throw new Error(`create ${id}: ${response.status} ${await response.text()}`);
  }
  await response.body?.cancel();
}

/** curl arguments that upload `file` to `url` (with the key, when one is given), raw or as multipart. */
export function curlUpload(
  url: string,
  key: string | undefined,
  file: string,
  multipart = false,
): string[] {
  // -T streams the file from disk (--data-binary would read it all into curl's memory first).
  const body = multipart
    ? ["-F", `file=@${file}`]
    : ["-X", "POST", "-H", "Content-Type: application/octet-stream", "-T", file];
  const auth = key === undefined ? [] : ["-H", `Authorization: Bearer ${key}`];
  return ["-sS", "--fail", "-o", "/dev/null", ...auth, ...body, url];
}

/** Spawns the bare baseline server (bench_baseline_server.ts) on core 0 over `dir`. */
export async function startBaselineServer(dir: string, listFile: string) {
  const child = new Deno.Command("taskset", {
    args: [
      "-c",
      "0",
      Deno.execPath(),
      "run",
      "--allow-net=127.0.0.1",
      `--allow-read=${dir}`,
      `--allow-write=${dir}`,
      new URL("./bench_baseline_server.ts", import.meta.url).pathname,
      dir,
      listFile,
    ],
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const url = `http://127.0.0.1:${/port (\d+)/.exec((await reader.read()).value ?? "")?.[1]}`;
  return {
    url,
    async [Symbol.asyncDispose]() {
      child.kill();
      await child.status;
      await reader.cancel();
    },
  };
}
