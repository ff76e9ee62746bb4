/**
 * `deno task bench --quick`: the benchmark's ratios in under a minute, each edgenode's figure
 * over a baseline measured in the same run, compared with the ratios recorded in
 * `scripts/bench/recorded.json`. A ratio more than 30% below its record fails the run (exit 1),
 * so a change that slows a path down is seen before it lands; the machine's own speed cancels
 * out of a ratio. `--quick --record` writes the file anew (after a change that is meant to move a
 * figure, or on another machine).
 *
 * - upload: a raw 64 MiB body to the node, over `dd conv=fsync` of the same file to the same disk;
 * - download from a URL: the node's POST .../download of 64 MiB, over `curl -o` + `sync`;
 * - GET /models/{id} and a trivial microservice route: wrk on one core, over a bare Deno.serve
 *   answering the same bodies;
 * - through the hub's tunnel: a small GET (wrk) and a 64 MiB download (curl), over the same
 *   request sent straight to the node.
 *
 * @module
 */
import { startTestNode } from "../../testing/node.ts";
import { makeIssuer } from "../../testing/identity.ts";
import {
  childPids,
  createModel,
  curlArgs,
  curlUpload,
  deployHello,
  HELLO_BUNDLE,
  makeModelFile,
  run,
  startBaselineServer,
  startMcmBaselines,
  timed,
  tunnelPair,
  wrk,
} from "./tools.ts";

const MIB = 64;
const WRK = { seconds: 2, warmup: 1 };
/** How far below its record a ratio may fall before the run fails. */
export const TOLERANCE = 0.3;
/** Where the recorded ratios live. */
export const RECORDED = new URL("./recorded.json", import.meta.url);

/** One measured ratio. */
export interface Ratio {
  /** A stable key, as in recorded.json. */
  key: string;
  /** What was measured, for people. */
  what: string;
  edgenode: number;
  baseline: number;
  unit: string;
}

/** The recorded ratios and where they were taken. */
export interface Recorded {
  date: string;
  machine: string;
  ratios: Record<string, number>;
}

/** The keys whose ratio fell more than `tolerance` below its record, with the figures. */
export function regressions(
  measured: Record<string, number>,
  recorded: Record<string, number>,
  tolerance = TOLERANCE,
): string[] {
  return Object.entries(recorded).flatMap(([key, was]) => {
    const now = measured[key];
    if (now === undefined) return [`${key}: not measured (recorded ${was.toFixed(2)})`];
    return now < was * (1 - tolerance)
      ? [`${key}: ${now.toFixed(2)} against ${was.toFixed(2)} recorded`]
      : [];
  });
}

/** Median seconds of three forced downloads of `url` into model `id`. */
async function downloadSeconds(storeUrl: string, auth: HeadersInit, id: string, url: string) {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    const response = await fetch(`${storeUrl}/models/${id}/download`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: JSON.stringify({ url, force: true }),
    });
    const events = await response.text();
    if (!events.includes(`"done":true`)) throw new Error(`download failed: ${events.slice(-300)}`);
    times.push((performance.now() - start) / 1000);
  }
  return times.sort((a, b) => a - b)[1];
}

/** The tunnel's ratios: a fresh hub and two nodes, the file at `file` served by one of them. */
async function tunnelRatios(dir: string, file: string): Promise<Ratio[]> {
  const pair = await tunnelPair(await makeIssuer(`${dir}/issuer`), `${dir}/tunnel`);
  try {
    const path = "/mds/v1/nodes?ping=true";
    const direct = await wrk(`${pair.node.url}${path}`, {}, WRK);
    const through = await wrk(`${pair.sepUrl}${path}`, pair.tunnel, WRK);
    await pair.createModel("m");
    await run(
      "curl",
      curlUpload(`${pair.node.storeUrl}/models/m/upload`, pair.node.apiKey, file, false),
    );
    const media = "/ai/store/v1/models/m?alt=media";
    const directSeconds = await timed("curl", curlArgs(`${pair.node.url}${media}`, {}));
    const throughSeconds = await timed("curl", curlArgs(`${pair.sepUrl}${media}`, pair.tunnel));
    return [
      {
        key: "tunnel_get_vs_direct",
        what: "a small GET through the hub's tunnel / straight to the node (wrk, 1 core)",
        edgenode: through,
        baseline: direct,
        unit: "req/s",
      },
      {
        key: "tunnel_download_vs_direct",
        what: `download ${MIB} MiB through the hub's tunnel / straight to the node (curl)`,
        edgenode: (MIB * 1.048576) / throughSeconds,
        baseline: (MIB * 1.048576) / directSeconds,
        unit: "MB/s",
      },
    ];
  } finally {
    await pair.close();
  }
}

/** Measures the quick ratios. */
export async function quickRatios(): Promise<Ratio[]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-quick-" });
  try {
    const file = `${dir}/big.gguf`;
    await makeModelFile(file, MIB);
    await Deno.copyFile(file, `${dir}/small.gguf`);
    const mb = MIB * 1.048576;
    await using node = await startTestNode({
      dataDir: await Deno.makeTempDir({ dir }),
      config: { apiKey: "a-bench-key-of-enough-length", discovery: { mdns: false } },
    });
    await createModel(node, "big");
    await createModel(node, "pulled");
    const auth = node.auth();
    const uploadSeconds = await timed(
      "curl",
      curlUpload(`${node.storeUrl}/models/big/upload`, node.apiKey, file, false),
    );
    const ddSeconds = await timed("dd", [
      `if=${file}`,
      `of=${dir}/copy.bin`,
      "bs=8M",
      "conv=fsync",
      "status=none",
    ]);
    const listFile = `${dir}/list.json`;
    await Deno.writeTextFile(listFile, await (await fetch(`${node.storeUrl}/models`)).text());
    await using baseline = await startBaselineServer(dir, listFile);
    const pullSeconds = await downloadSeconds(
      node.storeUrl,
      auth,
      "pulled",
      `${baseline.url}/file`,
    );
    const curlSeconds = await timed("sh", [
      "-c",
      `curl -sS --fail -o ${dir}/curl.bin ${baseline.url}/file && sync ${dir}/curl.bin`,
    ]);
    const helloUrl = await deployHello(node);
    for (const pid of [node.pid, ...await childPids(node.pid)]) {
      await run("taskset", ["-a", "-p", "-c", "0", String(pid)]);
    }
    const record = await wrk(`${node.storeUrl}/models/big`, {}, WRK);
    const bareRecord = await wrk(`${baseline.url}/one`, {}, WRK);
    const hello = await wrk(helloUrl, {}, WRK);
    const bundleFile = `${dir}/index.js`;
    await Deno.writeTextFile(bundleFile, HELLO_BUNDLE);
    const mcm = await startMcmBaselines(bundleFile);
    let bareHello: number;
    try {
      bareHello = await wrk(`${mcm.url}/hello`, {}, WRK);
    } finally {
      mcm.server.kill();
      await mcm.server.status;
    }
    const tunnel = await tunnelRatios(dir, file);
    return [
      {
        key: "upload_raw_vs_dd_fsync",
        what: `upload a raw ${MIB} MiB body / dd conv=fsync of the file`,
        edgenode: mb / uploadSeconds,
        baseline: mb / ddSeconds,
        unit: "MB/s",
      },
      {
        key: "download_url_vs_curl_sync",
        what: `download ${MIB} MiB from a URL / curl -o + sync`,
        edgenode: mb / pullSeconds,
        baseline: mb / curlSeconds,
        unit: "MB/s",
      },
      {
        key: "get_model_vs_bare_serve",
        what: "GET /models/{id} / bare Deno.serve, same JSON (wrk, 1 core)",
        edgenode: record,
        baseline: bareRecord,
        unit: "req/s",
      },
      {
        key: "microservice_vs_bare_serve",
        what: "a trivial microservice route / bare Deno.serve, same body (wrk, 1 core)",
        edgenode: hello,
        baseline: bareHello,
        unit: "req/s",
      },
      ...tunnel,
    ];
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The ratio of each measurement, by key. */
function ratiosOf(ratios: Ratio[]): Record<string, number> {
  return Object.fromEntries(ratios.map((r) => [r.key, r.edgenode / r.baseline]));
}

function printRatios(ratios: Ratio[], recorded: Recorded | undefined): void {
  const measured = ratiosOf(ratios);
  console.log("| measurement | edgenode | baseline | ratio | recorded |\n|---|---|---|---|---|");
  for (const r of ratios) {
    const was = recorded?.ratios[r.key];
    console.log(
      `| ${r.what} | ${r.edgenode.toFixed(0)} ${r.unit} | ${r.baseline.toFixed(0)} ${r.unit} | ` +
        `${measured[r.key].toFixed(2)}× | ${was === undefined ? "-" : `${was.toFixed(2)}×`} |`,
    );
  }
}

/** Records the lowest of `rounds` runs' ratios: a record a noisy disk rarely falls 30% below. */
async function record(rounds: number): Promise<void> {
  const lowest: Record<string, number> = {};
  for (let round = 0; round < rounds; round++) {
    const ratios = await quickRatios();
    printRatios(ratios, undefined);
    for (const [key, value] of Object.entries(ratiosOf(ratios))) {
      lowest[key] = Math.min(lowest[key] ?? Infinity, Math.floor(value * 100) / 100);
    }
  }
  const cpu = (await run("sh", ["-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]))
    .trim();
  const written: Recorded = {
    date: new Date().toISOString().slice(0, 10),
    machine: `${cpu}, ${navigator.hardwareConcurrency} cores`,
    ratios: lowest,
  };
  await Deno.writeTextFile(RECORDED, JSON.stringify(written, null, 2) + "\n");
  console.log(`recorded the lowest of ${rounds} runs in ${RECORDED.pathname}`);
}

/**
 * `deno task bench --quick`: prints the ratios and compares them with the record; 1 when one
 * fell more than TOLERANCE below it. With `record`, writes the record instead (3 runs).
 */
export async function quickBench(recordNow: boolean): Promise<number> {
  if (recordNow) {
    await record(3);
    return 0;
  }
  const started = performance.now();
  const ratios = await quickRatios();
  const recorded: Recorded | undefined = await Deno.readTextFile(RECORDED)
    .then(JSON.parse, () => undefined);
  printRatios(ratios, recorded);
  console.log(`(${((performance.now() - started) / 1000).toFixed(0)} s)`);
  if (!recorded) {
    console.log(`no ${RECORDED.pathname} yet: run with --record to keep these`);
    return 0;
  }
  const fallen = regressions(ratiosOf(ratios), recorded.ratios);
  if (fallen.length === 0) {
    console.log(`every ratio within ${TOLERANCE * 100}% of its record (${recorded.date})`);
    return 0;
  }
  console.error(`more than ${TOLERANCE * 100}% below the record:\n  ${fallen.join("\n  ")}`);
  return 1;
}
