/**
 * The request path for `deno task bench` (alone: `deno task bench --only requests`): requests/s
 * of three of the node's routes next to what a user would run instead, in the same run:
 * - GET /ai/store/v1/models/{id} and JSON-RPC getMe (POST /jsonrpc/v1), next to the same routes
 *   in Hono on Deno doing the node's work besides the JSON (CORS on every answer, the hub's mark
 *   and the Content-Type read: scripts/bench/baselines/hono_contract_server.ts), in Hono on Deno
 *   answering the same JSON alone (scripts/bench/baselines/hono_server.ts) and in a bare
 *   Deno.serve handler (the same file with `--bare`);
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
  cpuSeconds,
  descendants,
  expectSame,
  type Server,
  startJsonBaseline,
  startWorkerd,
} from "./request_servers.ts";
import {
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

const count = (n: number) => n.toLocaleString("en-US");
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;

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
    const hono = await startJsonBaseline(dir, "hono");
    servers.push(hono);
    const honoContract = await startJsonBaseline(dir, "honoContract");
    servers.push(honoContract);
    const bareJson = await startJsonBaseline(dir, "bare");
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
    for (const server of [hono, honoContract, bareJson]) {
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
      modelHonoContract: load(
        honoContract.pid,
        `${honoContract.url}/ai/store/v1/models/${MODEL_ID}`,
      ),
      modelHono: load(hono.pid, `${hono.url}/ai/store/v1/models/${MODEL_ID}`),
      modelBare: load(bareJson.pid, `${bareJson.url}/ai/store/v1/models/${MODEL_ID}`),
      getMe: load(node.pid, rpcUrl, GET_ME),
      getMeHonoContract: load(honoContract.pid, `${honoContract.url}/jsonrpc/v1`, GET_ME),
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
      `Hono on Deno, same contract (hono/cors, x-edge-via and Content-Type read, same JSON): ${
        count(m[`${name}HonoContract`])
      } (${ratio(m[name], m[`${name}HonoContract`])}); Hono on Deno, same JSON only: ${
        count(m[`${name}Hono`])
      } (${ratio(m[name], m[`${name}Hono`])}, target ≥ 1.0×); bare Deno.serve: ${
        count(m[`${name}Bare`])
      } (${ratio(m[name], m[`${name}Bare`])}); ${
        rounds(name, `${name}HonoContract`, `${name}Hono`, `${name}Bare`)
      }; ${
        cpuCell(
          name,
          ["Hono same contract", `${name}HonoContract`],
          ["Hono", `${name}Hono`],
          ["bare", `${name}Bare`],
        )
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
