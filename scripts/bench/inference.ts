/**
 * Inference figures for `deno task bench` (alone: `deno task bench --only inference`): a streamed
 * chat completion through a node (POST /v1/chat/completions, the engine in its own process) next
 * to node-llama-cpp called directly (scripts/bench/baselines/inference_engine.ts), in the same run, on the
 * same model file, prompts, context size and threads (those the node chose: GET /v1/models
 * `info.threads`), temperature 0, 256 tokens (the models never sample EOS).
 *
 * Two models written by testing/tiny_llama.ts: a small one (4 layers, n_embd 256, 11 MB),
 * whose tokens take enough compute (about 4 ms each here) that the path around them is a small
 * share of a token's time, and the tests' tiny one (2 layers, n_embd 64, 0.5 MB; about 0.6 ms a
 * token), where it is a large share. Each round sends one prompt to both sides, the order
 * alternating; a prompt differs from the others from its first words, so neither side finds it in
 * its context already. Two warm-up completions on each side (the first loads the model) are left
 * out.
 *
 * Through the node, the client measures the time to the first content chunk (from the request's
 * start) and the generation rate between its first and last content chunk; the server's own
 * `usage` figures are shown too. Generation rates are (tokens - 1) / (last token - first token),
 * as `usage.decode_token_per_second` is. The CPU time of each process (every thread, from
 * /proc/<pid>/task/<tid>/schedstat) is taken around each completion. Then the tiny model directly
 * with 1 thread, also with its process pinned to one core, with 2 threads, and with
 * node-llama-cpp's default (4 threads on a 2-core machine).
 *
 * @module
 */
import { ensureTestEngine } from "../../testing/engine.ts";
import { startTestNode, type TestNode } from "../../testing/node.ts";
import { tinyLlamaGguf, type TinyLlamaOptions } from "../../testing/tiny_llama.ts";
import type { DirectRun } from "./baselines/inference_engine.ts";
import { createModel, run } from "./tools.ts";

const MAX_TOKENS = 256;
const WARMUPS = 2;
const THREAD_RUNS = 3;
const PINNED_RUNS = 5;
/** Tokens generated with node-llama-cpp's default threads: about 2 a second on 2 cores. */
const DEFAULT_THREADS_TOKENS = 8;

/** The benchmark's models, with the rounds each gets. */
const MODELS: {
  id: string;
  name: string;
  label: string;
  options: TinyLlamaOptions;
  rounds: number;
}[] = [
  {
    id: "bench-small",
    name: "small llama",
    label: "small llama (4 layers, n_embd 256, F32, 11 MB)",
    options: { layers: 4, embedding: 256, heads: 8, feedForward: 512, contextLength: 2048 },
    rounds: 9,
  },
  {
    id: "bench-tiny",
    name: "tiny llama",
    label: "tiny llama (2 layers, n_embd 64, F32, 0.5 MB)",
    options: {},
    rounds: 15,
  },
];

/** Round `i`'s prompt: about 200 tokens, different from the others from its first words. */
export function benchPrompt(i: number): string {
  return `Request ${i}: ` +
    "tell me about the cat and the dog that sat on the mat in the big red house, ".repeat(6);
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const rate = (tokens: number, ms: number) => ms > 0 ? ((tokens - 1) / ms) * 1000 : 0;
const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms1 = (n: number) => n.toFixed(1);

/** node-llama-cpp directly, in its own process (scripts/bench/baselines/inference_engine.ts). */
function startDirect(engineFolder: string, maxThreads: number) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--no-config",
      "--node-modules-dir=manual",
      new URL("./baselines/inference_engine.ts", import.meta.url).pathname,
      `${engineFolder}/node_modules/node-llama-cpp/dist/index.js`,
      String(maxThreads),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  const command = async (value: unknown) => {
    await writer.write(new TextEncoder().encode(JSON.stringify(value) + "\n"));
    while (!buffered.includes("\n")) {
      const { value: text, done } = await reader.read();
      if (done) throw new Error("the direct node-llama-cpp process ended");
      buffered += text;
    }
    const end = buffered.indexOf("\n");
    const answer = JSON.parse(buffered.slice(0, end));
    buffered = buffered.slice(end + 1);
    if (answer.error) throw new Error(`direct node-llama-cpp: ${answer.error}`);
    return answer;
  };
  return {
    /** Loads a model; without `threads`, with node-llama-cpp's default. Resolves to the threads. */
    load: async (path: string, contextSize: number, threads?: number): Promise<number> =>
      (await command({ op: "load", path, contextSize, threads })).threads,
    chat: (prompt: string, maxTokens = MAX_TOKENS): Promise<DirectRun> =>
      command({ op: "chat", prompt, maxTokens }),
    pid: child.pid,
    async [Symbol.asyncDispose]() {
      await writer.close().catch(() => {});
      await child.status;
      await reader.cancel().catch(() => {});
    },
  };
}

/** One streamed completion through the node, timed by the client. */
export interface NodeRun {
  /** Request start to the first chunk with content, ms. */
  ttftMs: number;
  /** First to last chunk with content, ms. */
  decodeMs: number;
  /** Request start to the stream's first chunk (the role, sent as the engine starts), ms. */
  startMs: number;
  chunks: number;
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    prompt_tokens_details: { cached_tokens: number };
    ttft_ms: number;
    decode_token_per_second: number;
  };
}

export async function nodeChat(node: TestNode, model: string, prompt: string): Promise<NodeRun> {
  const started = performance.now();
  const response = await fetch(`${node.url}/v1/chat/completions`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify({
      model,
      messages: [{ role: "user", content: prompt }],
      stream: true,
      temperature: 0,
      max_tokens: MAX_TOKENS,
    }),
  });
  if (response.status !== 200) {
    throw new Error(`chat ${model}: ${response.status} ${await response.text()}`);
  }
  let first: number | undefined;
  let start: number | undefined;
  let last = started;
  let chunks = 0;
  let usage: NodeRun["usage"] | undefined;
  let buffered = "";
  for await (const text of response.body!.pipeThrough(new TextDecoderStream())) {
    const now = performance.now();
    buffered += text;
    let end;
    while ((end = buffered.indexOf("\n\n")) >= 0) {
      const message = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (!message.startsWith("data: ") || message === "data: [DONE]") continue;
      const chunk = JSON.parse(message.slice(6));
      start ??= now;
      if (chunk.error) throw new Error(`chat ${model}: ${chunk.error.message}`);
      if (chunk.choices?.[0]?.delta?.content) {
        first ??= now;
        last = now;
        chunks++;
      }
      if (chunk.usage) usage = chunk.usage;
    }
  }
  if (!usage || first === undefined) throw new Error(`chat ${model}: no content or no usage`);
  return {
    ttftMs: first - started,
    decodeMs: last - first,
    startMs: start! - started,
    chunks,
    usage,
  };
}

export async function addModel(node: TestNode, id: string, file: string, contextSize: number) {
  await createModel(node, id, { contextSize, gpuLayers: 0 });
  const uploaded = await fetch(`${node.storeUrl}/models/${id}/upload`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/octet-stream" }),
    body: await Deno.readFile(file),
  });
  if (!uploaded.ok) throw new Error(`upload ${id}: ${await uploaded.text()}`);
  await uploaded.body?.cancel();
}

/** The model's `info` as GET /v1/models/{id} shows it once loaded. */
async function loadedInfo(node: TestNode, id: string) {
  const response = await fetch(`${node.url}/v1/models/${id}`, { headers: node.auth() });
  const entry = await response.json();
  if (!entry.loaded) throw new Error(`${id} is not loaded: ${JSON.stringify(entry)}`);
  return entry.info as { threads: number; max_context: number };
}

/** CPU time of each thread of the processes so far, ns (schedstat: exact, not in ticks). */
async function threadCpu(pids: number[]): Promise<Map<string, number>> {
  // Reading /proc needs --allow-all in Deno; awk does not.
  const out = await run("sh", [
    "-c",
    `awk '{ print FILENAME, $1 }' ${pids.map((pid) => `/proc/${pid}/task/*/schedstat`).join(" ")}` +
    " 2>/dev/null || true",
  ]);
  return new Map(
    out.trim().split("\n").map((line) => {
      const [file, ns] = line.split(" ");
      return [file, Number(ns)];
    }),
  );
}

/**
 * Measures the CPU each of `pids` spends during `work`, in µs per generated token: the threads'
 * times after less before (a thread that ends meanwhile takes its share with it).
 */
async function cpuPerToken<T>(pids: number[], work: () => Promise<T>) {
  const before = await threadCpu(pids);
  const result = await work();
  const after = await threadCpu(pids);
  const perPid = pids.map((pid) => {
    let ns = 0;
    for (const [file, value] of after) {
      if (file.startsWith(`/proc/${pid}/`)) ns += value - (before.get(file) ?? 0);
    }
    return ns / MAX_TOKENS / 1000;
  });
  return { result, perPid };
}

/** The node's engine process: its child running engine_main (.ts, or .js as bundled). */
async function enginePid(nodePid: number): Promise<number> {
  // -ww: the whole command line, however long its permission flags.
  const out = await run("ps", ["-ww", "--ppid", String(nodePid), "-o", "pid=,args="]);
  const line = out.split("\n").find((line) => /engine_main\.(ts|js)\b/.test(line));
  if (!line) throw new Error("the node runs no engine process");
  return Number(line.trim().split(/\s+/)[0]);
}

/** The inference rows. */
export async function inferenceRows(): Promise<string[][]> {
  const began = performance.now();
  const engineFolder = await ensureTestEngine();
  const dir = await Deno.makeTempDir({ prefix: "edgenode-bench-inference-" });
  const rows: string[][] = [];
  try {
    await using node = await startTestNode({ dataDir: `${dir}/node` });
    await using direct = startDirect(engineFolder, navigator.hardwareConcurrency);
    let tinyFile = "";
    let tinyContext = 0;
    let tinyNodeRate = 0;
    for (const model of MODELS) {
      const file = `${dir}/${model.id}.gguf`;
      await Deno.writeFile(file, tinyLlamaGguf(model.options));
      const contextSize = model.options.contextLength ?? 512;
      if (model.id === "bench-tiny") [tinyFile, tinyContext] = [file, contextSize];
      await addModel(node, model.id, file, contextSize);
      // The first completion loads the model; it and the next are left out, on both sides.
      for (let i = 1; i <= WARMUPS; i++) await nodeChat(node, model.id, benchPrompt(-i));
      const info = await loadedInfo(node, model.id);
      await direct.load(file, info.max_context, info.threads);
      for (let i = 1; i <= WARMUPS; i++) await direct.chat(benchPrompt(-i));
      // CPU time per token: the node, its engine, this client; and the direct process.
      const pids = [node.pid, await enginePid(node.pid), Deno.pid];
      const cpu = { node: [] as number[], engine: [] as number[], client: [] as number[] };
      const directCpu: number[] = [];

      const directRuns: DirectRun[] = [];
      const nodeRuns: NodeRun[] = [];
      const timeDirect = async (i: number) => {
        const { result, perPid } = await cpuPerToken(
          [direct.pid],
          () => direct.chat(benchPrompt(i)),
        );
        directRuns.push(result);
        directCpu.push(perPid[0]);
      };
      for (let i = 0; i < model.rounds; i++) {
        // The order alternates, so that neither side always runs right after the other.
        if (i % 2 === 0) await timeDirect(i);
        const { result, perPid } = await cpuPerToken(
          pids,
          () => nodeChat(node, model.id, benchPrompt(i)),
        );
        nodeRuns.push(result);
        cpu.node.push(perPid[0]);
        cpu.engine.push(perPid[1]);
        cpu.client.push(perPid[2]);
        if (i % 2 === 1) await timeDirect(i);
      }
      for (const run of [...directRuns, ...nodeRuns.map((run) => run.usage)]) {
        const tokens = "completionTokens" in run ? run.completionTokens : run.completion_tokens;
        if (tokens !== MAX_TOKENS) throw new Error(`${model.id}: ${tokens} tokens, not 256`);
      }
      const d = {
        gen: median(directRuns.map((run) => rate(run.completionTokens, run.decodeMs))),
        ttft: median(directRuns.map((run) => run.ttftMs)),
        prompt: median(directRuns.map((run) => run.evaluatedTokens / run.ttftMs * 1000)),
        cpu: median(directCpu),
      };
      const n = {
        gen: median(nodeRuns.map((run) => rate(run.usage.completion_tokens, run.decodeMs))),
        ttft: median(nodeRuns.map((run) => run.ttftMs)),
        start: median(nodeRuns.map((run) => run.startMs)),
        serverGen: median(nodeRuns.map((run) => run.usage.decode_token_per_second)),
        serverTtft: median(nodeRuns.map((run) => run.usage.ttft_ms)),
        prompt: median(
          nodeRuns.map((run) =>
            (run.usage.prompt_tokens - run.usage.prompt_tokens_details.cached_tokens) /
            run.usage.ttft_ms * 1000
          ),
        ),
        chunks: median(nodeRuns.map((run) => run.chunks)),
        cpuNode: median(cpu.node),
        cpuEngine: median(cpu.engine),
        cpuClient: median(cpu.client),
      };
      const overhead = (1 - n.gen / d.gen) * 100;
      if (model.id === "bench-tiny") tinyNodeRate = n.gen;
      const promptTokens = nodeRuns[0].usage.prompt_tokens;
      const list = (values: number[]) => values.map((v) => Math.round(v)).join(" ");
      console.log(
        `inference ${model.id}: threads ${info.threads}, context ${info.max_context}, ` +
          `${promptTokens}-token prompts\n` +
          `  direct tokens/s ${list(directRuns.map((r) => rate(r.completionTokens, r.decodeMs)))}` +
          `; ttft ms ${list(directRuns.map((r) => r.ttftMs))}\n` +
          `  node   tokens/s ${
            list(nodeRuns.map((r) => rate(r.usage.completion_tokens, r.decodeMs)))
          }; ttft ms ${list(nodeRuns.map((r) => r.ttftMs))}\n` +
          `  usage  tokens/s ${list(nodeRuns.map((r) => r.usage.decode_token_per_second))}` +
          `; ttft ms ${list(nodeRuns.map((r) => r.usage.ttft_ms))}; chunks ${n.chunks}\n` +
          `  CPU µs/token: node ${list(cpu.node)}; engine ${list(cpu.engine)}; ` +
          `client ${list(cpu.client)}; direct ${list(directCpu)}`,
      );
      const what = `streamed chat completion (POST /v1/chat/completions), ${model.label}, ` +
        `${promptTokens}-token prompt, ${MAX_TOKENS} tokens, threads ${info.threads} (the ` +
        `node's choice), median of ${model.rounds}`;
      rows.push([
        `${what}: generation, by the client from its first to its last chunk`,
        `${int(n.gen)} tokens/s (usage.decode_token_per_second ${int(n.serverGen)})`,
        `node-llama-cpp called directly, same model, prompts and threads: ${int(d.gen)} ` +
        `tokens/s (overhead ${overhead.toFixed(1)}%, target < 5%); CPU per token: engine ` +
        `${int(n.cpuEngine)} µs, node ${int(n.cpuNode)} µs, client ${int(n.cpuClient)} µs, ` +
        `directly ${int(d.cpu)} µs`,
      ]);
      rows.push([
        `${model.name}, the same completions: time to the first token, from sending the ` +
        "request to the first content chunk",
        `${ms1(n.ttft)} ms (usage.ttft_ms ${ms1(n.serverTtft)}, prompt ${int(n.prompt)} ` +
        `tokens/s)`,
        `directly: ${ms1(d.ttft)} ms (prompt ${int(d.prompt)} tokens/s); the node's stream ` +
        `starts ${ms1(n.start)} ms after the request`,
      ]);
    }

    // Threads: llama.cpp's threads wait for each other at every layer.
    const byThreads: Record<number, number> = {};
    const directRate = async (runs: number) => {
      await direct.chat(benchPrompt(-1), 32);
      const rates: number[] = [];
      for (let i = 0; i < runs; i++) {
        const run = await direct.chat(benchPrompt(i));
        rates.push(rate(run.completionTokens, run.decodeMs));
      }
      return median(rates);
    };
    for (const threads of [1, 2]) {
      await direct.load(tinyFile, tinyContext, threads);
      byThreads[threads] = await directRate(THREAD_RUNS);
      if (threads === 1) {
        // The same with every thread of the process on one core: no handing the token over
        // between its JavaScript thread and llama.cpp's from one core to the other.
        const cores = navigator.hardwareConcurrency;
        await run("taskset", ["-a", "-pc", String(cores - 1), String(direct.pid)]);
        const pinned = await directRate(PINNED_RUNS);
        await run("taskset", ["-a", "-pc", `0-${cores - 1}`, String(direct.pid)]);
        rows.push([
          `the tiny model's generation, node-llama-cpp directly with threads 1, its process on ` +
          `one core (taskset -a; ${MAX_TOKENS} tokens, median of ${PINNED_RUNS})`,
          `${int(pinned)} tokens/s`,
          `not pinned, as the node's engine runs: ${int(byThreads[1])} tokens/s (median of ` +
          `${THREAD_RUNS}, same process); through the node above: ${int(tinyNodeRate)} tokens/s`,
        ]);
      }
    }
    // node-llama-cpp's default (getLlama and the context without threads): a few tokens only.
    await using defaults = startDirect(engineFolder, 0);
    const defaultThreads = await defaults.load(tinyFile, tinyContext);
    const slow = await defaults.chat(benchPrompt(0), DEFAULT_THREADS_TOKENS);
    const slowRate = rate(slow.completionTokens, slow.decodeMs);
    console.log(
      `inference threads: 1: ${int(byThreads[1])}, 2: ${int(byThreads[2])}, ` +
        `${defaultThreads} (default): ${slowRate.toFixed(1)} tokens/s`,
    );
    rows.push([
      `the tiny model's generation by threads (node-llama-cpp directly; ${MAX_TOKENS} tokens, ` +
      `median of ${THREAD_RUNS}; the default: ${DEFAULT_THREADS_TOKENS} tokens, once)`,
      `threads 1: ${int(byThreads[1])} tokens/s`,
      `threads 2: ${int(byThreads[2])} tokens/s (${(byThreads[1] / byThreads[2]).toFixed(1)}× ` +
      `slower on ${navigator.hardwareConcurrency} cores); node-llama-cpp's default ` +
      `(${defaultThreads} threads here): ${slowRate.toFixed(1)} tokens/s`,
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  console.log(`inference: ${((performance.now() - began) / 1000).toFixed(0)} s`);
  return rows;
}

if (import.meta.main) {
  for (const row of await inferenceRows()) console.log(row.join("\n  "));
}
