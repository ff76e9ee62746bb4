/**
 * Density in `deno task bench --only mcm`: what a running microservice costs, as proportional
 * memory (PSS) of the node and all its container processes with 1, 20 and 100 trivial
 * containers of one client, per client (mcm.containerProcess `per-client`: each a worker of the
 * client's process) and per container (a process each, 1 and 20); the marginal memory per
 * container; the cold start of a container into its client's running process; and workerd
 * (npm:workerd) serving 1, 20 and 100 hello workers from one process, the peer's figure.
 *
 * @module
 */
import { postImage, serviceUrl, startContainer } from "../../testing/mcm.ts";
import { startTestNode } from "../../testing/node.ts";
import { helloImage, median, pssMib, run, workerdBinary, wrk } from "./tools.ts";

const COUNTS = [1, 20, 100];
const SETTLE_MS = 1500;
/** Between two timed deploys: the client's process loads its next worker 250 ms after a take. */
const SPACING_MS = 400;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The process and all its descendants. */
async function tree(pid: number): Promise<number[]> {
  const out = await run("ps", ["-e", "-o", "pid=,ppid="]);
  const children = new Map<number, number[]>();
  for (const line of out.trim().split("\n")) {
    const [child, parent] = line.trim().split(/\s+/).map(Number);
    children.set(parent, [...(children.get(parent) ?? []), child]);
  }
  const all = [pid];
  for (let i = 0; i < all.length; i++) all.push(...(children.get(all[i]) ?? []));
  return all;
}

/** PSS of a process tree, MiB. */
async function treePss(pid: number): Promise<number> {
  let sum = 0;
  for (const member of await tree(pid)) sum += await pssMib(member).catch(() => 0);
  return sum;
}

/** A node with `count` hello containers of one client: its tree's PSS, and the start times. */
async function nodeWith(
  dir: string,
  image: Uint8Array,
  count: number,
  mode: "per-client" | "per-container",
): Promise<{ pss: number; starts: number[]; served?: number }> {
  await Deno.mkdir(dir);
  await using node = await startTestNode({
    dataDir: dir,
    config: {
      apiKey: "a-bench-key-of-enough-length",
      discovery: { mdns: false },
      // No spare: only running containers count.
      mcm: { spareContainers: 0, maxContainers: 128, containerProcess: mode },
    },
  });
  await (await postImage(node, image, "hello.tar")).body?.cancel();
  const starts: number[] = [];
  const urls: string[] = [];
  for (let i = 0; i < count; i++) {
    // Deploys a moment apart, as people make them: the process's loaded worker is back.
    if (count === 20) await sleep(SPACING_MS);
    const start = performance.now();
    const container = await startContainer(node, { name: `hello-${i}`, image: "hello" });
    urls.push(`${serviceUrl(node, container)}/`);
    const answer = await fetch(urls[i]);
    if ((await answer.text()) !== "hello") throw new Error(`hello-${i} did not answer`);
    starts.push(performance.now() - start);
  }
  await sleep(SETTLE_MS);
  const pss = await treePss(node.pid);
  // Requests to one of 20, the node and its container processes on core 0, wrk on core 1.
  let served: number | undefined;
  if (count === 20) {
    for (const pid of await tree(node.pid)) {
      await run("taskset", ["-a", "-p", "-c", "0", String(pid)]);
    }
    served = await wrk(urls[7]);
  }
  return { pss, starts, served };
}

/** workerd serving `count` hello workers, one socket each: its PSS, MiB. */
async function workerdPss(dir: string, binary: string, count: number): Promise<number> {
  // All held open until all are known: a port closed at once may be handed out again.
  const listeners = Array.from(
    { length: count },
    () => Deno.listen({ hostname: "127.0.0.1", port: 0 }),
  );
  const ports = listeners.map((listener) => listener.addr.port);
  for (const listener of listeners) listener.close();
  const js = `export default { fetch() { return new Response("hello"); } };`;
  await Deno.writeTextFile(`${dir}/hello.js`, js);
  const config = [
    `using Workerd = import "/workerd/workerd.capnp";`,
    `const config :Workerd.Config = (`,
    `  services = [${ports.map((_, i) => `(name = "w${i}", worker = .hello${i})`).join(", ")}],`,
    `  sockets = [${
      ports.map((port, i) =>
        `(name = "s${i}", address = "127.0.0.1:${port}", http = (), service = "w${i}")`
      ).join(", ")
    }],`,
    `);`,
    ...ports.map((_, i) =>
      `const hello${i} :Workerd.Worker = (modules = [(name = "worker", esModule = embed "hello.js")], compatibilityDate = "2025-01-01");`
    ),
  ].join("\n");
  await Deno.writeTextFile(`${dir}/density.capnp`, config);
  const child = new Deno.Command(binary, {
    args: ["serve", `${dir}/density.capnp`],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const draining = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (text) => void (stderr = (stderr + text).slice(-2000)) }),
  );
  let exited = false;
  child.status.then(() => exited = true);
  try {
    for (const port of ports) {
      for (let tries = 0;; tries++) {
        const text = await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text(), () => "");
        if (text === "hello") break;
        if (exited || tries > 300) {
          throw new Error(`workerd did not answer on ${port}: ${stderr.trim().slice(-300)}`);
        }
        await sleep(20);
      }
    }
    await sleep(SETTLE_MS);
    return await pssMib(child.pid);
  } finally {
    if (!exited) child.kill();
    await child.status;
    await draining.catch(() => {});
  }
}

/** The density rows. */
export async function densityRows(): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-density-" });
  try {
    return await densityRowsIn(dir, await helloImage());
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

async function densityRowsIn(dir: string, image: Uint8Array): Promise<string[][]> {
  const client: Record<number, { pss: number; starts: number[]; served?: number }> = {};
  for (const count of COUNTS) {
    client[count] = await nodeWith(`${dir}/client-${count}`, image, count, "per-client");
  }
  const own: Record<number, { pss: number; served?: number }> = {};
  for (const count of [1, 20]) {
    own[count] = await nodeWith(`${dir}/own-${count}`, image, count, "per-container");
  }
  const peer: Record<number, number> = {};
  let peerNote = "";
  try {
    const { path } = await workerdBinary();
    for (const count of COUNTS) peer[count] = await workerdPss(dir, path, count);
  } catch (error) {
    peerNote = `workerd not measured: ${(error as Error).message}`;
  }
  const marginal = (figures: Record<number, { pss: number } | number>, count: number) => {
    const at = (n: number) => {
      const value = figures[n];
      return typeof value === "number" ? value : value.pss;
    };
    return ((at(count) - at(1)) / (count - 1)).toFixed(1);
  };
  const totals = (figures: Record<number, { pss: number }>, counts: number[]) =>
    counts.map((n) => `${n}: ${figures[n].pss.toFixed(0)}`).join(", ");
  const intoRunning = client[20].starts.slice(1);
  return [
    [
      "density: memory per running microservice, one client's containers in its process " +
      "(mcm.containerProcess per-client, the default), node and processes PSS",
      `${marginal(client, 20)} MiB each at 20, ${marginal(client, 100)} MiB at 100`,
      `totals MiB ${totals(client, COUNTS)}; a process per container (per-container): ` +
      `${marginal(own, 20)} MiB each at 20 (totals ${totals(own, [1, 20])})`,
    ],
    [
      "density peer: workerd serving N hello workers from one process (PSS)",
      peerNote || `${marginal(peer, 20)} MiB each at 20, ${marginal(peer, 100)} MiB at 100`,
      peerNote ? "" : `totals MiB ${COUNTS.map((n) => `${n}: ${peer[n].toFixed(0)}`).join(", ")}`,
    ],
    [
      "GET a trivial microservice route, one of 20 running, in its client's process " +
      "(node and processes on one core, wrk -c50)",
      `${client[20].served} req/s`,
      `a process per container, same run: ${own[20].served} req/s`,
    ],
    [
      "cold start into the client's running process: POST /mcm/v1/containers to the first " +
      `answer (median of ${intoRunning.length})`,
      `${median(intoRunning).toFixed(0)} ms`,
      `the client's first container (a process start, no spare): ${
        client[20].starts[0].toFixed(0)
      } ms`,
    ],
  ];
}

if (import.meta.main) {
  for (const row of await densityRows()) console.log(row.join(" | "));
}
