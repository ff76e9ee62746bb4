/**
 * Hub figures for `deno task bench` (alone: `deno task bench --only hub`):
 * - GET through the tunnel (client → hub → WebSocket → node) in requests/s and p99 latency,
 *   next to the same GET sent straight to the node;
 * - a large file downloaded and uploaded through the tunnel with curl, in MB/s, next to the same
 *   transfer straight to the node, with the hub's peak RSS (it must not grow with the size);
 * - how many simulated node connections one hub holds, and its memory per connection.
 *
 * @module
 */
import { startTestHub, type TestHub } from "../../testing/hub.ts";
import { cliToken, makeIssuer, type TestIssuer } from "../../testing/identity.ts";
import {
  curlArgs,
  makeModelFile,
  p99,
  peakRssMib,
  rssMib,
  run,
  timed,
  tunnelPair,
  wrk,
} from "./tools.ts";

/** Simulated node connections: bounded, on 127.0.0.1 only. */
const SIMULATED_CONNECTIONS = 10_000;

/** Connects simulated nodes to a fresh hub; its memory before and after. */
async function connectionRow(hub: TestHub, token: string): Promise<string[]> {
  const before = await rssMib(hub.pid);
  const clients = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net=127.0.0.1",
      "--allow-read",
      // The shared fixtures it imports (testing/) read their settings from the environment.
      "--allow-env",
      new URL("./hub_clients.ts", import.meta.url).pathname,
      hub.url,
      token,
      String(SIMULATED_CONNECTIONS),
    ],
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const reader = clients.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const timeout = setTimeout(() => clients.kill(), 120_000);
  const { value: line } = await reader.read();
  clearTimeout(timeout);
  const connectedMs = Number(/in (\d+) ms/.exec(line ?? "")?.[1]);
  const health = await (await fetch(`${hub.url}/hub/v1/health`)).json();
  const after = await rssMib(hub.pid);
  await clients.stdin.close();
  await clients.status;
  await until(async () => (await (await fetch(`${hub.url}/hub/v1/health`)).json()).nodes === 0);
  return [
    `simulated nodes connected to one hub (proof + JWT each, 200 at a time)`,
    `${health.nodes} in ${(connectedMs / 1000).toFixed(1)} s`,
    `hub RSS ${before.toFixed(0)} → ${after.toFixed(0)} MiB: ${
      ((after - before) * 1024 / health.nodes).toFixed(1)
    } KiB per connection`,
  ];
}

async function until(condition: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The peak RSS of a fresh hub after uploading and downloading `mib` MiB through it. */
async function transferPeak(issuer: TestIssuer, dir: string, mib: number): Promise<number> {
  const pair = await tunnelPair(issuer, dir);
  try {
    await makeModelFile(`${dir}/file`, mib);
    await pair.createModel("m");
    const url = `${pair.sepUrl}/ai/store/v1/models/m`;
    await run("curl", curlArgs(`${url}/upload`, pair.tunnel, `${dir}/file`));
    await run("curl", curlArgs(`${url}?alt=media`, pair.tunnel));
    return await peakRssMib(pair.hub.pid);
  } finally {
    await pair.close();
    await Deno.remove(`${dir}/file`).catch(() => {});
  }
}

/** The hub rows of the benchmark table; `sizeMib` is the transfer size. */
export async function hubRows(sizeMib: number): Promise<string[][]> {
  const rows: string[][] = [];
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-" });
  const issuer = await makeIssuer(`${dir}/issuer`);
  const pair = await tunnelPair(issuer, `${dir}/speed`);
  try {
    const { node, sepUrl, tunnel } = pair;
    const path = "/mds/v1/nodes?ping=true";
    const direct = await wrk(`${node.url}${path}`);
    const through = await wrk(`${sepUrl}${path}`, tunnel);
    rows.push([
      "GET through the hub's tunnel (wrk -c50, 1 core)",
      `${through} req/s, p99 ${(await p99(`${sepUrl}${path}`, tunnel)).toFixed(2)} ms`,
      `straight to the node: ${direct} req/s, p99 ${
        (await p99(`${node.url}${path}`)).toFixed(2)
      } ms`,
    ]);

    const file = `${dir}/big.gguf`;
    await makeModelFile(file, sizeMib);
    const mb = sizeMib * 1.048576;
    await pair.createModel("direct");
    await pair.createModel("tunnelled");
    const key = { Authorization: `Bearer ${node.apiKey}` };
    const models = `${node.storeUrl}/models`;
    const tunnelled = `${sepUrl}/ai/store/v1/models/tunnelled`;
    const upDirect = await timed("curl", curlArgs(`${models}/direct/upload`, key, file));
    const upTunnel = await timed("curl", curlArgs(`${tunnelled}/upload`, tunnel, file));
    const downDirect = await timed("curl", curlArgs(`${models}/direct?alt=media`, {}));
    const downTunnel = await timed("curl", curlArgs(`${tunnelled}?alt=media`, tunnel));
    rows.push([
      `upload ${sizeMib} MiB through the tunnel (curl -T, median of 3)`,
      `${(mb / upTunnel).toFixed(0)} MB/s`,
      `straight to the node: ${(mb / upDirect).toFixed(0)} MB/s`,
    ]);
    rows.push([
      `download ${sizeMib} MiB through the tunnel (curl, median of 3)`,
      `${(mb / downTunnel).toFixed(0)} MB/s`,
      `straight to the node: ${(mb / downDirect).toFixed(0)} MB/s`,
    ]);
  } finally {
    await pair.close();
  }
  const peaks = [];
  for (const mib of [Math.max(1, Math.round(sizeMib / 4)), sizeMib]) {
    peaks.push(`${mib} MiB: ${await transferPeak(issuer, `${dir}/peak${mib}`, mib)} MiB`);
  }
  rows.push([
    "hub peak RSS, a fresh hub per size, one upload and one download through the tunnel",
    peaks.join(", "),
    "must not grow with the size: 4 MiB in flight per stream and direction",
  ]);
  // A fresh hub, so that the figures above do not count.
  const fresh = await startTestHub(issuer, `${dir}/hub2`);
  try {
    rows.push(await connectionRow(fresh, await cliToken(issuer, "bench", "edge:clusters")));
  } finally {
    await fresh.stop();
    await Deno.remove(dir, { recursive: true });
  }
  return rows;
}
