/**
 * `deno task bench`: runs each benchmark of this folder (each its own module, sharing only
 * tools.ts) and prints one table, every figure beside baselines measured in the same run
 * (baselines/: the programs compared with).
 * - the request path (request_path.ts): GET /models/{id} and JSON-RPC getMe next to the same
 *   routes in Hono on Deno (npm:hono: answering the same JSON alone, and with the node's contract
 *   besides: CORS, the header reads) and a bare Deno.serve, and the trivial microservice next to
 *   workerd (npm:workerd) and a bare Deno.serve; medians of three interleaved rounds of wrk on one
 *   core, with each server's CPU time per request.
 * - the model registry (store.ts): uploads and downloads with curl next to cp, dd, nginx's
 *   WebDAV PUT and a bare Deno.serve, the node's peak RSS, listings with wrk.
 * - discovery (discovery.ts): joining, verifying 50 nodes, listing them.
 * - the mesh (mesh_transfer.ts): a model file fetched node to node by sha256 on the LAN, next to
 *   curl of the same file from the peer's alt=media.
 * - the hub (hub.ts): tunnelled requests and transfers (a quarter of the size), and simulated
 *   node connections.
 * - hub clusters (hub_cluster.ts, needs nats-server and haproxy): requests and transfers
 *   forwarded hub to hub (64 MiB, or --size-mib), the forwarding transport measured raw (HTTP
 *   against NATS messages, 256 MiB or --size-mib), 30,000 simulated nodes over three hubs, a hub
 *   SIGKILLed behind HAProxy.
 * - microservices (mcm.ts, mcm_spares.ts, mcm_density.ts, mcm_download.ts): requests to a
 *   trivial microservice next to a bare Deno.serve and to an isolate per request, cold starts
 *   with and without a warm spare, memory per idle container and per running microservice, a
 *   large download inside a microservice.
 * - inference (inference.ts): a streamed chat completion through a node next to
 *   node-llama-cpp called directly, same model, prompts and threads; threads 1, 2 and the default;
 *   a chat routed to the node that has the model (inference_mesh.ts) next to the same chat sent
 *   straight to that node.
 * Needs curl and wrk (`apt-get install -y wrk`). Flags: `--size-mib N` (default 1024),
 * `--only requests|store|discovery|mesh|hub|cluster|mcm|inference`, `--quick [--record]`
 * (quick.ts: the ratios in under a minute, checked against recorded.json), `--readme` (a full
 * run writes its table into docs/benchmarks.md: readme.ts).
 *
 * @module
 */
import { parseArgs } from "node:util";
import { fileURLToPath as fromFileUrl } from "node:url";
import { discoveryRows } from "./discovery.ts";
import { hubRows } from "./hub.ts";
import { clusterRows } from "./hub_cluster.ts";
import { inferenceRows } from "./inference.ts";
import { meshRoutingRows } from "./inference_mesh.ts";
import { mcmRows } from "./mcm.ts";
import { meshTransferRows } from "./mesh_transfer.ts";
import { densityRows } from "./mcm_density.ts";
import { mcmDownloadRows } from "./mcm_download.ts";
import { spareRows } from "./mcm_spares.ts";
import { quickBench } from "./quick.ts";
import { BENCH_PAGE, benchTable, replaceBenchTable } from "./readme.ts";
import { requestPathRows } from "./request_path.ts";
import { storeRows } from "./store.ts";
import { run } from "./tools.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    "size-mib": { type: "string" },
    only: { type: "string" },
    quick: { type: "boolean" },
    record: { type: "boolean" },
    readme: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  },
});
const USAGE = `deno task bench [--size-mib N] [--only PART] [--quick [--record]] [--readme]
  --size-mib N  transfer size in MiB (default 1024; the hub's transfers a quarter of it)
  --only PART   one part: requests|store|discovery|mesh|hub|cluster|mcm|inference
  --quick       the ratios in under a minute, checked against scripts/bench/recorded.json;
                with --record, writes them anew
  --readme      a full run writes its table into docs/benchmarks.md
Needs curl, wrk and taskset (apt-get install -y curl wrk util-linux).`;
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
  if (values.help) return console.log(USAGE);
  await requireTools();
  if (values.quick) Deno.exit(await quickBench(values.record === true));
  if (values.readme && values.only) {
    throw new Error("--readme writes a full run's table: no --only");
  }
  const rows: string[][] = [];
  const only = values.only;
  if (!only || only === "requests") rows.push(...await requestPathRows());
  if (!only || only === "store") rows.push(...await storeRows(SIZE_MIB, SMALL_MIB));
  if (!only || only === "discovery") rows.push(...await discoveryRows());
  if (!only || only === "mesh") rows.push(...await meshTransferRows(SIZE_MIB));
  if (!only || only === "hub") rows.push(...await hubRows(SMALL_MIB));
  if (!only || only === "cluster") {
    const given = values["size-mib"] === undefined ? undefined : SIZE_MIB;
    rows.push(...await clusterRows({ tunnelMib: given ?? 64, transportMib: given ?? 256 }));
  }
  if (!only || only === "mcm") {
    rows.push(...await mcmRows(), ...await spareRows(), ...await densityRows());
    rows.push(...await mcmDownloadRows(SIZE_MIB));
  }
  if (!only || only === "inference") {
    rows.push(...await inferenceRows(), ...await meshRoutingRows());
  }
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
    const readme = new URL(`../../${BENCH_PAGE}`, import.meta.url);
    await Deno.writeTextFile(readme, replaceBenchTable(await Deno.readTextFile(readme), table));
    // Aligned as `deno fmt --check` (CI) wants the table.
    await run(Deno.execPath(), ["fmt", "--quiet", fromFileUrl(readme)]);
    console.log(`bench: ${BENCH_PAGE}'s table written`);
  }
}

if (import.meta.main) await main();
