/**
 * `deno task gpu-check [model.gguf]`: what the inference engine computes on here, and how fast.
 * It starts the engine as a node does, with inference.gpu "auto" (engine_backend.ts chooses,
 * installing only that backend's package), loads the model with every layer asked for the GPU,
 * and prints the backend, why, the device and its VRAM, the layers offloaded and tokens/s; on a
 * GPU it runs the CPU engine on the same model in the same run for the comparison. Without a
 * model it uses the tiny test model (testing/tiny_llama.ts): the backend and the layers say
 * whether the GPU is used; tokens/s of a real model say by how much.
 *
 * The engine folder is EDGENODE_ENGINE_DIR, else `<temp>/edgenode-gpu-check/engine`: a folder
 * prepared on a connected machine (`deno task gpu-check` once there) can be carried to an
 * air-gapped one with the checkout. GPU_CHECK_TOKENS sets the tokens generated (default 128).
 *
 * @module
 */
import { join } from "node:path";
import { tmpdir } from "node:os";
import { EngineProcess, type EngineStatus } from "../src/inference/engine_process.ts";
import type { GpuSetting } from "../src/inference/engine_backend.ts";
import type { ChatResult, LoadedModelInfo } from "../src/inference/engine_protocol.ts";
import { tinyLlamaGguf } from "../testing/tiny_llama.ts";

const work = join(tmpdir(), "edgenode-gpu-check");
const engineDir = Deno.env.get("EDGENODE_ENGINE_DIR") || join(work, "engine");
const tokens = Number(Deno.env.get("GPU_CHECK_TOKENS")) || 128;
const threads = navigator.hardwareConcurrency;

/** The model measured: the one named, or the tiny test model written out. */
async function modelPath(): Promise<string> {
  if (Deno.args[0]) return await Deno.realPath(Deno.args[0]);
  await Deno.mkdir(join(work, "models"), { recursive: true });
  const path = join(work, "models", "tiny.gguf");
  await Deno.writeFile(path, tinyLlamaGguf({ contextLength: 2048 }));
  return path;
}

interface Run {
  status: EngineStatus;
  info: LoadedModelInfo;
  result: ChatResult;
}

/** Loads the model on an engine with `gpu` and generates `tokens` tokens. */
async function run(path: string, gpu: GpuSetting): Promise<Run> {
  const engine = new EngineProcess({
    engineDir,
    modelsDir: join(path, ".."),
    scriptsDir: join(work, "scripts"),
    maxThreads: threads,
    gpu,
    onExit: () => {},
  });
  try {
    const loaded = await engine.call({
      op: "load",
      spec: {
        key: `check-${gpu}`,
        path,
        kind: "llm",
        contextSize: 2048,
        gpuLayers: 99,
        threads,
        memoryBudget: Number.MAX_SAFE_INTEGER,
      },
    });
    if (loaded.type !== "loaded") throw new Error(`unexpected engine answer ${loaded.type}`);
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
    return { status: engine.status, info: loaded.info, result: done.result };
  } finally {
    await engine.stop();
  }
}

function speed({ result }: Run): number {
  return result.completionTokens / Math.max(result.decodeMs / 1000, 1e-6);
}

function line(name: string, measured: Run): string {
  const { result } = measured;
  return `${name}: ${speed(measured).toFixed(1)} tokens/s (${result.completionTokens} tokens, ` +
    `first token after ${result.ttftMs.toFixed(0)} ms)`;
}

const gib = (bytes = 0) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

const path = await modelPath();
const auto = await run(path, "auto");
const { status, info } = auto;
console.log(`backend: ${status.backend} (${status.reason})`);
console.log(
  status.devices?.length
    ? `device: ${status.devices.join(", ")}; VRAM ${gib(status.vramTotal)}, ` +
      `${gib(status.vramFree)} free`
    : "device: none (the CPU)",
);
console.log(`layers offloaded: ${info.gpuLayers} (${info.gpuLayersReason})`);
console.log(`model: ${path}, ${info.threads} threads`);
console.log(line(status.backend ?? "auto", auto));
if (status.backend !== "cpu") {
  const cpu = await run(path, false);
  console.log(line("cpu", cpu));
  console.log(`${status.backend} against the CPU: ${(speed(auto) / speed(cpu)).toFixed(1)}x`);
}
