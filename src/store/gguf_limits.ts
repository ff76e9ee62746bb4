/**
 * The checks that keep a crafted GGUF file from taking llama.cpp down. llama.cpp divides by some
 * hyperparameters and sizes arrays from others, and aborts the whole process (SIGFPE, or a
 * GGML_ASSERT) on values no converter writes: `attention.head_count` 0, `block_count` over its
 * 512 layers, more experts used than there are. Tensors whose data runs past the file's end
 * are refused by llama.cpp itself, but only after the memory for them was reserved.
 *
 * The store checks the hyperparameters when an uploaded or downloaded file completes, so such a
 * file is never ready (src/store/gguf_metadata.ts); the engine checks them again, with the
 * tensors' bounds, just before it loads a file (src/inference/engine_models.ts).
 *
 * No imports: the engine process bundles this module.
 *
 * @module
 */

/** llama.cpp's LLAMA_MAX_LAYERS. */
const MAX_LAYERS = 512;
/** llama.cpp's LLAMA_MAX_EXPERTS. */
const MAX_EXPERTS = 512;
/** Far above any real model's embedding, head count or feed-forward size. */
const MAX_WIDTH = 1 << 20;
const MAX_HEADS = 1 << 14;
/** Architectures without attention heads (state-space and RWKV models). */
const ATTENTION_FREE = new Set(["mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"]);

/** A number the header holds under `<architecture>.<key>` (undefined: absent or an array). */
export type HyperparameterOf = (key: string) => number | undefined;

/**
 * What is wrong with a file's hyperparameters for llama.cpp, or undefined. `tensorCount` is the
 * file's; `vocabulary` the length of `tokenizer.ggml.tokens` when known.
 */
export function hyperparameterProblem(
  architecture: string | undefined,
  of: HyperparameterOf,
  tensorCount: number,
  vocabulary?: number,
): string | undefined {
  if (!architecture) return undefined;
  const named = (key: string) => `${architecture}.${key}`;
  const outside = (key: string, low: number, high: number): string | undefined => {
    const value = of(key);
    if (value === undefined) return undefined;
    if (!Number.isInteger(value) || value < low || value > high) {
      return `${named(key)} is ${value}; it must be a whole number from ${low} to ${high}`;
    }
  };
  const attention = !ATTENTION_FREE.has(architecture);
  const problem = outside("block_count", 1, Math.min(MAX_LAYERS, Math.max(tensorCount, 1))) ??
    outside("embedding_length", 1, MAX_WIDTH) ??
    outside("context_length", 1, 2 ** 31 - 1) ??
    // A dense model's feed-forward tensors are sized from it: 0 fails a GGML_ASSERT (measured:
    // SIGABRT on load). Mixture-of-experts models may leave it 0 for their experts' own size.
    outside("feed_forward_length", attention && !of("expert_count") ? 1 : 0, MAX_WIDTH * 4) ??
    outside("attention.head_count", attention ? 1 : 0, MAX_HEADS) ??
    outside("attention.head_count_kv", attention ? 1 : 0, MAX_HEADS) ??
    outside("attention.key_length", 1, MAX_WIDTH) ??
    outside("attention.value_length", 1, MAX_WIDTH) ??
    outside("expert_count", 0, MAX_EXPERTS) ??
    outside("expert_used_count", 0, MAX_EXPERTS) ??
    outside("vocab_size", 1, 2 ** 31 - 1);
  if (problem) return problem;
  if (vocabulary !== undefined && vocabulary < 1) return "tokenizer.ggml.tokens is empty";
  const heads = of("attention.head_count");
  const kvHeads = of("attention.head_count_kv");
  if (heads && kvHeads && heads % kvHeads !== 0) {
    return `${named("attention.head_count")} (${heads}) is not a multiple of ` +
      `${named("attention.head_count_kv")} (${kvHeads})`;
  }
  const embedding = of("embedding_length");
  const keyLength = of("attention.key_length");
  if (heads && embedding && keyLength === undefined && embedding % heads !== 0) {
    return `${named("embedding_length")} (${embedding}) is not a multiple of ` +
      `${named("attention.head_count")} (${heads})`;
  }
  const headSize = keyLength ?? (heads && embedding ? embedding / heads : undefined);
  const rope = of("rope.dimension_count");
  if (rope !== undefined && headSize !== undefined && (rope < 0 || rope > headSize)) {
    return `${named("rope.dimension_count")} (${rope}) is larger than a head (${headSize})`;
  }
  const experts = of("expert_count") ?? 0;
  const used = of("expert_used_count") ?? 0;
  if (used > experts || (experts > 0 && used === 0)) {
    return `${named("expert_used_count")} (${used}) must be from 1 to ${
      named("expert_count")
    } (${experts})`;
  }
  return undefined;
}

/** Elements a tensor may have: products at or over 2^63 overflow llama.cpp's int64 sizes. */
const MAX_ELEMENTS = 2n ** 63n - 1n;

/** What is wrong with a tensor's dimensions, or undefined. */
export function dimensionProblem(name: string, dimensions: readonly bigint[]): string | undefined {
  let elements = 1n;
  for (const dimension of dimensions) {
    if (dimension < 0n) return `tensor '${name}' has a negative dimension`;
    elements *= dimension;
    if (elements > MAX_ELEMENTS) {
      return `tensor '${name}' has dimensions ${dimensions.join("×")}, whose product ` +
        "overflows a 64-bit size";
    }
  }
  return undefined;
}

/** ggml types' [elements per block, bytes per block] (ggml.c's type traits). */
const BLOCKS: Record<number, [number, number]> = {
  0: [1, 4],
  1: [1, 2],
  2: [32, 18],
  3: [32, 20],
  6: [32, 22],
  7: [32, 24],
  8: [32, 34],
  9: [32, 36],
  10: [256, 84],
  11: [256, 110],
  12: [256, 144],
  13: [256, 176],
  14: [256, 210],
  15: [256, 292],
  16: [256, 66],
  17: [256, 74],
  18: [256, 98],
  19: [256, 50],
  20: [32, 18],
  21: [256, 110],
  22: [256, 82],
  23: [256, 136],
  24: [1, 1],
  25: [1, 2],
  26: [1, 4],
  27: [1, 8],
  28: [1, 8],
  29: [256, 56],
  30: [1, 2],
  34: [256, 54],
  35: [256, 66],
  39: [32, 17],
};

/** A tensor as the file declares it: `fileOffset` is its data's offset from the file's start. */
export interface DeclaredTensor {
  name: string;
  dimensions: readonly bigint[];
  type: number;
  fileOffset: bigint;
}

/**
 * What is wrong with a tensor's place in a file of `fileSize` bytes, or undefined: its data must
 * lie within the file (a type this table does not know is checked by its offset alone).
 */
export function tensorProblem(tensor: DeclaredTensor, fileSize: bigint): string | undefined {
  const dimensions = dimensionProblem(tensor.name, tensor.dimensions);
  if (dimensions) return dimensions;
  const block = BLOCKS[tensor.type];
  let bytes = 0n;
  if (block) {
    const [size, blockBytes] = block.map(BigInt);
    const first = tensor.dimensions[0] ?? 1n;
    if (first % size !== 0n) {
      return `tensor '${tensor.name}' has ${first} elements a row, not a multiple of its ` +
        `type's block of ${size}`;
    }
    bytes = tensor.dimensions.reduce((a, b) => a * b, 1n) / size * blockBytes;
  }
  if (tensor.fileOffset < 0n || tensor.fileOffset + bytes > fileSize) {
    return `tensor '${tensor.name}' runs past the end of the file (its data would end at byte ` +
      `${tensor.fileOffset + bytes} of ${fileSize}): the file is cut short or not a model`;
  }
  return undefined;
}
