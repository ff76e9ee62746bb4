/**
 * `deno task bench`: measures the registry next to baselines from the same run.
 * - upload (raw and multipart) and `alt=media` download of a large file with curl, in MB/s,
 *   next to a plain file copy, `dd conv=fsync`, nginx's WebDAV PUT (scripts/bench_nginx.ts)
 *   and a bare Deno.serve;
 * - the node's peak RSS while uploading, for two file sizes (it must not grow with the size);
 * - download from a URL (POST /models/{id}/download) served from 127.0.0.1, next to `curl -o`
 *   of the same URL, with the node's peak RSS for two file sizes;
 * - GET /models with 1,000 records and GET /models/{id}, in requests/s with wrk, next to a bare
 *   Deno.serve JSON handler.
 * - discovery (scripts/bench_discovery.ts): joining, verifying 50 nodes, listing them.
 * - the hub (scripts/bench_hub.ts): tunnelled requests and transfers (a quarter of the size),
 *   and simulated node connections.
 * - hub clusters (scripts/bench_hub_cluster.ts, needs nats-server and haproxy): requests and
 *   transfers forwarded hub to hub (64 MiB, or --size-mib), the forwarding transport measured
 *   raw (HTTP against NATS messages, 256 MiB or --size-mib), 30,000 simulated nodes over three
 *   hubs, a hub SIGKILLed behind HAProxy.
 * - microservices (scripts/bench_mcm.ts): requests to a trivial microservice next to a bare
 *   Deno.serve and to an isolate per request, cold start, memory per idle container.
 * - the request path (scripts/bench_request_path.ts): GET /models/{id} and JSON-RPC getMe next
 *   to the same routes in Hono on Deno (npm:hono), and the trivial microservice next to workerd
 *   (npm:workerd) and a bare Deno.serve; medians of three interleaved rounds of wrk on one core.
 * - inference (scripts/bench_inference.ts): a streamed chat completion through a node next to
 *   node-llama-cpp called directly, same model, prompts and threads; threads 1, 2 and the default.
 * Needs curl and wrk (`apt-get install -y wrk`). Flags: `--size-mib N` (default 1024),
 * `--only requests|store|discovery|hub|cluster|mcm|inference`, `--quick [--record]`
 * (scripts/bench_quick.ts: the ratios in under a minute, checked against
 * scripts/bench_recorded.json), `--readme` (a full run writes its table into README.md:
 * scripts/bench_readme.ts).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { fileURLToPath as fromFileUrl } from "node:url";
import { startTestNode } from "../tests/helpers/node.ts";
import { discoveryRows } from "./bench_discovery.ts";
import { hubRows } from "./bench_hub.ts";
import { inferenceRows } from "./bench_inference.ts";
import { clusterRows } from "./bench_hub_cluster.ts";
import { mcmRows } from "./bench_mcm.ts";
import { mcmDownloadRows } from "./bench_mcm_download.ts";
import { startNginxDav } from "./bench_nginx.ts";
import { quickBench } from "./bench_quick.ts";
import { downloadRun, uploadRun, uploadWithReaders } from "./bench_store_runs.ts";
import { benchTable, replaceBenchTable } from "./bench_readme.ts";
import { requestPathRows } from "./bench_request_path.ts";
import {
  createModel,
  curlUpload,
  makeModelFile,
  p99,
  run,
  startBaselineServer,
  timed,
  wrk,
} from "./bench_tools.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    "size-mib": { type: "string" },
    only: { type: "string" },
    quick: { type: "boolean" },
    record: { type: "boolean" },
    readme: { type: "boolean" },
  },
});
const SIZE_MIB = Number(values["size-mib"] ?? 1024);
const SMALL_MIB = Math.max(1, Math.round(SIZE_MIB / 4));

/** The outside programs the benchmarks drive, named with their Debian packages when missing. */
async function requireTools(): Promise<void> {
  const missing: string[] = [];
  for (const [program, pkg] of [["wrk", "wrk"], ["curl", "curl"], ["taskset", "util-linux"]]) {
    const found = await new Deno.Command("sh", { args: ["-c", `command -v ${program}`] }).output();
    if (!found.success) missing.push(`${program} (apt-get install -y ${pkg})`);
  }
  if (missing.length > 0) {
    console.error(`bench: missing ${missing.join(", ")}`);
    Deno.exit(2);
  }
}

async function main() {
  await requireTools();
  if (values.quick) Deno.exit(await quickBench(values.record === true));
  if (values.readme && values.only) {
    throw new Error("--readme writes a full run's table: no --only");
  }
  const rows: string[][] = [];
  const only = values.only;
  if (!only || only === "requests") rows.push(...await requestPathRows());
  if (!only || only === "store") rows.push(...await storeRows());
  if (!only || only === "discovery") rows.push(...await discoveryRows());
  if (!only || only === "hub") rows.push(...await hubRows(SMALL_MIB));
  if (!only || only === "cluster") {
    const given = values["size-mib"] === undefined ? undefined : SIZE_MIB;
    rows.push(...await clusterRows({ tunnelMib: given ?? 64, transportMib: given ?? 256 }));
  }
  if (!only || only === "mcm") rows.push(...await mcmRows(), ...await mcmDownloadRows(SIZE_MIB));
  if (!only || only === "inference") rows.push(...await inferenceRows());
  const [cpu, memKib] = (await run("sh", [
    "-c",
    "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2; grep -m1 MemTotal /proc/meminfo",
  ])).trim().split("\n");
  const table = benchTable(rows, {
    date: new Date().toISOString().slice(0, 10),
    cpu: cpu.trim(),
    cores: navigator.hardwareConcurrency,
    memoryGib: Math.round(Number(memKib.match(/\d+/)?.[0]) / 2 ** 20),
    deno: Deno.version.deno,
    command: `deno task bench ${Deno.args.join(" ")}`.trim(),
  });
  console.log(`\n${table}`);
  if (values.readme) {
    const readme = new URL("../README.md", import.meta.url);
    await Deno.writeTextFile(readme, replaceBenchTable(await Deno.readTextFile(readme), table));
    // Aligned as `deno fmt --check` (CI) wants the table.
    await run(Deno.execPath(), ["fmt", "--quiet", fromFileUrl(readme)]);
    console.log("bench: README.md's table written");
  }
}

/** The model registry's rows. */
async function storeRows(): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-" });
  const rows: string[][] = [];
  try {
    const big = `${dir}/big.gguf`;
    const small = `${dir}/small.gguf`;
    await makeModelFile(big, SIZE_MIB);
    await makeModelFile(small, SMALL_MIB);
    const mb = SIZE_MIB * 1.048576;

    const copySeconds = await timed("cp", [big, `${dir}/copy.bin`]);
    await Deno.remove(`${dir}/copy.bin`);
    rows.push([
      `plain file copy (cp), ${SIZE_MIB} MiB`,
      `${(mb / copySeconds).toFixed(0)} MB/s`,
      "baseline",
    ]);
    const durableSeconds = await timed("dd", [
      `if=${big}`,
      `of=${dir}/copy.bin`,
      "bs=1M",
      "conv=fsync",
      "status=none",
    ]);
    await Deno.remove(`${dir}/copy.bin`);
    rows.push([
      `durable file copy (dd conv=fsync), ${SIZE_MIB} MiB`,
      `${(mb / durableSeconds).toFixed(0)} MB/s`,
      "baseline: an upload syncs its file before the rename, as this copy does",
    ]);
    await using nginx = await startNginxDav(`${dir}/nginx`);
    if (nginx) {
      const putSeconds = await timed("curl", [
        "-sS",
        "--fail",
        "-o",
        "/dev/null",
        "-T",
        big,
        `${nginx.url}/put.gguf`,
      ]);
      await Deno.remove(`${dir}/nginx/root/put.gguf`).catch(() => {});
      rows.push([
        `upload to nginx (WebDAV PUT, nginx-light), ${SIZE_MIB} MiB (curl)`,
        `${(mb / putSeconds).toFixed(0)} MB/s`,
        "baseline: the HTTP receive path; nginx does not sync the file",
      ]);
    }

    const listFile = `${dir}/list.json`;
    for (const multipart of [false, true]) {
      const label = multipart ? "multipart" : "raw body";
      const small_ = await uploadRun(dir, small, SMALL_MIB, multipart);
      const big_ = await uploadRun(dir, big, SIZE_MIB, multipart);
      rows.push([
        `upload ${label}, ${SIZE_MIB} MiB (curl)`,
        `${big_.mbps.toFixed(0)} MB/s`,
        `peak RSS ${big_.rss} MB (${SMALL_MIB} MiB file: ${small_.rss} MB)`,
      ]);
    }

    const loaded = await uploadWithReaders(dir, big, SIZE_MIB, small);
    rows.push([
      `upload raw body, ${SIZE_MIB} MiB, while 20 clients download another model (alt=media)`,
      `${loaded.mbps.toFixed(0)} MB/s, peak RSS ${loaded.rss} MB`,
      `the readers got ${(loaded.readBytes / 1e9).toFixed(1)} GB meanwhile; target: RSS < 150 MB`,
    ]);

    // Download and list figures come from one more node holding the big file and 1,000 records.
    await using node = await startTestNode({ dataDir: await Deno.makeTempDir({ dir }) });
    await createModel(node, "big");
    await run("curl", curlUpload(`${node.storeUrl}/models/big/upload`, node.apiKey, big, false));
    for (let i = 1; i < 1000; i++) await createModel(node, `model-${String(i).padStart(4, "0")}`);
    await Deno.writeTextFile(listFile, await (await fetch(`${node.storeUrl}/models`)).text());

    await using baseline = await startBaselineServer(dir, listFile);
    const base = baseline.url;
    // Downloads: the bare server is the source for both the node and curl.
    const curlSeconds = await timed("curl", [
      "-sS",
      "--fail",
      "-o",
      `${dir}/curl.bin`,
      `${base}/file`,
    ]);
    // The node syncs the file before renaming it into place; `sync FILE` does the same.
    const durableCurlSeconds = await timed("sh", [
      "-c",
      `curl -sS --fail -o ${dir}/curl.bin ${base}/file && sync ${dir}/curl.bin`,
    ]);
    await Deno.remove(`${dir}/curl.bin`);
    const smallDownload = await downloadRun(dir, `${base}/file?name=small`, SMALL_MIB);
    const bigDownload = await downloadRun(dir, `${base}/file`, SIZE_MIB);
    rows.push([
      `download from a URL, ${SIZE_MIB} MiB from 127.0.0.1 (POST .../download)`,
      `${bigDownload.mbps.toFixed(0)} MB/s`,
      `curl -o same URL: ${(mb / curlSeconds).toFixed(0)} MB/s; curl -o then sync FILE: ` +
      `${(mb / durableCurlSeconds).toFixed(0)} MB/s; node peak RSS ${bigDownload.rss} MB ` +
      `(${SMALL_MIB} MiB file: ${smallDownload.rss} MB)`,
    ]);
    // Latency under an upload is measured before pinning: the node as users run it.
    const idle = await p99(`${node.storeUrl}/models/model-0500`);
    const uploading = run(
      "curl",
      curlUpload(`${node.storeUrl}/models/big/upload`, node.apiKey, big, false),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const busy = await p99(`${node.storeUrl}/models/model-0500`);
    await uploading;
    rows.push([
      `GET /models/{id} p99 latency during a ${SIZE_MIB} MiB upload (wrk -c10)`,
      `${busy.toFixed(1)} ms`,
      `same node idle: ${idle.toFixed(2)} ms`,
    ]);
    // -a: every thread of the node, as the baseline server runs wholly on core 0.
    await run("taskset", ["-a", "-pc", "0", String(node.pid)]);
    const baseUpload = await timed("curl", curlUpload(`${base}/upload`, undefined, big));
    rows.push([
      `upload raw body to a bare Deno.serve, ${SIZE_MIB} MiB`,
      `${(mb / baseUpload).toFixed(0)} MB/s`,
      "baseline",
    ]);
    const download = await timed("curl", [
      "-sS",
      "--fail",
      "-o",
      "/dev/null",
      `${node.storeUrl}/models/big?alt=media`,
    ]);
    const baseDownload = await timed("curl", [
      "-sS",
      "--fail",
      "-o",
      "/dev/null",
      `${base}/file`,
    ]);
    rows.push([
      `download alt=media, ${SIZE_MIB} MiB (curl)`,
      `${(mb / download).toFixed(0)} MB/s`,
      `bare Deno.serve file: ${(mb / baseDownload).toFixed(0)} MB/s`,
    ]);
    const list = await wrk(`${node.storeUrl}/models`);
    const baseList = await wrk(`${base}/list`);
    rows.push([
      "GET /models, 1,000 records (wrk -c50, 1 core)",
      `${list} req/s`,
      `bare Deno.serve same JSON: ${baseList} req/s`,
    ]);
    const one = await wrk(`${node.storeUrl}/models/model-0500`);
    const baseOne = await wrk(`${base}/one`);
    rows.push([
      "GET /models/{id} (wrk -c50, 1 core)",
      `${one} req/s`,
      `bare Deno.serve same JSON: ${baseOne} req/s`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  return rows;
}

if (import.meta.main) await main();
