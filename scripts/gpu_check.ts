/**
 * `deno task gpu-check [--gpu SETTING] [--size small|1b|3b | model.gguf]`: what the inference
 * engine computes on here, and how fast.
 *
 * It starts the engine as a node does with inference.gpu SETTING (default "auto": engine_backend.ts
 * chooses, installing only that backend's package), loads the model with every layer asked for the
 * GPU, and prints the backend and why, the device and its VRAM, the layers offloaded and tokens/s.
 * On a GPU it starts the engine a second time (the driver's compiled shaders now cached under the
 * engine folder, so the second load should be faster), then loads the model with no layer
 * offloaded for the comparison with the CPU (the same build: an air-gapped machine needs no second
 * engine). The model: the file named; or one of testing/sized_llama.ts's shapes, written once
 * under the work folder (`--size 1b`: 2.3 GB, big enough for a GPU's speed to show); else the tiny
 * test model, which says whether the GPU is used but not by how much.
 *
 * The engine folder is EDGENODE_ENGINE_DIR, else `<temp>/edgenode-gpu-check/engine`; the work
 * folder GPU_CHECK_DIR, else `<temp>/edgenode-gpu-check`. GPU_CHECK_TOKENS sets the tokens generated
 * (default 128). scripts/gpu_check_folder.ts prepares a folder that runs this on an air-gapped
 * machine.
 *
 * @module
 */
import { join } from "node:path";
import { tmpdir } from "node:os";
import { parseArgs } from "node:util";
import { EngineProcess, type EngineStatus } from "../src/inference/engine_process.ts";
import type { GpuSetting } from "../src/inference/engine_backend.ts";
import type { ChatResult, LoadedModelInfo } from "../src/inference/engine_protocol.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";
import { SIZED_LLAMAS, sizedLlamaParameters, writeSizedLlamaGguf } from "../testing/sized_llama.ts";

const { values: flags, positionals } = parseArgs({
  args: Deno.args,
  options: { gpu: { type: "string", default: "auto" }, size: { type: "string" } },
  allowPositionals: true,
});
const work = Deno.env.get("GPU_CHECK_DIR") || join(tmpdir(), "edgenode-gpu-check");
const engineDir = Deno.env.get("EDGENODE_ENGINE_DIR") || join(work, "engine");
const tokens = Number(Deno.env.get("GPU_CHECK_TOKENS")) || 128;
const threads = navigator.hardwareConcurrency;
const setting: GpuSetting = flags.gpu === "false" ? false : flags.gpu as GpuSetting;
if (!["auto", "cuda", "vulkan", "metal", false].includes(setting)) {
  throw new Error(`--gpu ${flags.gpu}: use auto, cuda, vulkan, metal or false`);
}

/** The model measured: the one named, a sized one written once, or the tiny test model. */
async function modelPath(): Promise<string> {
  if (positionals[0]) return await Deno.realPath(positionals[0]);
  await Deno.mkdir(join(work, "models"), { recursive: true });
  if (flags.size) {
    const shape = SIZED_LLAMAS[flags.size];
    if (!shape) {
      throw new Error(`--size ${flags.size}: use ${Object.keys(SIZED_LLAMAS).join(", ")}`);
    }
    const path = join(work, "models", `sized-${flags.size}.gguf`);
    if (!await Deno.stat(path).catch(() => undefined)) {
      const started = performance.now();
      const bytes = await writeSizedLlamaGguf(path, shape);
      console.log(
        `wrote ${path}: ${parameters(sizedLlamaParameters(shape))}, ` +
          `${gib(bytes)}, in ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
    }
    return path;
  }
  const path = join(work, "models", "tiny.gguf");
  await Deno.writeFile(path, tinyLlamaGguf({ contextLength: 2048 }));
  return path;
}

interface Run {
  status: EngineStatus;
  info: LoadedModelInfo;
  result: ChatResult;
  loadMs: number;
}

/** Loads the model on an engine of `gpu` with `gpuLayers` and generates `tokens` tokens. */
async function run(path: string, gpu: GpuSetting, gpuLayers = 99): Promise<Run> {
  const engine = new EngineProcess({
    engineDir,
    modelsDir: join(path, ".."),
    scriptsDir: join(work, "scripts"),
    maxThreads: threads,
    gpu,
    onExit: () => {},
  });
  try {
    const started = performance.now();
    const loaded = await engine.call({
      op: "load",
      spec: {
        key: `check-${gpu}`,
        path,
        kind: "llm",
        contextSize: 2048,
        gpuLayers,
        threads,
        memoryBudget: Number.MAX_SAFE_INTEGER,
      },
    });
    if (loaded.type !== "loaded") throw new Error(`unexpected engine answer ${loaded.type}`);
    const loadMs = performance.now() - started;
    const done = await engine.call({
      op: "chat",
      key: `check-${gpu}`,
      job: {
        messages: [{ role: "user", content: "Write a long story about a lighthouse keeper." }],
        maxTokens: tokens,
        temperature: 0,
        stop: [],
        tools: [],
        toolChoice: "auto",
      },
    });
    if (done.type !== "chat-done") throw new Error(`unexpected engine answer ${done.type}`);
    return { status: engine.status, info: loaded.info, result: done.result, loadMs };
  } finally {
    await engine.stop();
  }
}

function speed({ result }: Run): number {
  return result.completionTokens / Math.max(result.decodeMs / 1000, 1e-6);
}

function line(name: string, measured: Run): string {
  const { result, loadMs } = measured;
  return `${name}: ${speed(measured).toFixed(1)} tokens/s (${result.completionTokens} tokens, ` +
    `engine start and load ${loadMs.toFixed(0)} ms, first token after ` +
    `${result.ttftMs.toFixed(0)} ms)`;
}

function gib(bytes = 0): string {
  return bytes < 2 ** 30
    ? `${(bytes / 2 ** 20).toFixed(1)} MiB`
    : `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

function parameters(count: number): string {
  return count < 1e9
    ? `${(count / 1e6).toFixed(1)} M parameters`
    : `${(count / 1e9).toFixed(2)} B parameters`;
}

/** The files and bytes under `folder` (the driver's shader cache). */
async function folderSize(folder: string): Promise<[number, number]> {
  let files = 0, bytes = 0;
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (entry.isFile) (files++, bytes += (await Deno.stat(path)).size);
    }
  };
  await walk(folder).catch(() => {});
  return [files, bytes];
}

const path = await modelPath();
if (setting !== "auto") {
  const auto = await new EngineProcess({
    engineDir,
    modelsDir: work,
    scriptsDir: join(work, "scripts"),
    maxThreads: threads,
    gpu: "auto",
    onExit: () => {},
  }).detect().then((d) => `${d.backend} (${d.reason})`, (error) => (error as Error).message);
  console.log(`"auto" would choose: ${auto}`);
}
const first = await run(path, setting);
const { status, info } = first;
console.log(`backend: ${status.backend} (${status.reason})`);
console.log(
  status.devices?.length
    ? `device: ${status.devices.join(", ")}; VRAM ${gib(status.vramTotal)}, ` +
      `${gib(status.vramFree)} free`
    : "device: none (the CPU)",
);
console.log(`layers offloaded: ${info.gpuLayers} (${info.gpuLayersReason})`);
console.log(
  `model: ${path}, ${parameters(info.nParams)}, ${gib(info.modelSize)}; ` +
    `${info.threads} threads`,
);
console.log(line(`${status.backend} (first start)`, first));
if (status.backend !== "cpu") {
  const [files, bytes] = await folderSize(join(engineDir, "cache"));
  console.log(
    `driver cache: ${files} files, ${(bytes / 2 ** 20).toFixed(1)} MiB in ${engineDir}/cache`,
  );
  const again = await run(path, setting);
  console.log(line(`${status.backend} (second start)`, again));
  // The same build with no layer offloaded: no second engine package to install or carry.
  const cpu = await run(path, setting, 0);
  console.log(line(`cpu (the ${status.backend} build, 0 layers)`, cpu));
  console.log(`${status.backend} against the CPU: ${(speed(again) / speed(cpu)).toFixed(1)}x`);
}
