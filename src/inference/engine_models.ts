/**
 * The engine process's loaded models: a model and its context (chat: one sequence, or two when
 * the key holder has one reserved) or embedding context, loaded after an estimate from the
 * file's header says it fits.
 *
 * Runs in the engine process only (src/inference/engine_main.ts): relative imports, no import map.
 *
 * @module
 */
import { Invalid, NoMemory } from "../errors/mod.ts";
import type { EngineModelKind, LoadedModelInfo, LoadSpec } from "./engine_protocol.ts";
import { hyperparameterProblem, tensorProblem } from "../store/gguf_limits.ts";
import type { Backend } from "./engine_backend.ts";
import { gpuLayersFor } from "./gpu_layers.ts";

/**
 * node-llama-cpp's module, loaded at run time from the engine's install folder, so typed
 * loosely here.
 */
// deno-lint-ignore no-explicit-any
export type Nlc = any;

/** A model the engine holds. */
export interface LoadedModel {
  spec: LoadSpec;
  kind: EngineModelKind;
  // deno-lint-ignore no-explicit-any
  model: any;
  /** The chat context (llm, vlm), or the embedding context (embed). */
  // deno-lint-ignore no-explicit-any
  context: any;
  /** The chat context's sequences, by index: each runs one job at a time (none for embed). */
  // deno-lint-ignore no-explicit-any
  sequences: any[];
  // deno-lint-ignore no-explicit-any
  chatWrapper?: any;
  info: LoadedModelInfo;
  /**
   * The job running on each sequence (index 0 for embeddings): the node queues; this guards,
   * and an unload waits for them.
   */
  jobs: (Promise<unknown> | undefined)[];
}

/** The context size used when the record sets none: enough for chat, small enough to fit. */
const DEFAULT_CONTEXT = 4096;

/** The registry's chatTemplateHint values that node-llama-cpp has a chat wrapper for. */
const WRAPPER_OF_HINT: Record<string, string> = {
  "chatml": "chatML",
  "llama2": "llama2Chat",
  "llama2-sys": "llama2Chat",
  "llama2-sys-bos": "llama2Chat",
  "llama2-sys-strip": "llama2Chat",
  "llama3": "llama3",
  "mistral-v1": "mistral",
  "mistral-v3": "mistral",
  "mistral-v3-tekken": "mistral",
  "mistral-v7": "mistral",
  "gemma": "gemma",
  "deepseek": "deepSeek",
  "deepseek2": "deepSeek",
  "deepseek3": "deepSeek",
};

function mib(bytes: number): string {
  return `${Math.ceil(bytes / 2 ** 20)} MiB`;
}

/** The GPU layers a load asks for, resolved, and the memory it needs on each side. */
interface Estimate {
  /** Bytes of RAM (weights and context not on the GPU). */
  bytes: number;
  /** Bytes of VRAM (the layers offloaded and their share of the context). */
  vramBytes: number;
  /** Layers to offload, resolved against the model and free VRAM. */
  gpuLayers: number;
  gpuLayersReason: string;
  trainContext?: number;
  // deno-lint-ignore no-explicit-any
  fileInfo: any;
}

/**
 * The model's and a context of `contextSize`'s memory, in RAM and VRAM, from the header alone:
 * node-llama-cpp's own estimate, which follows llama.cpp's allocations. The layers asked for are
 * resolved first: none on the CPU, else clamped to the model's, or as many as fit ("auto");
 * node-llama-cpp refuses a number that does not fit its free VRAM.
 */
async function estimate(
  nlc: Nlc,
  llama: Nlc,
  spec: LoadSpec,
  contextSize: number,
  sequences: number,
  cpuReason: string,
): Promise<Estimate> {
  const fileInfo = await nlc.readGgufFileInfo(spec.path, { logWarnings: false });
  const insights = await nlc.GgufInsights.from(fileInfo, llama);
  const backend: Backend = llama.gpu || "cpu";
  const asked = gpuLayersFor(spec.gpuLayers, backend, insights.totalLayers, cpuReason);
  let gpuLayers = 0;
  if (backend !== "cpu" && asked.layers !== 0) {
    try {
      gpuLayers = (await insights.configurationResolver.resolveModelGpuLayersV2(asked.layers))
        .gpuLayers;
    } catch (error) {
      throw new NoMemory(
        `not enough free VRAM for ${asked.layers} layers on ${backend}: ` +
          `${(error as Error).message}; lower gguf.initGpuLayerSize or unload another model`,
      );
    }
  }
  const weights = await insights.estimateModelResourceRequirementsV2({ gpuLayers });
  const context = await insights.estimateContextResourceRequirementsV2({
    contextSize,
    modelGpuLayers: gpuLayers,
    // Each sequence has a KV cache of its own, `contextSize` tokens long.
    sequences,
    isEmbeddingContext: spec.kind === "embed",
  });
  let gpuLayersReason = asked.layers === "auto"
    ? `${asked.reason}: ${gpuLayers} of ${insights.totalLayers}`
    : asked.reason;
  // A Vulkan loader with only a software driver (llvmpipe), or a GPU the driver does not offer:
  // the backend loads but has no device memory, so every layer stays on the CPU.
  if (backend !== "cpu" && asked.layers !== 0 && gpuLayers === 0) {
    const vram = await llama.getVramState();
    if (vram.total === 0) {
      gpuLayersReason = `${backend} found no GPU (no device memory): every layer on the CPU`;
    }
  }
  return {
    bytes: weights.cpuRam + context.cpuRam,
    vramBytes: weights.gpuVram + context.gpuVram,
    gpuLayers,
    gpuLayersReason,
    trainContext: insights.trainContextSize,
    fileInfo,
  };
}

/**
 * What would make llama.cpp abort on the file or reserve memory for data it does not hold
 * (store/gguf_limits.ts), checked on node-llama-cpp's reading of the header; undefined when none.
 */
// deno-lint-ignore no-explicit-any
async function fileProblem(path: string, fileInfo: any): Promise<string | undefined> {
  const metadata = fileInfo.metadata ?? {};
  const architecture: string | undefined = metadata.general?.architecture;
  const tensors: Nlc[] = fileInfo.tensorInfo ?? [];
  const of = (key: string) => {
    // deno-lint-ignore no-explicit-any
    let value: any = architecture ? metadata[architecture] : undefined;
    for (const part of key.split(".")) value = value?.[part];
    return typeof value === "number" || typeof value === "bigint" ? Number(value) : undefined;
  };
  const tokens = metadata.tokenizer?.ggml?.tokens;
  const problem = hyperparameterProblem(
    architecture,
    of,
    tensors.length,
    Array.isArray(tokens) ? tokens.length : undefined,
  );
  if (problem) return problem;
  const size = BigInt((await Deno.stat(path)).size);
  for (const tensor of tensors) {
    if ((tensor.filePart ?? 1) !== 1) continue;
    const found = tensorProblem({
      name: String(tensor.name),
      dimensions: tensor.dimensions.map(BigInt),
      type: Number(tensor.ggmlType),
      fileOffset: BigInt(tensor.fileOffset),
    }, size);
    if (found) return found;
  }
  return undefined;
}

/**
 * Loads `spec`; `progress` gets 0..1 while the weights load. `cpuReason` says why the engine runs
 * on the CPU (GET /models `info` shows it beside `n_gpu_layers` 0).
 */
export async function loadModel(
  nlc: Nlc,
  llama: Nlc,
  spec: LoadSpec,
  progress: (value: number) => void,
  cpuReason = "",
): Promise<LoadedModel> {
  const sequences = spec.kind === "embed" ? 1 : Math.max(1, spec.sequences ?? 1);
  let needs: Estimate;
  try {
    needs = await estimate(
      nlc,
      llama,
      spec,
      spec.contextSize || DEFAULT_CONTEXT,
      sequences,
      cpuReason,
    );
  } catch (error) {
    if (error instanceof NoMemory) throw error;
    throw new Invalid(
      `the model file cannot be read as GGUF: ${(error as Error).message}`,
    );
  }
  const contextSize = Math.min(
    spec.contextSize || DEFAULT_CONTEXT,
    spec.contextSize ? Infinity : (needs.trainContext || DEFAULT_CONTEXT),
  );
  if (needs.bytes > spec.memoryBudget) {
    throw new NoMemory(
      `not enough memory to load the model: it needs about ${mib(needs.bytes)} with a ` +
        `${contextSize}-token context${
          sequences > 1 ? ` for each of ${sequences} sequences` : ""
        }` +
        `, and ${mib(spec.memoryBudget)} is available; unload another model (PUT /models ` +
        `{"id","action":"unload"}), lower gguf.initContextSize, ` +
        `${sequences > 1 ? "set inference.reservedSequence false, " : ""}or raise ` +
        `inference.memoryLimitMb`,
    );
  }
  const problem = await fileProblem(spec.path, needs.fileInfo);
  if (problem) throw new Invalid(`the model file cannot be loaded: ${problem}`);
  const model = await llama.loadModel({
    modelPath: spec.path,
    gpuLayers: needs.gpuLayers,
    onLoadProgress: progress,
  });
  try {
    const common = { contextSize, threads: spec.threads };
    const context = spec.kind === "embed"
      ? await model.createEmbeddingContext(common)
      : await model.createContext({ ...common, sequences });
    const chatWrapper = spec.kind === "embed" ? undefined : resolveWrapper(nlc, model, spec);
    const insights = model.fileInsights;
    return {
      spec,
      kind: spec.kind,
      model,
      context,
      sequences: spec.kind === "embed"
        ? []
        : Array.from({ length: sequences }, () => context.getSequence()),
      jobs: [],
      chatWrapper,
      info: {
        nVocab: model.tokens?.vocabularySize ?? model.fileInfo?.metadata?.tokenizer?.ggml?.tokens
          ?.length ??
          0,
        nCtxTrain: model.trainContextSize,
        nEmbd: model.embeddingVectorSize,
        nParams: insights.totalParameters,
        modelSize: model.size,
        contextSize,
        chatTemplate: chatWrapper?.wrapperName ?? "none",
        threads: spec.threads,
        estimatedBytes: needs.bytes,
        sequences,
        backend: llama.gpu || "cpu",
        gpuLayers: model.gpuLayers ?? needs.gpuLayers,
        gpuLayersReason: needs.gpuLayersReason,
        estimatedVramBytes: needs.vramBytes,
      },
    };
  } catch (error) {
    await model.dispose();
    throw error;
  }
}

/** The chat format: the hint's wrapper when there is one, else what the file's template gives. */
function resolveWrapper(nlc: Nlc, model: Nlc, spec: LoadSpec): Nlc {
  const type = spec.chatTemplateHint ? WRAPPER_OF_HINT[spec.chatTemplateHint] : undefined;
  if (spec.chatTemplateHint && !type) {
    console.error(
      `chatTemplateHint '${spec.chatTemplateHint}' has no chat format in the engine; ` +
        "using the template in the model file",
    );
  }
  return nlc.resolveChatWrapper(model, type ? { type } : {});
}

/** Frees a model and its context. */
export async function unloadModel(loaded: LoadedModel): Promise<void> {
  await loaded.context.dispose();
  await loaded.model.dispose();
}
