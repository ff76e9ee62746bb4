/**
 * CPU time per small GET through the hub's tunnel (issue 39), robust to other load on a shared
 * machine: the hub's and the node's utime+stime (/proc/<pid>/stat) before and after a fixed wrk
 * run, divided by the requests wrk completed; beside it the same GET straight to the node in the
 * same round, with req/s and p99 of both. `EDGENODE_CPU_PROF=DIR` in the environment makes the
 * served processes write CPU profiles there when they stop (see src/program/self_program.ts).
 *
 * `deno run -A scripts/bench/hub_tunnel_cpu.ts [--rounds 3] [--seconds 5] [--path /mds/v1/nodes] [--tunnel-only]`
 *
 * @module
 */
import { parseArgs } from "node:util";
import { makeIssuer } from "../../testing/identity.ts";
import { median, run, tunnelPair } from "./tools.ts";

/** Clock ticks per second of /proc's times (USER_HZ, 100 on Linux). */
const TICKS = 100;

/** utime + stime of `pid` in seconds. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS;
}

/** One wrk run (-t1 -c50 on core 1): requests done, req/s and p99 in ms. */
async function load(url: string, headers: Record<string, string>, seconds: number) {
  const args = ["-c", "1", "wrk", "-t1", "-c50", `-d${seconds}s`, "--latency"];
  for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`);
  const out = await run("taskset", [...args, url]);
  if (/Non-2xx/.test(out)) console.error(`warning: non-2xx answers from ${url}`);
  const [, value, unit] = /99%\s+([\d.]+)(us|ms|s)/.exec(out) ?? [];
  return {
    requests: Number(/(\d+) requests in/.exec(out)?.[1]),
    rate: Math.round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])),
    p99: Number(value) * ({ us: 0.001, ms: 1, s: 1000 }[unit as "us" | "ms" | "s"] ?? NaN),
  };
}

/** Loads `url` and returns its figures with the µs of CPU per request of each of `pids`. */
async function measured(
  url: string,
  headers: Record<string, string>,
  seconds: number,
  pids: number[],
) {
  await load(url, headers, 1);
  const before = await Promise.all(pids.map(cpuSeconds));
  const figures = await load(url, headers, seconds);
  const after = await Promise.all(pids.map(cpuSeconds));
  const us = pids.map((_, i) => (after[i] - before[i]) * 1e6 / figures.requests);
  return { ...figures, us };
}

if (import.meta.main) {
  const { values: args } = parseArgs({
    args: Deno.args,
    options: {
      rounds: { type: "string" },
      seconds: { type: "string" },
      path: { type: "string" },
      "tunnel-only": { type: "boolean" },
    },
  });
  const rounds = Number(args.rounds ?? 3);
  const seconds = Number(args.seconds ?? 5);
  const path = args.path ?? "/mds/v1/nodes?ping=true";
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-tunnel-cpu-" });
  const rows: Record<string, number>[] = [];
  try {
    const issuer = await makeIssuer(`${dir}/issuer`);
    for (let i = 0; i < rounds; i++) {
      const pair = await tunnelPair(issuer, `${dir}/pair${i}`);
      try {
        const through = await measured(`${pair.sepUrl}${path}`, pair.tunnel, seconds, [
          pair.hub.pid,
          pair.node.pid,
        ]);
        // --tunnel-only: the node's profile holds tunnelled requests alone.
        const direct = args["tunnel-only"]
          ? { rate: NaN, p99: NaN, us: [NaN] }
          : await measured(`${pair.node.url}${path}`, {}, seconds, [pair.node.pid]);
        const row = {
          tunnelRate: through.rate,
          directRate: direct.rate,
          ratio: through.rate / direct.rate,
          p99Tunnel: through.p99,
          p99Direct: direct.p99,
          hubUs: through.us[0],
          nodeUs: through.us[1],
          directNodeUs: direct.us[0],
        };
        rows.push(row);
        console.log(
          JSON.stringify(row, (_, v) => typeof v === "number" ? Number(v.toFixed(2)) : v),
        );
      } finally {
        await pair.close();
      }
    }
    const m = (key: string) => median(rows.map((r) => r[key]));
    console.log(
      `medians of ${rounds}: tunnel ${m("tunnelRate")} vs direct ${m("directRate")} req/s ` +
        `(${m("ratio").toFixed(2)}×), p99 ${m("p99Tunnel").toFixed(2)} vs ` +
        `${m("p99Direct").toFixed(2)} ms; CPU per request: hub ${m("hubUs").toFixed(1)} µs, ` +
        `node ${m("nodeUs").toFixed(1)} µs (direct ${m("directNodeUs").toFixed(1)} µs)`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
