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

/**
 * Bytes the model and a context of `contextSize` need in RAM (no GPU layers), from the header
 * alone: node-llama-cpp's own estimate, which follows llama.cpp's allocations.
 */
async function estimateBytes(
  nlc: Nlc,
  llama: Nlc,
  spec: LoadSpec,
  contextSize: number,
  sequences: number,
  // deno-lint-ignore no-explicit-any
): Promise<{ bytes: number; trainContext?: number; fileInfo: any }> {
  const fileInfo = await nlc.readGgufFileInfo(spec.path, { logWarnings: false });
  const insights = await nlc.GgufInsights.from(fileInfo, llama);
  const weights = await insights.estimateModelResourceRequirementsV2({ gpuLayers: 0 });
  const context = await insights.estimateContextResourceRequirementsV2({
    contextSize,
    modelGpuLayers: 0,
    // Each sequence has a KV cache of its own, `contextSize` tokens long.
    sequences,
    isEmbeddingContext: spec.kind === "embed",
  });
  return {
    bytes: weights.cpuRam + context.cpuRam,
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

/** Loads `spec`; `progress` gets 0..1 while the weights load. */
export async function loadModel(
  nlc: Nlc,
  llama: Nlc,
  spec: LoadSpec,
  progress: (value: number) => void,
): Promise<LoadedModel> {
  const sequences = spec.kind === "embed" ? 1 : Math.max(1, spec.sequences ?? 1);
  let estimate;
  try {
    estimate = await estimateBytes(
      nlc,
      llama,
      spec,
      spec.contextSize || DEFAULT_CONTEXT,
      sequences,
    );
  } catch (error) {
    throw new Invalid(
      `the model file cannot be read as GGUF: ${(error as Error).message}`,
    );
  }
  const contextSize = Math.min(
    spec.contextSize || DEFAULT_CONTEXT,
    spec.contextSize ? Infinity : (estimate.trainContext || DEFAULT_CONTEXT),
  );
  if (estimate.bytes > spec.memoryBudget) {
    throw new NoMemory(
      `not enough memory to load the model: it needs about ${mib(estimate.bytes)} with a ` +
        `${contextSize}-token context${
          sequences > 1 ? ` for each of ${sequences} sequences` : ""
        }` +
        `, and ${mib(spec.memoryBudget)} is available; unload another model (PUT /models ` +
        `{"id","action":"unload"}), lower gguf.initContextSize, ` +
        `${sequences > 1 ? "set inference.reservedSequence false, " : ""}or raise ` +
        `inference.memoryLimitMb`,
    );
  }
  const problem = await fileProblem(spec.path, estimate.fileInfo);
  if (problem) throw new Invalid(`the model file cannot be loaded: ${problem}`);
  const model = await llama.loadModel({
    modelPath: spec.path,
    gpuLayers: spec.gpuLayers ?? 0,
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
        estimatedBytes: estimate.bytes,
        sequences,
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
