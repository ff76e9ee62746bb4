/**
 * A tiny but real llama-architecture GGUF model (all F32, random weights from a seeded PRNG, so
 * the same options give the same bytes) that llama.cpp loads and runs, with a SentencePiece
 * vocabulary (byte fallback: any text tokenizes) and a ChatML chat template; and a header-only
 * file that declares a 70B-sized model.
 *
 * How generation is steered: embedding dimension 0 is a constant (8) for every token, and no
 * layer matrix reads or writes it, so after the final RMS norm (whose weight amplifies it 50
 * times) it is large and positive whatever the context. In `output.weight`, ordinary tokens weigh
 * that dimension +1 and byte/control tokens -20 (their other weights are 0), so only ordinary
 * (printable ASCII) tokens are ever sampled; with `eos: "first"` the EOS row weighs it +20, so EOS
 * always wins. The other dimensions are random and the layers mix them across positions:
 * different prompts give different outputs, mostly varied words and letters (greedy decoding
 * settles into loops of a few tokens now and then).
 *
 * @module
 */
import { GgmlType, GgufWriter } from "./gguf_writer.ts";

/** What {@link tinyLlamaGguf} builds. */
export interface TinyLlamaOptions {
  /** PRNG seed of the weights (default 1). */
  seed?: number;
  /** `llama.block_count` (default 2). */
  layers?: number;
  /** `llama.embedding_length`, n_embd (default 64). */
  embedding?: number;
  /** `llama.attention.head_count` and `head_count_kv` (default 4). */
  heads?: number;
  /** `llama.feed_forward_length` (default 128). */
  feedForward?: number;
  /** `llama.context_length` (default 512). */
  contextLength?: number;
  /**
   * "never": EOS / <|im_end|> / other control tokens are never sampled (so generation always runs
   * to max_tokens); "first": EOS is always the most likely token (greedy replies are empty,
   * finish by EOS). Default "never".
   */
  eos?: "never" | "first";
  /** `tokenizer.chat_template`: default {@link CHATML_TEMPLATE}; null writes none. */
  chatTemplate?: string | null;
  /** `general.name` (default "tiny-llama"). */
  name?: string;
}

/** The standard ChatML jinja template (honours `add_generation_prompt`). */
export const CHATML_TEMPLATE = "{% for message in messages %}" +
  "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** SentencePiece token type of an ordinary token. */
export const NORMAL = 1;
const UNKNOWN = 2;
const CONTROL = 3;
const BYTE = 6;
/** The SentencePiece space marker. */
const SPACE = "\u2581";
const WORDS = ("the cat dog sat on mat a is was and to of in it we you hello world yes no " +
  "good big red blue sun moon tree house book day one two three true false name value data")
  .split(" ");
const CHARS = "abcdefghijklmnopqrstuvwxyz0123456789{}\":,.!?-()'";

/** The vocabulary: tokens with their types and scores, special ones first (ids 0-2, 259-260). */
export interface Vocabulary {
  tokens: string[];
  types: number[];
  scores: number[];
}

/** The SentencePiece vocabulary of the test models (a few hundred tokens, byte fallback). */
export function vocabulary(): Vocabulary {
  const tokens = ["<unk>", "<s>", "</s>"];
  const types = [UNKNOWN, CONTROL, CONTROL];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
    types.push(BYTE);
  }
  tokens.push("<|im_start|>", "<|im_end|>");
  types.push(CONTROL, CONTROL);
  const scores = tokens.map(() => 0);
  const normal = new Set<string>([SPACE, ...CHARS]);
  // Every prefix of a word, so SentencePiece's bigram merges can build the whole word.
  for (const word of WORDS) {
    const piece = SPACE + word;
    for (let end = 2; end <= piece.length; end++) normal.add(piece.slice(0, end));
  }
  for (const piece of normal) {
    tokens.push(piece);
    types.push(NORMAL);
    // Longer pieces score higher, so merges prefer them (as in a trained SentencePiece model).
    scores.push(piece.length === 1 ? -1000 : -100 / piece.length);
  }
  return { tokens, types, scores };
}

/** mulberry32: a small deterministic PRNG, uniform in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The shape a llama GGUF's header declares. */
export interface LlamaHeader {
  name: string;
  /** `general.file_type`: 0 for F32, 1 for mostly F16. */
  fileType: number;
  contextLength: number;
  embedding: number;
  layers: number;
  feedForward: number;
  heads: number;
  vocab: Vocabulary;
}

/**
 * A GGUF writer holding the key/values of a llama model of this shape with the test vocabulary
 * (SentencePiece, BOS 1, EOS 2, UNK 0); the caller adds the chat template and the tensors.
 */
export function llamaHeader(shape: LlamaHeader): GgufWriter {
  const { embedding: embd, heads, vocab } = shape;
  return new GgufWriter()
    .string("general.architecture", "llama")
    .string("general.name", shape.name)
    .u32("general.file_type", shape.fileType)
    .u32("general.alignment", 32)
    .u32("llama.context_length", shape.contextLength)
    .u32("llama.embedding_length", embd)
    .u32("llama.block_count", shape.layers)
    .u32("llama.feed_forward_length", shape.feedForward)
    .u32("llama.attention.head_count", heads)
    .u32("llama.attention.head_count_kv", heads)
    .u32("llama.rope.dimension_count", embd / heads)
    .f32("llama.rope.freq_base", 10000)
    .f32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    .u32("llama.vocab_size", vocab.tokens.length)
    .string("tokenizer.ggml.model", "llama")
    .strings("tokenizer.ggml.tokens", vocab.tokens)
    .f32s("tokenizer.ggml.scores", vocab.scores)
    .i32s("tokenizer.ggml.token_type", vocab.types)
    .u32("tokenizer.ggml.bos_token_id", 1)
    .u32("tokenizer.ggml.eos_token_id", 2)
    .u32("tokenizer.ggml.unknown_token_id", 0)
    .bool("tokenizer.ggml.add_bos_token", true)
    .bool("tokenizer.ggml.add_eos_token", false);
}

/**
 * The bytes of a tiny llama GGUF v3 model per `options` (about 550 kB with the defaults),
 * deterministic for a given seed and options.
 */
export function tinyLlamaGguf(options: TinyLlamaOptions = {}): Uint8Array {
  const {
    seed = 1,
    layers = 2,
    embedding: embd = 64,
    heads = 4,
    feedForward: ff = 128,
    contextLength = 512,
    eos = "never",
    chatTemplate = CHATML_TEMPLATE,
    name = "tiny-llama",
  } = options;
  if (embd % heads !== 0) throw new Error("embedding must be a multiple of heads");
  const vocab = vocabulary();
  const nVocab = vocab.tokens.length;
  const random = prng(seed);
  // Uniform in [-std·√3, std·√3): standard deviation `std`, no transcendental functions.
  const noise = (length: number, std: number) =>
    Float32Array.from({ length }, () => (random() * 2 - 1) * std * Math.sqrt(3));
  const ones = (length: number) => new Float32Array(length).fill(1);
  // A layer matrix ([inputs, outputs], ne[0] first) that neither reads nor writes dimension 0.
  const matrix = (inputs: number, outputs: number, std = 0.3) => {
    const m = noise(inputs * outputs, std).fill(0, 0, inputs);
    for (let o = 0; o < outputs; o++) m[o * inputs] = 0;
    return m;
  };

  const w = llamaHeader({
    name,
    fileType: 0,
    contextLength,
    embedding: embd,
    layers,
    feedForward: ff,
    heads,
    vocab,
  });
  if (chatTemplate !== null) w.string("tokenizer.chat_template", chatTemplate);

  const tokenEmbd = noise(embd * nVocab, 1);
  for (let t = 0; t < nVocab; t++) tokenEmbd[t * embd] = 8;
  w.tensor("token_embd.weight", [embd, nVocab], tokenEmbd);
  // The final norm amplifies dimension 0, so it outweighs the random part of every logit.
  const outputNorm = ones(embd);
  outputNorm[0] = 50;
  w.tensor("output_norm.weight", [embd], outputNorm);
  const output = noise(embd * nVocab, 1);
  for (let t = 0; t < nVocab; t++) {
    const row = output.subarray(t * embd, (t + 1) * embd);
    if (vocab.types[t] !== NORMAL) row.fill(0);
    row[0] = vocab.types[t] === NORMAL ? 1 : t === 2 && eos === "first" ? 20 : -20;
  }
  w.tensor("output.weight", [embd, nVocab], output);
  for (let i = 0; i < layers; i++) {
    const blk = `blk.${i}`;
    w.tensor(`${blk}.attn_norm.weight`, [embd], ones(embd));
    w.tensor(`${blk}.attn_q.weight`, [embd, embd], matrix(embd, embd));
    w.tensor(`${blk}.attn_k.weight`, [embd, embd], matrix(embd, embd));
    w.tensor(`${blk}.attn_v.weight`, [embd, embd], matrix(embd, embd));
    w.tensor(`${blk}.attn_output.weight`, [embd, embd], matrix(embd, embd));
    w.tensor(`${blk}.ffn_norm.weight`, [embd], ones(embd));
    w.tensor(`${blk}.ffn_gate.weight`, [embd, ff], matrix(embd, ff));
    w.tensor(`${blk}.ffn_up.weight`, [embd, ff], matrix(embd, ff));
    w.tensor(`${blk}.ffn_down.weight`, [ff, embd], matrix(ff, embd));
  }
  return w.bytes();
}

/**
 * A header that declares a 70B-class llama model (80 blocks of n_embd 8192, n_ff 28672, F16:
 * about 68.5 billion parameters, 137 GB; context length 131072) but holds none of its tensor
 * data: the file is a few tens of KB. For tests that refuse a model whose memory needs, estimated
 * from the header alone, exceed what the machine has.
 */
export function hugeDeclaredGguf(): Uint8Array {
  const embd = 8192, ff = 28672, layers = 80, heads = 64, kvHeads = 8;
  const kv = (embd / heads) * kvHeads;
  const vocab = vocabulary();
  const nVocab = vocab.tokens.length;
  const w = new GgufWriter()
    .string("general.architecture", "llama")
    .string("general.name", "huge-declared-llama-70b")
    .u32("general.file_type", 1)
    .u32("general.alignment", 32)
    .u32("llama.context_length", 131072)
    .u32("llama.embedding_length", embd)
    .u32("llama.block_count", layers)
    .u32("llama.feed_forward_length", ff)
    .u32("llama.attention.head_count", heads)
    .u32("llama.attention.head_count_kv", kvHeads)
    .u32("llama.rope.dimension_count", embd / heads)
    .f32("llama.rope.freq_base", 500000)
    .f32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    .string("tokenizer.ggml.model", "llama")
    .strings("tokenizer.ggml.tokens", vocab.tokens)
    .f32s("tokenizer.ggml.scores", vocab.scores)
    .i32s("tokenizer.ggml.token_type", vocab.types)
    .u32("tokenizer.ggml.bos_token_id", 1)
    .u32("tokenizer.ggml.eos_token_id", 2)
    .string("tokenizer.chat_template", CHATML_TEMPLATE);
  const f16 = (tensor: string, dims: number[]) => w.tensor(tensor, dims, undefined, GgmlType.F16);
  f16("token_embd.weight", [embd, nVocab]);
  f16("output_norm.weight", [embd]);
  f16("output.weight", [embd, nVocab]);
  for (let i = 0; i < layers; i++) {
    f16(`blk.${i}.attn_norm.weight`, [embd]);
    f16(`blk.${i}.attn_q.weight`, [embd, embd]);
    f16(`blk.${i}.attn_k.weight`, [embd, kv]);
    f16(`blk.${i}.attn_v.weight`, [embd, kv]);
    f16(`blk.${i}.attn_output.weight`, [embd, embd]);
    f16(`blk.${i}.ffn_norm.weight`, [embd]);
    f16(`blk.${i}.ffn_gate.weight`, [embd, ff]);
    f16(`blk.${i}.ffn_up.weight`, [embd, ff]);
    f16(`blk.${i}.ffn_down.weight`, [ff, embd]);
  }
  return w.bytes();
}
