/**
 * The one module the benchmarks share (scripts/bench/*.ts import each other only through it and
 * the runner, bench.ts): running and timing commands, wrk and curl, process memory, and the
 * fixtures several benchmarks stand up (the trivial microservice, its baselines, a tunnelled pair
 * of nodes, workerd's binary).
 *
 * @module
 */
import { joinHub, startTestHub } from "../../testing/hub.ts";
import type { TestIssuer } from "../../testing/identity.ts";
import { postImage, scriptImage, serviceUrl, startContainer } from "../../testing/mcm.ts";
import type { TestNode } from "../../testing/node.ts";

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

/** Creates an llm model record `id` on a node (POST /models), all layers on a GPU by default. */
export async function createModel(
  node: TestNode,
  id: string,
  { contextSize = 4096, gpuLayers = 99 } = {},
): Promise<void> {
  const response = await fetch(`${node.storeUrl}/models`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify({
      id,
      version: "1.0.0",
      kind: "llm",
      gguf: {
        initContextSize: contextSize,
        initGpuLayerSize: gpuLayers,
        chatTemplateHint: "chatml",
      },
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

/** Spawns the bare baseline server (baseline_server.ts) on core 0 over `dir`. */
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
      new URL("./baselines/baseline_server.ts", import.meta.url).pathname,
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

/** The middle value of a list (the upper middle when its length is even). */
export const median = (values: number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Proportional memory (shared pages split between the processes sharing them), MiB. */
export async function pssMib(pid: number): Promise<number> {
  const rollup = await run("cat", [`/proc/${pid}/smaps_rollup`]);
  return Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1]) / 1024;
}

/** The pids of a process's children. */
export async function childPids(pid: number): Promise<number[]> {
  const out = await run("sh", ["-c", `ps --ppid ${pid} -o pid= || true`]);
  return out.split("\n").map((line) => Number(line.trim())).filter((n) => n > 0);
}

/** curl arguments: GET `url` (or with `upload`, POST that file) with these headers. */
export function curlArgs(url: string, headers: Record<string, string>, upload?: string): string[] {
  const args = ["-sS", "--fail", "-o", "/dev/null", ...headerArgs(headers)];
  if (upload) {
    args.push("-H", "Content-Type: application/octet-stream", "-T", upload, "-X", "POST");
  }
  return [...args, url];
}

/** The trivial microservice of the benchmarks: answers "hello" on every path. */
export const HELLO_BUNDLE = `mimikModule.exports = function (context, req, res) {
  res.setHeader("content-type", "text/plain");
  res.end("hello");
};`;

/** The image of {@link HELLO_BUNDLE}: a tar holding it as index.js. */
export function helloImage(): Promise<Uint8Array> {
  return scriptImage(HELLO_BUNDLE);
}

/**
 * Deploys the trivial microservice as developers do: uploads the image `hello`, then starts a
 * container `name` of it; returns the URL of its root route.
 */
export async function deployHello(node: TestNode, name = "hello"): Promise<string> {
  const response = await postImage(node, await helloImage(), "hello.tar");
  if (response.status !== 201) {
    throw new Error(`upload hello.tar: ${response.status} ${await response.text()}`);
  }
  await response.body?.cancel();
  return `${serviceUrl(node, await startContainer(node, { name, image: "hello" }))}/`;
}

/**
 * Starts baselines/mcm_baselines.ts (a bare Deno.serve answering `/hello` as the trivial
 * microservice does, and `/isolate`) pinned to core 0; returns its URL and process.
 */
export async function startMcmBaselines(bundleFile: string) {
  const server = new Deno.Command("taskset", {
    args: [
      "-c",
      "0",
      Deno.execPath(),
      "run",
      "--unstable-worker-options",
      "--allow-net=127.0.0.1",
      `--allow-read=${bundleFile}`,
      new URL("./baselines/mcm_baselines.ts", import.meta.url).pathname,
      bundleFile,
    ],
    stdout: "piped",
  }).spawn();
  const reader = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const url = `http://127.0.0.1:${/port (\d+)/.exec((await reader.read()).value ?? "")?.[1]}`;
  return { url, server };
}

/** The workerd binary of the npm:workerd package (its platform package's bin/workerd). */
export async function workerdBinary(): Promise<{ path: string; version: string }> {
  // The package's main module finds the binary of this platform; Deno exposes its CommonJS
  // exports as `default`.
  const module = await import("workerd");
  const exports = module.default;
  const path: unknown = typeof exports === "string" ? exports : exports?.default;
  if (typeof path !== "string") throw new Error("npm:workerd exported no binary path");
  return { path, version: String(exports?.version ?? module.version) };
}

/** A fresh hub with two nodes of one account; a2 is reached through the hub with a1's token. */
export async function tunnelPair(issuer: TestIssuer, dir: string) {
  const hub = await startTestHub(issuer, `${dir}/hub`);
  const a1 = await joinHub(hub.url, issuer, "bench", { name: "a1" });
  const a2 = await joinHub(hub.url, issuer, "bench", { name: "a2" });
  const sep = (await (await fetch(`${a2.node.url}/mesh/insight/v1/info?types=sep`, {
    headers: a2.node.auth(),
  })).json()).data.sep;
  const createModel = async (id: string) => {
    await (await fetch(`${a2.node.storeUrl}/models`, {
      method: "POST",
      headers: a2.node.auth({ "Content-Type": "application/json" }),
      body: JSON.stringify({ id, version: "1", kind: "llm" }),
    })).body?.cancel();
  };
  return {
    hub,
    node: a2.node,
    sepUrl: String(sep.url),
    tunnel: { ...sep.headers, Authorization: `Bearer ${a1.token}` } as Record<string, string>,
    createModel,
    async close() {
      await a1.node.stop();
      await a2.node.stop();
      await hub.stop();
    },
  };
}
