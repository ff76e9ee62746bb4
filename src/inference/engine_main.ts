/**
 * The inference engine process: node-llama-cpp (llama.cpp) behind a line protocol on stdin and
 * stdout (src/inference/engine_protocol.ts). It is the only part of edgenode with FFI, started by
 * the node (src/inference/engine_process.ts) with permissions for its install folder and the
 * model files alone, so a crash or an out-of-memory kill here never takes the node down.
 *
 * `deno run --no-config --node-modules-dir=manual ... engine_main.ts <install dir> <max threads>
 * <backend> <why>`: the backend the node chose (engine_backend.ts: "cuda", "vulkan", "metal" or
 * "cpu", whose package the install folder holds) and why, shown with each model's GPU layers.
 *
 * It imports nothing through an import map: only relative modules, and node-llama-cpp from the
 * install folder by its file URL.
 *
 * @module
 */
import { DomainError, Invalid, NotFound } from "../errors/mod.ts";
import { runChat } from "./engine_chat.ts";
import { type Backend, backendPackage } from "./engine_backend.ts";
import { type LoadedModel, loadModel, type Nlc, unloadModel } from "./engine_models.ts";
import {
  type EngineEvent,
  type EngineRequest,
  EVENT_PREFIX,
  type LoadSpec,
} from "./engine_protocol.ts";

const encoder = new TextEncoder();
const stdout = Deno.stdout.writable.getWriter();
/** Events go out in order; a write waits for the one before. */
let writing: Promise<void> = Promise.resolve();

function emit(event: EngineEvent): void {
  const line = encoder.encode(EVENT_PREFIX + JSON.stringify(event) + "\n");
  writing = writing.then(() => stdout.write(line)).catch(() => Deno.exit(0));
}

/**
 * How long generated text may wait to be sent with what follows. A line per token cost a tiny
 * model 17% of its speed (the encoding and the write, then the node's parsing, per token); a
 * real model makes a token every 20 ms or more, so its text still goes out token by token.
 */
const TEXT_FLUSH_MS = 4;

/** A request's generated text: the first piece at once, then at most every TEXT_FLUSH_MS. */
function textSender(id: number): { add(text: string): void; flush(): void } {
  let pending = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (pending) emit({ id, type: "text", text: pending });
    pending = "";
  };
  let first = true;
  return {
    add(text) {
      pending += text;
      // The first text goes at once: the time to the first token is what a user waits for.
      if (first && pending) {
        first = false;
        return flush();
      }
      timer ??= setTimeout(flush, TEXT_FLUSH_MS);
    },
    flush,
  };
}

const [installDir, maxThreads, backendArg = "cpu", backendReason = ""] = Deno.args;
const nlc: Nlc = await import(
  new URL(`file://${installDir}/node_modules/node-llama-cpp/dist/index.js`).href
);

/**
 * node-llama-cpp with the backend named, and only that one: a GPU build that does not load is
 * said to the node (which answers with it), never replaced by the CPU.
 */
async function startLlama(): Promise<Nlc> {
  const options = {
    skipDownload: true,
    maxThreads: Number(maxThreads) || undefined,
    logLevel: "warn",
    logger: (level: string, message: string) => console.error(`[llama.cpp ${level}] ${message}`),
  };
  try {
    // A source build (engine_source_build.ts) is the folder's last build; never a prebuilt.
    const llama = await sourceBuilt()
      ? await nlc.getLlama("lastBuild", { ...options, usePrebuiltBinaries: false })
      : await nlc.getLlama({
        ...options,
        gpu: backendArg === "cpu" ? false : backendArg,
        build: "never",
      });
    if ((llama.gpu || "cpu") !== backendArg) {
      throw new Error(`it runs on ${llama.gpu || "the CPU"}, not ${backendArg}`);
    }
    return llama;
  } catch (error) {
    console.error("getLlama failed:", error);
    const hint = backendArg === "vulkan"
      ? " (NVIDIA's Vulkan driver also needs libglvnd: libGLX_nvidia.so.0 loads libGLdispatch)"
      : "";
    emit({
      id: 0,
      type: "unusable",
      message: `the ${backendArg} build of llama.cpp (${
        await sourceBuilt()
          ? "built from source"
          : backendPackage(backendArg as Backend) ?? "no package for this machine"
      }) did not load: ${(error as Error)?.message ?? error}${hint}`,
    });
    await writing;
    Deno.exit(1);
  }
}

/** Whether the install folder holds a source build (llama/lastBuild.json names it). */
async function sourceBuilt(): Promise<boolean> {
  return await Deno.stat(`${installDir}/node_modules/node-llama-cpp/llama/lastBuild.json`)
    .then(() => true, () => false);
}

const llama: Nlc = await startLlama();

const models = new Map<string, LoadedModel>();
const loading = new Map<string, Promise<LoadedModel>>();
const running = new Map<number, AbortController>();

/** Sends a failure: a domain error with its kind and details, anything else as the engine's. */
function fail(id: number, error: unknown): void {
  if (error instanceof DomainError) {
    const { kind, message, details } = error;
    emit({ id, type: "error", kind, message, details });
    return;
  }
  const message = (error as Error)?.message ?? String(error);
  console.error(`request ${id} failed:`, error);
  emit({ id, type: "error", message });
}

async function load(id: number, spec: LoadSpec): Promise<void> {
  const held = models.get(spec.key);
  if (held) return emit({ id, type: "loaded", info: held.info });
  let pending = loading.get(spec.key);
  if (!pending) {
    pending = loadModel(
      nlc,
      llama,
      spec,
      (progress) => emit({ id, type: "progress", progress }),
      backendReason,
    );
    loading.set(spec.key, pending);
    pending.finally(() => loading.delete(spec.key)).catch(() => {});
  }
  const loaded = await pending;
  models.set(spec.key, loaded);
  emit({ id, type: "loaded", info: loaded.info });
}

/** The model `key` with sequence `index` free (index 0 for embeddings). */
function held(key: string, index = 0): LoadedModel {
  const loaded = models.get(key);
  if (!loaded) throw new NotFound("the model is not loaded");
  const sequences = Math.max(1, loaded.sequences.length);
  if (!Number.isInteger(index) || index < 0 || index >= sequences) {
    throw new Invalid(`the model has no sequence ${index}`);
  }
  if (loaded.jobs[index]) throw new Invalid("the model is busy with another request");
  return loaded;
}

/**
 * Runs `work` as the one job of sequence `index`: an unload waits for every sequence's job
 * (freeing a context in use crashes).
 */
async function occupy<T>(loaded: LoadedModel, index: number, work: () => Promise<T>): Promise<T> {
  const job = work();
  loaded.jobs[index] = job;
  try {
    return await job;
  } finally {
    loaded.jobs[index] = undefined;
  }
}

async function handle(request: EngineRequest): Promise<void> {
  const { id } = request;
  switch (request.op) {
    case "load":
      return await load(id, request.spec);
    case "unload": {
      const loaded = models.get(request.key);
      models.delete(request.key);
      if (loaded) {
        await Promise.allSettled(loaded.jobs);
        await unloadModel(loaded);
      }
      return emit({ id, type: "unloaded" });
    }
    case "chat": {
      const index = request.sequence ?? 0;
      const loaded = held(request.key, index);
      const abort = new AbortController();
      running.set(id, abort);
      const text = textSender(id);
      try {
        const result = await occupy(loaded, index, () =>
          runChat(
            llama,
            nlc,
            loaded,
            index,
            request.job,
            text.add,
            abort.signal,
          ));
        text.flush();
        return emit({ id, type: "chat-done", result });
      } finally {
        text.flush();
        running.delete(id);
      }
    }
    case "embed": {
      const loaded = held(request.key);
      const result = await occupy(loaded, 0, async () => {
        const vectors: number[][] = [];
        let promptTokens = 0;
        for (const text of request.input) {
          promptTokens += loaded.model.tokenize(text).length;
          const embedding = await loaded.context.getEmbeddingFor(text);
          vectors.push([...embedding.vector]);
        }
        return { vectors, promptTokens };
      });
      return emit({ id, type: "embed-done", result });
    }
    case "cancel":
      running.get(request.target)?.abort();
      return;
  }
}

const onGpu = Boolean(llama.gpu);
const vram = onGpu ? await llama.getVramState() : { total: 0, free: 0 };
emit({
  id: 0,
  type: "ready",
  buildType: llama.buildType,
  cpuMathCores: llama.cpuMathCores,
  backend: llama.gpu || "cpu",
  devices: onGpu ? await llama.getGpuDeviceNames() : [],
  vramTotal: vram.total,
  vramFree: vram.free,
});

let buffered = "";
for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
  buffered += chunk;
  let end;
  while ((end = buffered.indexOf("\n")) >= 0) {
    const line = buffered.slice(0, end);
    buffered = buffered.slice(end + 1);
    if (!line) continue;
    const request = JSON.parse(line) as EngineRequest;
    handle(request).catch((error) => fail(request.id, error));
  }
}
// The node closed our stdin: it is gone or wants us gone.
Deno.exit(0);
