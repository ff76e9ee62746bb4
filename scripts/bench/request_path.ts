/**
 * The request path for `deno task bench` (alone: `deno task bench --only requests`): requests/s
 * of three of the node's routes next to what a user would run instead, in the same run:
 * - GET /ai/store/v1/models/{id} and JSON-RPC getMe (POST /jsonrpc/v1), next to the same routes
 *   in Hono on Deno answering the same JSON (scripts/bench/baselines/hono_server.ts) and in a
 *   bare Deno.serve handler (the same file with `--bare`);
 * - the trivial microservice of scripts/bench/mcm.ts, next to workerd (npm:workerd) serving the
 *   same body from a JS worker (scripts/bench/baselines/workerd_hello.capnp) and a bare
 *   Deno.serve (scripts/bench/baselines/mcm_baselines.ts `/hello`).
 * Every server runs on core 0 (the node with its container process), wrk -t1 -c50 on core 1.
 * The machine is noisy, so the figures are the medians of three interleaved rounds (edgenode,
 * then each baseline, per route, round after round). Beside each rate, the CPU time each server
 * (with its child processes) spent per request in the measured seconds, from /proc: on a shared
 * machine it moves far less than the rate, which follows what else runs on core 0.
 *
 * @module
 */
import { startTestNode } from "../../testing/node.ts";
import {
  childPids,
  createModel,
  deployHello,
  HELLO_BUNDLE,
  median,
  run,
  startMcmBaselines,
  workerdBinary,
  wrk,
} from "./tools.ts";

const ROUNDS = 3;
const SECONDS = 4;
const MODEL_ID = "bench-model";
const GET_ME = `{"jsonrpc":"2.0","id":1,"method":"getMe"}`;
const BASELINES = new URL("./baselines/", import.meta.url).pathname;
const REPOSITORY = new URL("../..", import.meta.url).pathname;

const count = (n: number) => n.toLocaleString("en-US");
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;

/** A server process of the benchmark: its URL, its process, and how to stop it. */
interface Server {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const TICKS_PER_SECOND = 100;

/**
 * CPU seconds (user and system) a process and its descendants have used so far. Read by `cat`:
 * Deno lets a script read /proc/<pid>/stat only with --allow-all.
 */
async function cpuSeconds(pid: number): Promise<number> {
  const files = [pid, ...await descendants(pid)].map((each) => `/proc/${each}/stat`);
  // A process that ended meanwhile has no file any more: the others count.
  const out = await run("sh", ["-c", `cat ${files.join(" ")} 2>/dev/null; true`]);
  let ticks = 0;
  for (const stat of out.split("\n").filter((line) => line.includes(")"))) {
    // The fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / TICKS_PER_SECOND;
}

/** Spawns `taskset -c 0 COMMAND` and waits for the "port N" line it prints. */
async function startPrintingPort(command: string, args: string[]): Promise<Server> {
  const child = new Deno.Command("taskset", {
    args: ["-c", "0", command, ...args],
    cwd: REPOSITORY,
    stdin: "null",
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const port = /port (\d+)/.exec((await reader.read()).value ?? "")?.[1];
  const stop = async () => {
    try {
      child.kill();
    } catch { /* already exited */ }
    await child.status;
    await reader.cancel();
  };
  if (!port) {
    await stop();
    throw new Error(`${args.join(" ")} printed no port`);
  }
  return { url: `http://127.0.0.1:${port}`, pid: child.pid, stop };
}

/** Starts hono_server.ts (or its bare Deno.serve twin) on core 0. */
function startJsonBaseline(dir: string, bare: boolean): Promise<Server> {
  return startPrintingPort(Deno.execPath(), [
    "run",
    "--no-prompt",
    "--allow-net=127.0.0.1",
    `--allow-read=${dir}`,
    `${BASELINES}hono_server.ts`,
    ...(bare ? ["--bare"] : []),
    `${dir}/model.json`,
    `${dir}/getme.json`,
  ]);
}

/** Starts workerd with workerd_hello.capnp on a free port of 127.0.0.1, on core 0. */
async function startWorkerd(binary: string): Promise<Server> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  const child = new Deno.Command("taskset", {
    args: [
      "-c",
      "0",
      binary,
      "serve",
      `${BASELINES}workerd_hello.capnp`,
      "--socket-addr",
      `http=127.0.0.1:${port}`,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let stderr = "";
  const drained = (async () => {
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) stderr += chunk;
  })();
  let exited = false;
  child.status.then(() => exited = true);
  const stop = async () => {
    try {
      child.kill();
    } catch { /* already exited */ }
    await child.status;
    await drained;
  };
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 15_000;
  while (true) {
    try {
      const response = await fetch(`${url}/`);
      if ((await response.text()) === "hello") return { url, pid: child.pid, stop };
    } catch { /* not listening yet */ }
    if (exited || Date.now() > deadline) {
      await stop();
      throw new Error(
        `workerd did not answer "hello": ${stderr.trim().slice(-300) || "no output"}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Asserts a server answers `request` with `expected` (same bytes, status 200). */
async function expectSame(url: string, init: RequestInit, expected: string, what: string) {
  const response = await fetch(url, init);
  const text = await response.text();
  if (response.status !== 200 || text !== expected) {
    throw new Error(`${what} at ${url}: ${response.status} ${text} (expected ${expected})`);
  }
}

/** All processes below a pid. */
async function descendants(pid: number): Promise<number[]> {
  const children = await childPids(pid);
  return [...children, ...(await Promise.all(children.map(descendants))).flat()];
}

/** The request path rows. */
export async function requestPathRows(): Promise<string[][]> {
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-requests-" });
  const servers: Server[] = [];
  try {
    await Deno.mkdir(`${dir}/node`);
    await using node = await startTestNode({
      dataDir: `${dir}/node`,
      config: { apiKey: "a-bench-key-of-enough-length", discovery: { mdns: false } },
    });
    await createModel(node, MODEL_ID);
    const modelUrl = `${node.storeUrl}/models/${MODEL_ID}`;
    const rpcUrl = `${node.url}/jsonrpc/v1`;
    const post = {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: GET_ME,
    };
    // The exact bytes the node answers, which the baselines answer too.
    const modelResponse = await fetch(modelUrl);
    const modelJson = await modelResponse.text();
    if (modelResponse.status !== 200) throw new Error(`GET ${modelUrl}: ${modelJson}`);
    const getMeResponse = await fetch(rpcUrl, post);
    const getMeJson = await getMeResponse.text();
    if (!JSON.parse(getMeJson).result) throw new Error(`getMe: ${getMeJson}`);
    await Deno.writeTextFile(`${dir}/model.json`, modelJson);
    await Deno.writeTextFile(`${dir}/getme.json`, getMeJson);
    const helloUrl = await deployHello(node);
    await expectSame(helloUrl, {}, "hello", "the microservice");

    // The node and its container process on core 0, as the baselines.
    for (const pid of [node.pid, ...await descendants(node.pid)]) {
      await run("taskset", ["-a", "-p", "-c", "0", String(pid)]);
    }
    const hono = await startJsonBaseline(dir, false);
    servers.push(hono);
    const bareJson = await startJsonBaseline(dir, true);
    servers.push(bareJson);
    await Deno.writeTextFile(`${dir}/index.js`, HELLO_BUNDLE);
    const mcmBaselines = await startMcmBaselines(`${dir}/index.js`);
    servers.push({
      url: mcmBaselines.url,
      pid: mcmBaselines.server.pid,
      stop: async () => {
        mcmBaselines.server.kill();
        await mcmBaselines.server.status;
      },
    });
    let workerd: Server | undefined;
    let workerdVersion = "";
    let workerdFailure = "";
    try {
      const binary = await workerdBinary();
      workerdVersion = binary.version;
      workerd = await startWorkerd(binary.path);
      servers.push(workerd);
    } catch (error) {
      workerdFailure = error instanceof Error ? error.message : String(error);
    }
    for (const server of [hono, bareJson]) {
      await expectSame(`${server.url}/ai/store/v1/models/${MODEL_ID}`, {}, modelJson, "model");
      await expectSame(`${server.url}/jsonrpc/v1`, post, getMeJson, "getMe");
    }
    await expectSame(`${mcmBaselines.url}/hello`, {}, "hello", "bare hello");

    // A measurement: wrk's warm-up apart, so the CPU read around the measured seconds is theirs.
    type Measure = (warmup: number) => Promise<{ rate: number; cpuMicros: number }>;
    const load = (pid: number, url: string, body?: string): Measure => async (warmup) => {
      if (warmup > 0) await wrk(url, {}, { body, seconds: warmup, warmup: 0 });
      const before = await cpuSeconds(pid);
      const rate = await wrk(url, {}, { body, seconds: SECONDS, warmup: 0 });
      const used = await cpuSeconds(pid) - before;
      return { rate, cpuMicros: rate > 0 ? (used / (rate * SECONDS)) * 1e6 : NaN };
    };
    // What each route is measured against, in the order of a round.
    const targets: Record<string, Measure> = {
      model: load(node.pid, modelUrl),
      modelHono: load(hono.pid, `${hono.url}/ai/store/v1/models/${MODEL_ID}`),
      modelBare: load(bareJson.pid, `${bareJson.url}/ai/store/v1/models/${MODEL_ID}`),
      getMe: load(node.pid, rpcUrl, GET_ME),
      getMeHono: load(hono.pid, `${hono.url}/jsonrpc/v1`, GET_ME),
      getMeBare: load(bareJson.pid, `${bareJson.url}/jsonrpc/v1`, GET_ME),
      hello: load(node.pid, helloUrl),
      ...(workerd ? { helloWorkerd: load(workerd.pid, `${workerd.url}/`) } : {}),
      helloBare: load(mcmBaselines.server.pid, `${mcmBaselines.url}/hello`),
    };
    const figures: Record<string, number[]> = {};
    const cpu: Record<string, number[]> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, measure] of Object.entries(targets)) {
        const { rate, cpuMicros } = await measure(round === 0 ? 2 : 1);
        (figures[name] ??= []).push(rate);
        (cpu[name] ??= []).push(cpuMicros);
      }
    }
    const m = Object.fromEntries(
      Object.entries(figures).map(([name, values]) => [name, median(values)]),
    );
    const c = Object.fromEntries(
      Object.entries(cpu).map(([name, values]) => [name, median(values)]),
    );
    // Edgenode's CPU per request against each baseline's: above 1× it spends less.
    const cpuRounds = (name: string) => cpu[name].map((micros) => micros.toFixed(1)).join("/");
    const cpuCell = (name: string, ...others: [string, string][]) =>
      `CPU per request (median; rounds): ${c[name].toFixed(1)} µs (${cpuRounds(name)}); ${
        others.map(([label, other]) =>
          `${label} ${c[other].toFixed(1)} µs (${(c[other] / c[name]).toFixed(2)}×; ${
            cpuRounds(other)
          })`
        ).join(", ")
      }`;
    const rounds = (...names: string[]) =>
      `rounds: ${names.map((name) => figures[name].map(count).join("/")).join("; ")}`;
    const header = `(wrk -c50, 1 core, median of ${ROUNDS} interleaved rounds)`;
    const jsonRow = (what: string, name: string) => [
      `${what} ${header}`,
      `${count(m[name])} req/s`,
      `Hono on Deno, same JSON: ${count(m[`${name}Hono`])} (${
        ratio(m[name], m[`${name}Hono`])
      }, target ≥ 1.0×); bare Deno.serve: ${count(m[`${name}Bare`])} (${
        ratio(m[name], m[`${name}Bare`])
      }); ${rounds(name, `${name}Hono`, `${name}Bare`)}; ${
        cpuCell(name, ["Hono", `${name}Hono`], ["bare", `${name}Bare`])
      }`,
    ];
    const workerdCell = workerd
      ? `workerd ${workerdVersion} (JS worker, same body): ${count(m.helloWorkerd)} (${
        ratio(m.hello, m.helloWorkerd)
      }, target ≥ 2×)`
      : `workerd: did not run (${workerdFailure})`;
    return [
      jsonRow("GET /models/{id}", "model"),
      jsonRow("JSON-RPC getMe (POST /jsonrpc/v1)", "getMe"),
      [
        `GET a trivial microservice route, node and container process ${header}`,
        `${count(m.hello)} req/s`,
        `${workerdCell}; bare Deno.serve: ${count(m.helloBare)} (${
          ratio(m.hello, m.helloBare)
        }, target ≥ 0.5×); ${rounds("hello", ...(workerd ? ["helloWorkerd"] : []), "helloBare")}; ${
          cpuCell(
            "hello",
            ...(workerd ? [["workerd", "helloWorkerd"] as [string, string]] : []),
            ["bare", "helloBare"],
          )
        } (the node with its container process)`,
      ],
    ];
  } finally {
    for (const server of servers.reverse()) await server.stop().catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
