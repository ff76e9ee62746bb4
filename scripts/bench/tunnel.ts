/**
 * The tunnel's figures alone (issue 23), each beside the same request sent straight to the node
 * in the same round: a small GET under load (wrk -c50 on core 1: req/s and p99), and a download
 * and an upload of `--mib` MiB with curl. Prints each round and the medians. `rawNodes`: how many
 * of the pair's nodes took the raw transport (spec/hub.yaml); 0 means the WebSocket was measured.
 *
 * `deno run -A scripts/bench/tunnel.ts [--rounds 3] [--mib 64]`
 *
 * @module
 */
import { parseArgs } from "node:util";
import { makeIssuer, type TestIssuer } from "../../testing/identity.ts";
import { curlArgs, makeModelFile, median, peakRssMib, run, timed, tunnelPair } from "./tools.ts";

/** One round's figures. */
interface Round {
  getDirect: number;
  getTunnel: number;
  p99Direct: number;
  p99Tunnel: number;
  downDirect: number;
  downTunnel: number;
  upDirect: number;
  upTunnel: number;
  hubPeakMib: number;
  rawNodes: number;
}

/** wrk -t1 -c50 on core 1: requests/s and p99 in ms. */
async function load(url: string, headers: Record<string, string>, seconds: number) {
  const args = ["-c", "1", "wrk", "-t1", "-c50", `-d${seconds}s`, "--latency"];
  for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`);
  const out = await run("taskset", [...args, url]);
  if (/Non-2xx/.test(out)) console.error(`warning: non-2xx answers from ${url}`);
  const [, value, unit] = /99%\s+([\d.]+)(us|ms|s)/.exec(out) ?? [];
  return {
    rate: Math.round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])),
    p99: Number(value) * ({ us: 0.001, ms: 1, s: 1000 }[unit as "us" | "ms" | "s"] ?? NaN),
  };
}

async function round(dir: string, issuer: TestIssuer, mib: number, file: string): Promise<Round> {
  const pair = await tunnelPair(issuer, `${dir}/pair`);
  try {
    const health = await (await fetch(`${pair.hub.url}/hub/v1/health`)).json();
    const path = "/mds/v1/nodes?ping=true";
    await load(`${pair.sepUrl}${path}`, pair.tunnel, 1);
    const through = await load(`${pair.sepUrl}${path}`, pair.tunnel, 3);
    await load(`${pair.node.url}${path}`, {}, 1);
    const direct = await load(`${pair.node.url}${path}`, {}, 3);
    await pair.createModel("d");
    await pair.createModel("t");
    const mb = mib * 1.048576;
    const key = { Authorization: `Bearer ${pair.node.apiKey}` };
    const models = `${pair.node.storeUrl}/models`;
    const tunnelled = `${pair.sepUrl}/ai/store/v1/models/t`;
    const upDirect = await timed("curl", curlArgs(`${models}/d/upload`, key, file));
    const upTunnel = await timed("curl", curlArgs(`${tunnelled}/upload`, pair.tunnel, file));
    const downDirect = await timed("curl", curlArgs(`${models}/d?alt=media`, {}));
    const downTunnel = await timed("curl", curlArgs(`${tunnelled}?alt=media`, pair.tunnel));
    return {
      getDirect: direct.rate,
      getTunnel: through.rate,
      p99Direct: direct.p99,
      p99Tunnel: through.p99,
      downDirect: mb / downDirect,
      downTunnel: mb / downTunnel,
      upDirect: mb / upDirect,
      upTunnel: mb / upTunnel,
      hubPeakMib: await peakRssMib(pair.hub.pid),
      rawNodes: health.rawNodes ?? 0,
    };
  } finally {
    await pair.close();
    await Deno.remove(`${dir}/pair`, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  const { values: args } = parseArgs({
    args: Deno.args,
    options: { rounds: { type: "string" }, mib: { type: "string" } },
  });
  const rounds = Number(args.rounds ?? 3);
  const mib = Number(args.mib ?? 64);
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-tunnel-" });
  try {
    const file = `${dir}/big.gguf`;
    await makeModelFile(file, mib);
    const issuer = await makeIssuer(`${dir}/issuer`);
    const all: Round[] = [];
    for (let i = 0; i < rounds; i++) {
      const r = await round(dir, issuer, mib, file);
      all.push(r);
      console.log(JSON.stringify(r, (_, v) => typeof v === "number" ? Number(v.toFixed(2)) : v));
    }
    const m = (key: keyof Round) => median(all.map((r) => r[key]));
    const ratio = (a: keyof Round, b: keyof Round) => median(all.map((r) => r[a] / r[b]));
    console.log(
      `medians of ${rounds}: GET ${m("getTunnel")} vs ${m("getDirect")} req/s ` +
        `(${ratio("getTunnel", "getDirect").toFixed(2)}×), p99 ${m("p99Tunnel").toFixed(2)} vs ` +
        `${m("p99Direct").toFixed(2)} ms (${ratio("p99Tunnel", "p99Direct").toFixed(1)}×); ` +
        `download ${mib} MiB ${m("downTunnel").toFixed(0)} vs ${m("downDirect").toFixed(0)} MB/s ` +
        `(${ratio("downTunnel", "downDirect").toFixed(2)}×); upload ${m("upTunnel").toFixed(0)} ` +
        `vs ${m("upDirect").toFixed(0)} MB/s (${ratio("upTunnel", "upDirect").toFixed(2)}×); ` +
        `hub peak RSS ${m("hubPeakMib").toFixed(0)} MiB`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
