/**
 * A llama-architecture GGUF model of a chosen size, in F16, written to a file tensor by tensor (a
 * few GB never sit in memory at once): for measuring speed, where the tiny test model is too small
 * for a GPU to show its worth. Its weights are random, steered the way testing/tiny_llama.ts
 * steers its own (embedding dimension 0 constant, read by no layer and amplified by the final
 * norm, so only ordinary tokens are sampled and generation runs to max_tokens); the layer matrices
 * are scaled by 1/√inputs so the residual stream stays small through many layers. Rows are drawn
 * from a pool of random values at random offsets: the speed of a model does not depend on what its
 * weights say.
 *
 * ```ts
 * await writeSizedLlamaGguf("/tmp/1b.gguf", SIZED_LLAMAS["1b"]); // 2.3 GB, 1.1 B parameters
 * ```
 *
 * @module
 */
import { GgmlType, GGUF_ALIGNMENT } from "./gguf_writer.ts";
import { CHATML_TEMPLATE, llamaHeader, NORMAL, prng, vocabulary } from "./tiny_llama.ts";

/** The shape of a {@link writeSizedLlamaGguf} model. */
export interface SizedLlamaShape {
  /** n_embd, a multiple of `heads`. */
  embedding: number;
  layers: number;
  feedForward: number;
  heads: number;
  contextLength: number;
}

/** Named shapes: "1b" is TinyLlama-1.1B's (22 layers of 2048, FFN 5632), "3b" Llama 3.2 3B's. */
export const SIZED_LLAMAS: Record<string, SizedLlamaShape> = {
  "small": { embedding: 256, layers: 4, feedForward: 704, heads: 4, contextLength: 2048 },
  "1b": { embedding: 2048, layers: 22, feedForward: 5632, heads: 32, contextLength: 4096 },
  "3b": { embedding: 3072, layers: 28, feedForward: 8192, heads: 24, contextLength: 4096 },
};

/** The parameters of a model of `shape` (the vocabulary's few hundred rows included). */
export function sizedLlamaParameters(shape: SizedLlamaShape): number {
  const { embedding: e, layers, feedForward: ff } = shape;
  return layers * (4 * e * e + 3 * e * ff + 2 * e) + e + 2 * e * vocabulary().tokens.length;
}

const POOL = 1 << 20;

/** Writes a model of `shape` to `path` (replacing it) and returns its size in bytes. */
export async function writeSizedLlamaGguf(
  path: string,
  shape: SizedLlamaShape,
  seed = 1,
): Promise<number> {
  const { embedding: embd, layers, feedForward: ff, heads, contextLength } = shape;
  if (embd % heads !== 0) throw new Error("embedding must be a multiple of heads");
  const vocab = vocabulary();
  const nVocab = vocab.tokens.length;
  const random = prng(seed);
  // Standard deviation 1, uniform: values are scaled per tensor when rows are drawn.
  const pool = Float32Array.from({ length: POOL }, () => (random() * 2 - 1) * Math.sqrt(3));

  /** `rows` rows of `cols` values of standard deviation `std`; `steer` leaves dimension 0 out. */
  const rowsOf = (cols: number, rows: number, std: number, steer: boolean) => {
    const values = new Float32Array(cols * rows);
    for (let r = 0; r < rows; r++) {
      const start = Math.floor(random() * (POOL - cols));
      const row = values.subarray(r * cols, (r + 1) * cols);
      row.set(pool.subarray(start, start + cols));
      for (let i = 0; i < cols; i++) row[i] *= std;
      if (steer) row[0] = 0;
    }
    if (steer) values.fill(0, 0, cols);
    return values;
  };
  const ones = (length: number) => new Float32Array(length).fill(1);

  const tensors: Array<[string, number[], () => Float32Array]> = [];
  tensors.push(["token_embd.weight", [embd, nVocab], () => {
    const values = rowsOf(embd, nVocab, 1, false);
    for (let t = 0; t < nVocab; t++) values[t * embd] = 8;
    return values;
  }]);
  tensors.push(["output_norm.weight", [embd], () => {
    const values = ones(embd);
    values[0] = 50;
    return values;
  }]);
  tensors.push(["output.weight", [embd, nVocab], () => {
    const values = rowsOf(embd, nVocab, 1 / Math.sqrt(embd), false);
    for (let t = 0; t < nVocab; t++) {
      const row = values.subarray(t * embd, (t + 1) * embd);
      if (vocab.types[t] !== NORMAL) row.fill(0);
      row[0] = vocab.types[t] === NORMAL ? 1 : -20;
    }
    return values;
  }]);
  const matrix = (inputs: number, outputs: number) => () =>
    rowsOf(inputs, outputs, 0.5 / Math.sqrt(inputs), true);
  for (let i = 0; i < layers; i++) {
    const blk = `blk.${i}`;
    tensors.push([`${blk}.attn_norm.weight`, [embd], () => ones(embd)]);
    for (const name of ["attn_q", "attn_k", "attn_v", "attn_output"]) {
      tensors.push([`${blk}.${name}.weight`, [embd, embd], matrix(embd, embd)]);
    }
    tensors.push([`${blk}.ffn_norm.weight`, [embd], () => ones(embd)]);
    tensors.push([`${blk}.ffn_gate.weight`, [embd, ff], matrix(embd, ff)]);
    tensors.push([`${blk}.ffn_up.weight`, [embd, ff], matrix(embd, ff)]);
    tensors.push([`${blk}.ffn_down.weight`, [ff, embd], matrix(ff, embd)]);
  }

  const header = llamaHeader({
    name: `sized-llama-${embd}x${layers}`,
    fileType: 1,
    contextLength,
    embedding: embd,
    layers,
    feedForward: ff,
    heads,
    vocab,
  }).string("tokenizer.chat_template", CHATML_TEMPLATE);
  // F32 for the norms (llama.cpp's converters keep 1-D tensors in F32), F16 for the matrices.
  const typeOf = (dims: number[]) => dims.length === 1 ? GgmlType.F32 : GgmlType.F16;
  for (const [name, dims] of tensors) header.tensor(name, dims, undefined, typeOf(dims));

  // Written beside the target and renamed: an interrupted write leaves no half model behind.
  const partial = `${path}.partial-${Deno.pid}`;
  const file = await Deno.open(partial, { write: true, create: true, truncate: true });
  let size = 0;
  const write = async (bytes: Uint8Array) => {
    for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
    size += bytes.length;
  };
  try {
    await write(header.bytes());
    for (const [, dims, values] of tensors) {
      const f32 = values();
      const data = typeOf(dims) === GgmlType.F32 ? f32 : new Float16Array(f32);
      await write(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      const pad = (GGUF_ALIGNMENT - (data.byteLength % GGUF_ALIGNMENT)) % GGUF_ALIGNMENT;
      if (pad) await write(new Uint8Array(pad));
    }
  } catch (error) {
    file.close();
    await Deno.remove(partial).catch(() => {});
    throw error;
  }
  file.close();
  await Deno.rename(partial, path);
  return size;
}
