/**
 * The trivial microservice route against workerd (issue 39's targets: ≥ 1.0× in a client's
 * process, the default; ≥ 2× in a process per container), for `deno task bench --only mcm`:
 * workerd and a node of each mode, every process pinned to core 0 and wrk to core 1, in
 * interleaved rounds (the median of each). Beside the rates, the CPU time each spent per request
 * (from /proc/PID/task/TID/stat before and after a round: robust to other load on the machine,
 * which rates are not), by thread: the node's main thread, its other threads (V8's collector,
 * Deno's I/O), the container process's main thread (the host), the microservice's worker, and
 * the container process's other threads.
 *
 * @module
 */
import { startTestNode, type TestNode } from "../../testing/node.ts";
import { childPids, deployHello, median, run, workerdBinary } from "./tools.ts";
import { startWorkerd } from "./request_servers.ts";

const ROUNDS = 3;
const SECONDS = 4;
/** Linux's clock ticks per second (USER_HZ), in which /proc's CPU times are counted. */
const TICKS_PER_SECOND = 100;

/** What a thread does, for the CPU figures. */
type ThreadKind = "main" | "other" | "host" | "worker" | "process other";

/** All processes below a pid. */
async function descendants(pid: number): Promise<number[]> {
  const children = await childPids(pid);
  return [...children, ...(await Promise.all(children.map(descendants))).flat()];
}

/**
 * Clock ticks of CPU used so far by the threads of `root` and its descendants, by kind (`cat`
 * reads /proc: Deno reads it only with --allow-all).
 */
async function cpuTicks(root: number): Promise<Map<ThreadKind, number>> {
  const pids = [root, ...await descendants(root)];
  const script = pids.map((pid) => `echo P ${pid}; cat /proc/${pid}/task/*/stat`).join("; ");
  const out = await run("sh", ["-c", `${script} 2>/dev/null || true`]);
  const ticks = new Map<ThreadKind, number>();
  let pid = 0;
  for (const line of out.split("\n")) {
    if (line.startsWith("P ")) {
      pid = Number(line.slice(2));
      continue;
    }
    const close = line.lastIndexOf(")");
    if (close < 0) continue;
    const tid = Number(line.slice(0, line.indexOf(" ")));
    const name = line.slice(line.indexOf("(") + 1, close);
    // utime and stime: the 14th and 15th fields, counted from the tid.
    const fields = line.slice(close + 2).split(" ");
    const used = Number(fields[11]) + Number(fields[12]);
    const main = tid === pid;
    const kind: ThreadKind = pid === root
      ? (main ? "main" : "other")
      : /^worker-/.test(name)
      ? "worker"
      : main
      ? "host"
      : "process other";
    ticks.set(kind, (ticks.get(kind) ?? 0) + used);
  }
  return ticks;
}

/** wrk on core 1 for `seconds`: requests/s and the number of requests. */
async function load(url: string, seconds: number): Promise<{ rate: number; count: number }> {
  const out = await run("taskset", ["-c", "1", "wrk", "-t1", "-c50", `-d${seconds}s`, url]);
  const failed = /Non-2xx or 3xx responses: (\d+)/.exec(out);
  if (failed) console.error(`warning: wrk ${url}: ${failed[1]} non-2xx/3xx responses`);
  return {
    rate: Math.round(Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])),
    count: Number(/(\d+) requests in/.exec(out)?.[1]),
  };
}

/** One measured server: its URL and the pid whose process tree serves it. */
interface Target {
  url: string;
  pid: number;
}

/** A round of `target`: its rate and CPU µs per request by thread kind. */
async function measure(target: Target, warmup: number) {
  await load(target.url, warmup);
  const before = await cpuTicks(target.pid);
  const { rate, count } = await load(target.url, SECONDS);
  const after = await cpuTicks(target.pid);
  const micros = new Map<ThreadKind, number>();
  for (const [kind, ticks] of after) {
    micros.set(kind, ((ticks - (before.get(kind) ?? 0)) * 1e6) / TICKS_PER_SECOND / count);
  }
  return { rate, micros };
}

/** workerd serving the same body on core 0 (request_servers.ts), with its version. */
async function startWorkerdHello() {
  const binary = await workerdBinary();
  const server = await startWorkerd(binary.path);
  // wrk asks for the root: the URL names it, as the nodes' do.
  return { ...server, url: `${server.url}/`, version: binary.version };
}

/** A node of `mode` serving the trivial microservice, all its processes on core 0. */
async function startNode(dir: string, mode: string): Promise<Target & { node: TestNode }> {
  await Deno.mkdir(`${dir}/${mode}`);
  const node = await startTestNode({
    dataDir: `${dir}/${mode}`,
    config: {
      apiKey: "a-bench-key-of-enough-length",
      discovery: { mdns: false },
      mcm: { spareContainers: 0, containerProcess: mode },
    },
  });
  const url = await deployHello(node);
  for (const pid of [node.pid, ...await descendants(node.pid)]) {
    await run("taskset", ["-a", "-p", "-c", "0", String(pid)]);
  }
  return { url, pid: node.pid, node };
}

const count = (n: number) => Math.round(n).toLocaleString("en-US");

/** CPU µs per request of a round's threads, as a cell's words. */
function cpuWords(micros: Map<ThreadKind, number>): string {
  const of = (kind: ThreadKind) => micros.get(kind) ?? 0;
  const total = [...micros.values()].reduce((sum, value) => sum + value, 0);
  if (!micros.has("worker")) return `${total.toFixed(0)} µs CPU/request`;
  const node = of("main") + of("other");
  return `${total.toFixed(0)} µs CPU/request: node ${node.toFixed(0)} (main thread ` +
    `${of("main").toFixed(0)}), container process: host thread ${of("host").toFixed(1)}, ` +
    `worker ${of("worker").toFixed(0)}, others ${of("process other").toFixed(0)}`;
}

/** The rows: the route in each mode against workerd, same run. */
export async function routeRows(): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-route-" });
  const stops: (() => Promise<unknown>)[] = [];
  try {
    const workerd = await startWorkerdHello();
    stops.push(workerd.stop);
    const modes = ["per-client", "per-container"] as const;
    const nodes = [];
    for (const mode of modes) {
      const started = await startNode(dir, mode);
      stops.push(() => started.node.stop());
      nodes.push(started);
    }
    const targets = [workerd, ...nodes];
    const rounds: Awaited<ReturnType<typeof measure>>[][] = targets.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, target] of targets.entries()) {
        rounds[i].push(await measure(target, round === 0 ? 2 : 1));
      }
    }
    /** The median round of target `i` (by rate), and every round's rate. */
    const middle = (i: number) => {
      const rate = median(rounds[i].map((r) => r.rate));
      return { ...rounds[i].find((r) => r.rate === rate)!, all: rounds[i].map((r) => r.rate) };
    };
    const baseline = middle(0);
    const header = `(wrk -c50, all on 1 core, median of ${ROUNDS} interleaved rounds)`;
    return modes.map((mode, m) => {
      const ours = middle(m + 1);
      const target = mode === "per-client" ? "≥ 1.0×" : "≥ 2×";
      const where = mode === "per-client"
        ? "in its client's process (mcm.containerProcess per-client, the default)"
        : "in a process of its own (mcm.containerProcess per-container)";
      return [
        `GET a trivial microservice route ${where} against workerd ${header}`,
        `${count(ours.rate)} req/s; ${cpuWords(ours.micros)}`,
        `workerd ${workerd.version}: ${count(baseline.rate)} req/s (${
          (ours.rate / baseline.rate).toFixed(2)
        }×, target ${target}), ${cpuWords(baseline.micros)}; rounds ${
          ours.all.map(count).join("/")
        }; ${baseline.all.map(count).join("/")}`,
      ];
    });
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  for (const row of await routeRows()) console.log(row.join("\n  "));
}
