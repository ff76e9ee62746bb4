/**
 * Microservice figures for `deno task bench` (alone: `deno task bench --only mcm`):
 * - requests/s and p99 of a trivial microservice route in a process of its own
 *   (mcm.containerProcess per-container), the node and its container process pinned to one core, next to a bare Deno.serve answering the same body on one core and to
 *   the reference's way of running a microservice (a fresh isolate per request);
 * - cold start: POST /mcm/v1/containers to the first answer of the new microservice (without
 *   a warm spare; bench_mcm_spares.ts: with one, redeploys, restarts, the idle spare's memory);
 * - memory of an idle container process;
 * - density (bench_mcm_density.ts): memory per microservice with 1, 20 and 100 of one client in
 *   its process (per-client, the default), starts into a running client's process, requests.
 *
 * @module
 */
import { packTar } from "modern-tar";
import { postImage, serviceUrl, startContainer } from "../tests/helpers/mcm.ts";
import { startTestNode, type TestNode } from "../tests/helpers/node.ts";
import { densityRows } from "./bench_mcm_density.ts";
import { spareRows } from "./bench_mcm_spares.ts";
import { p99, rssMib, run, wrk } from "./bench_tools.ts";

/** The trivial microservice of the benchmarks: answers "hello" on every path. */
export const HELLO_BUNDLE = `mimikModule.exports = function (context, req, res) {
  res.setHeader("content-type", "text/plain");
  res.end("hello");
};`;
const COLD_STARTS = 5;

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Proportional memory (shared pages split between the processes sharing them), MiB. */
async function pssMib(pid: number): Promise<number> {
  const rollup = await run("cat", [`/proc/${pid}/smaps_rollup`]);
  return Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1]) / 1024;
}

/** The image of {@link HELLO_BUNDLE}: a tar holding it as index.js. */
export async function helloImage(): Promise<Uint8Array> {
  const bytes = new TextEncoder().encode(HELLO_BUNDLE);
  return await packTar([{
    header: { name: "index.js", size: bytes.length, type: "file" },
    body: bytes,
  }]);
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

/** The pids of a process's children. */
export async function childPids(pid: number): Promise<number[]> {
  const out = await run("sh", ["-c", `ps --ppid ${pid} -o pid= || true`]);
  return out.split("\n").map((line) => Number(line.trim())).filter((n) => n > 0);
}

/**
 * Starts bench_mcm_baselines.ts (a bare Deno.serve answering `/hello` as the trivial
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
      new URL("./bench_mcm_baselines.ts", import.meta.url).pathname,
      bundleFile,
    ],
    stdout: "piped",
  }).spawn();
  const reader = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const url = `http://127.0.0.1:${/port (\d+)/.exec((await reader.read()).value ?? "")?.[1]}`;
  return { url, server };
}

/** The microservice rows. */
export async function mcmRows(): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-mcm-" });
  const bundleFile = `${dir}/index.js`;
  await Deno.writeTextFile(bundleFile, HELLO_BUNDLE);
  const image = await helloImage();
  await Deno.mkdir(`${dir}/node`);
  // No spare here: these rows are processes started for their container (spareRows: spares).
  await using node = await startTestNode({
    dataDir: `${dir}/node`,
    config: {
      apiKey: "a-bench-key-of-enough-length",
      discovery: { mdns: false },
      mcm: { spareContainers: 0, containerProcess: "per-container" },
    },
  });
  await (await postImage(node, image, "hello.tar")).body?.cancel();

  // Cold starts: each a new container, from the POST to its first answer.
  const colds: number[] = [];
  const loads: number[] = [];
  let url = "";
  for (let i = 0; i < COLD_STARTS; i++) {
    const start = performance.now();
    const container = await startContainer(node, { name: `cold-${i}`, image: "hello" });
    url ||= `${serviceUrl(node, container)}/`;
    const answer = await fetch(`${serviceUrl(node, container)}/`);
    await answer.text();
    colds.push(performance.now() - start);
    const logs = await (await fetch(`${node.url}/mcm/v1/containers/api-cold-${i}/logs`, {
      headers: { authorization: `Bearer ${node.apiKey}` },
    })).json();
    const started = logs.data.find((l: { message: string }) => /started in/.test(l.message));
    loads.push(Number(/started in (\d+) ms/.exec(started?.message ?? "")?.[1]));
  }

  // Memory of the idle container processes.
  const pids = await childPids(node.pid);
  const pss = await Promise.all(pids.map(pssMib));
  const rss = await Promise.all(pids.map((pid) => rssMib(pid)));
  const executable = await executableFigures(dir, image);

  // Throughput: node and containers on core 0, wrk on core 1; the baseline alone on core 0.
  const latency = await p99(url);
  for (const pid of [node.pid, ...pids]) await run("taskset", ["-a", "-p", "-c", "0", String(pid)]);
  const served = await wrk(url);
  const baselines = await startMcmBaselines(bundleFile);
  let bare: number;
  let isolate: number;
  let bareLatency: number;
  try {
    bareLatency = await p99(`${baselines.url}/hello`);
    bare = await wrk(`${baselines.url}/hello`);
    isolate = await wrk(`${baselines.url}/isolate`);
  } finally {
    baselines.server.kill();
    await baselines.server.status;
  }
  const spares = await spareRows(dir, image);
  const density = await densityRows(dir, image);
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  return [
    [
      "GET a trivial microservice route (node and container process on one core, wrk -c50)",
      `${served} req/s, p99 ${latency.toFixed(2)} ms (unpinned)`,
      `bare Deno.serve, same body, one core: ${bare} req/s, p99 ${bareLatency.toFixed(2)} ms ` +
      `(${Math.round((100 * served) / bare)}%); a fresh isolate per request (the reference's ` +
      `model), one core: ${isolate} req/s`,
    ],
    [
      `cold start without a spare: POST /mcm/v1/containers to the first answer (median of ${COLD_STARTS})`,
      `${median(colds).toFixed(0)} ms`,
      `process start to code loaded: ${median(loads)} ms (container log)`,
    ],
    [
      `memory of an idle container process (${pids.length} running)`,
      `${median(pss).toFixed(1)} MiB proportional (PSS)`,
      `RSS ${median(rss).toFixed(1)} MiB, of which the Deno binary's pages are shared`,
    ],
    [
      "the same as the single executable (its bundle with the baked flags): cold start; " +
      "idle container",
      `${median(executable.colds).toFixed(0)} ms; ${median(executable.pss).toFixed(1)} MiB PSS`,
      `as a script, above: ${median(colds).toFixed(0)} ms; ${median(pss).toFixed(1)} MiB PSS`,
    ],
    ...spares,
    ...density,
  ];
}

/**
 * Cold starts and idle memory of containers under the single executable, which runs each
 * container's host and sandbox as workers of the whole program (src/program/).
 */
async function executableFigures(dir: string, image: Uint8Array) {
  const bundle = `${dir}/edgenode.js`;
  await run(Deno.execPath(), ["bundle", "--platform=deno", "-o", bundle, "src/executable.ts"]);
  await Deno.mkdir(`${dir}/executable-node`);
  await using node = await startTestNode({
    dataDir: `${dir}/executable-node`,
    config: {
      apiKey: "a-bench-key-of-enough-length",
      discovery: { mdns: false },
      mcm: { spareContainers: 0, containerProcess: "per-container" },
    },
    bundle,
  });
  await (await postImage(node, image, "hello.tar")).body?.cancel();
  const colds: number[] = [];
  for (let i = 0; i < COLD_STARTS; i++) {
    const start = performance.now();
    const container = await startContainer(node, { name: `cold-${i}`, image: "hello" });
    await (await fetch(`${serviceUrl(node, container)}/`)).text();
    colds.push(performance.now() - start);
  }
  const pss = await Promise.all((await childPids(node.pid)).map(pssMib));
  return { colds, pss };
}
