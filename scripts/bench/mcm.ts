/**
 * Microservice figures for `deno task bench` (alone: `deno task bench --only mcm`):
 * - requests/s and p99 of a trivial microservice route in a process of its own
 *   (mcm.containerProcess per-container), the node and its container process pinned to one core, next to a bare Deno.serve answering the same body on one core and to
 *   the reference's way of running a microservice (a fresh isolate per request);
 * - cold start: POST /mcm/v1/containers to the first answer of the new microservice (without
 *   a warm spare; mcm_spares.ts: with one, redeploys, restarts, the idle spare's memory);
 * - memory of an idle container process;
 * and, the same as the single executable, cold starts and idle memory; first, the route in
 * both modes against workerd, with the CPU time per request of each thread (mcm_route.ts).
 * `--only mcm` also runs mcm_spares.ts, mcm_density.ts (memory per microservice with 1, 20 and
 * 100 of one client in its process, starts into a running client's process, requests) and
 * mcm_download.ts.
 *
 * @module
 */
import { postImage, serviceUrl, startContainer } from "../../testing/mcm.ts";
import { routeRows } from "./mcm_route.ts";
import { startTestNode } from "../../testing/node.ts";
import {
  childPids,
  HELLO_BUNDLE,
  helloImage,
  median,
  p99,
  pssMib,
  rssMib,
  run,
  startMcmBaselines,
  wrk,
} from "./tools.ts";

const COLD_STARTS = 5;

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
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  const againstWorkerd = await routeRows();
  return [
    ...againstWorkerd,
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
