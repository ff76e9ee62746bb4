/**
 * Reads what users need from a GGUF file's header: the metadata keys that describe the model and
 * the tensor shapes (for the parameter count). The header is walked in order from disk; arrays
 * (the tokenizer's vocabulary is hundreds of thousands of strings) are skipped, never held.
 *
 * Layout (GGUF v2/v3, little-endian): magic, u32 version, u64 tensor count, u64 key/value count,
 * then the key/values (u64-length string key, u32 type, value), then per tensor: name, u32
 * dimension count, u64 dimensions, u32 type, u64 offset.
 *
 * Walking the header to its end is also the check that a GGUF file is usable: every count and
 * length is checked against the bytes left before anything is read or allocated, arrays may
 * nest only a few levels, and the items visited are counted, so a crafted header is refused in
 * milliseconds and constant memory.
 *
 * @module
 */
import type { ChatTemplateHint, GgufInfo } from "../../gen/store/validators.ts";
import { Invalid } from "../errors/mod.ts";
import { hintForTemplate } from "./chat_template_hint.ts";
import { dimensionProblem, hyperparameterProblem } from "./gguf_limits.ts";

/** What the header says, plus the chat template text itself (for hint detection). */
export interface GgufMetadata {
  info: GgufInfo;
  chatTemplate?: string;
  /**
   * What would make llama.cpp abort on the file (a hyperparameter it divides by or sizes from,
   * tensor dimensions whose product overflows: src/store/gguf_limits.ts), if anything.
   */
  problem?: string;
}

// Value type ids of GGUF and the byte size of the fixed-size ones.
const STRING = 8;
const ARRAY = 9;
const FIXED_SIZES: Record<number, number> = {
  0: 1,
  1: 1,
  2: 2,
  3: 2,
  4: 4,
  5: 4,
  6: 4,
  7: 1,
  10: 8,
  11: 8,
  12: 8,
};
/**
 * Furthest into a file the header may reach. Real headers are a few MiB to a few tens (the
 * vocabulary); a crafted file must not keep the commit busy reading gigabytes.
 */
const MAX_HEADER_BYTES = 256 << 20;
/** Longest string value kept (a chat template is a few KiB; anything longer is skipped). */
const MAX_KEPT_STRING = 1 << 20;
/** Longest key; the GGUF specification caps keys at 2^16 - 1 bytes. */
const MAX_KEY_BYTES = 0xffff;
/**
 * Deepest nesting of arrays accepted. The converters write only flat arrays (llama.cpp itself
 * reads no array of arrays); a few levels leave room for other writers, and the bound keeps a
 * crafted file of nested one-element arrays from being walked level by level.
 */
const MAX_ARRAY_DEPTH = 4;
/**
 * Keys, tensors and string or array items visited, at most. The largest real headers hold about
 * a million (a 256k-token vocabulary, its merges and scores; fixed-size arrays count once, as
 * they are skipped in one step); this bounds the time a crafted header can take.
 */
const MAX_ITEMS = 8_000_000;
/** Numeric keys kept, at most (real headers have a few dozen). */
const MAX_NUMBERS = 4096;
/** Most dimensions a tensor may have (llama.cpp has 4; room for other readers). */
const MAX_DIMENSIONS = 8;
/** Fewest bytes a key/value (8-byte key length, type, 1-byte value) or tensor info takes. */
const MIN_KV_BYTES = 8 + 4 + 1;
const MIN_TENSOR_BYTES = 8 + 4 + 4 + 8;

/** llama.cpp's names of `general.file_type` values (llama_ftype). */
const FILE_TYPES: Record<number, string> = {
  0: "F32",
  1: "F16",
  2: "Q4_0",
  3: "Q4_1",
  7: "Q8_0",
  8: "Q5_0",
  9: "Q5_1",
  10: "Q2_K",
  11: "Q3_K_S",
  12: "Q3_K_M",
  13: "Q3_K_L",
  14: "Q4_K_S",
  15: "Q4_K_M",
  16: "Q5_K_S",
  17: "Q5_K_M",
  18: "Q6_K",
  19: "IQ2_XXS",
  20: "IQ2_XS",
  21: "Q2_K_S",
  22: "IQ3_XS",
  23: "IQ3_XXS",
  24: "IQ1_S",
  25: "IQ4_NL",
  26: "IQ3_S",
  27: "IQ3_M",
  28: "IQ2_S",
  29: "IQ2_M",
  30: "IQ4_XS",
  31: "IQ1_M",
  32: "BF16",
  36: "TQ1_0",
  37: "TQ2_0",
  38: "MXFP4_MOE",
};

/** The header cannot be read to its end: the file is cut short, malformed or implausible. */
export class GgufMalformed extends Error {
  override name = "GgufMalformed";
}
const Malformed = GgufMalformed;

/**
 * Sequential reads over a file through a buffer that grows only for one value kept (a key, a
 * wanted string): memory stays under a few MiB whatever the file says.
 */
class FileCursor {
  readonly #file: Deno.FsFile;
  readonly #size: number;
  #buffer = new Uint8Array(64 << 10);
  #view = new DataView(this.#buffer.buffer);
  #start = 0; // index of the next unread byte in the buffer
  #end = 0; // bytes valid in the buffer
  #fileOffset = 0; // file offset of buffer[#end]
  #items = 0;

  constructor(file: Deno.FsFile, size: number) {
    this.#file = file;
    this.#size = size;
  }

  /** Bytes of the file not read yet (within the header limit). */
  get remaining(): number {
    return Math.min(this.#size, MAX_HEADER_BYTES) - this.#fileOffset + (this.#end - this.#start);
  }

  /** Counts `n` visited items against the work limit. */
  visit(n = 1): void {
    this.#items += n;
    if (this.#items > MAX_ITEMS) {
      throw new Malformed(`the header holds more than ${MAX_ITEMS} keys, tensors and items`);
    }
  }

  /** Throws unless `count` items of at least `each` bytes fit in the rest of the header. */
  fits(count: number, each: number, what: string): void {
    if (count * each > this.remaining) {
      throw new Malformed(
        `${what} ${count} cannot fit in the ${this.remaining} bytes left of the header`,
      );
    }
  }

  async #need(bytes: number): Promise<void> {
    if (this.#end - this.#start >= bytes) return;
    if (this.#fileOffset + bytes - (this.#end - this.#start) > this.#size) {
      throw new Malformed("the file ends inside its header");
    }
    if (this.#fileOffset + bytes - (this.#end - this.#start) > MAX_HEADER_BYTES) {
      throw new Malformed(`the header is larger than ${MAX_HEADER_BYTES} bytes`);
    }
    const kept = this.#buffer.subarray(this.#start, this.#end);
    if (bytes > this.#buffer.byteLength) {
      const bigger = new Uint8Array(bytes);
      bigger.set(kept);
      this.#buffer = bigger;
      this.#view = new DataView(bigger.buffer);
    } else {
      this.#buffer.copyWithin(0, this.#start, this.#end);
    }
    this.#end = kept.byteLength;
    this.#start = 0;
    while (this.#end < bytes) {
      const read = await this.#file.read(this.#buffer.subarray(this.#end));
      if (read === null) throw new Malformed("the file ends inside its header");
      this.#end += read;
      this.#fileOffset += read;
    }
  }

  async u32(): Promise<number> {
    await this.#need(4);
    const value = this.#view.getUint32(this.#start, true);
    this.#start += 4;
    return value;
  }

  /** A u64 as a BigInt, whatever its size. */
  async bigU64(): Promise<bigint> {
    await this.#need(8);
    const value = this.#view.getBigUint64(this.#start, true);
    this.#start += 8;
    return value;
  }

  /** A u64 count or length: one larger than the rest of the header is refused. */
  async u64(what = "a count"): Promise<number> {
    const value = await this.bigU64();
    if (value > BigInt(this.remaining)) {
      throw new Malformed(`${what} of ${value} runs past the end of the header`);
    }
    return Number(value);
  }

  /** A little-endian number of a fixed-size GGUF type (integers, floats, bool). */
  async scalar(type: number): Promise<number> {
    const size = FIXED_SIZES[type];
    await this.#need(size);
    const at = this.#start;
    this.#start += size;
    const view = this.#view;
    switch (type) {
      case 0:
      case 7:
        return view.getUint8(at);
      case 1:
        return view.getInt8(at);
      case 2:
        return view.getUint16(at, true);
      case 3:
        return view.getInt16(at, true);
      case 4:
        return view.getUint32(at, true);
      case 5:
        return view.getInt32(at, true);
      case 6:
        return view.getFloat32(at, true);
      case 10:
        return Number(view.getBigUint64(at, true));
      case 11:
        return Number(view.getBigInt64(at, true));
      default:
        return view.getFloat64(at, true);
    }
  }

  /** A string of at most `limit` bytes; a longer one is skipped and read as undefined. */
  async string(limit: number, what = "a string"): Promise<string | undefined> {
    const length = await this.u64(`${what}'s length`);
    if (length > limit) {
      await this.skip(length);
      return undefined;
    }
    return await this.#text(length);
  }

  async #text(length: number): Promise<string> {
    await this.#need(length);
    const text = new TextDecoder().decode(this.#buffer.subarray(this.#start, this.#start + length));
    this.#start += length;
    return text;
  }

  /** A key: a string of at most 2^16 - 1 bytes. */
  async key(): Promise<string> {
    const length = await this.u64("a key's length");
    if (length > MAX_KEY_BYTES) {
      throw new Malformed(`a key is ${length} bytes long; GGUF keys have at most ${MAX_KEY_BYTES}`);
    }
    return await this.#text(length);
  }

  async skip(bytes: number): Promise<void> {
    const buffered = this.#end - this.#start;
    if (bytes <= buffered) {
      this.#start += bytes;
      return;
    }
    const target = this.#fileOffset + bytes - buffered;
    if (target > this.#size) throw new Malformed("the file ends inside its header");
    if (target > MAX_HEADER_BYTES) {
      throw new Malformed(`the header is larger than ${MAX_HEADER_BYTES} bytes`);
    }
    await this.#file.seek(target, Deno.SeekMode.Start);
    this.#fileOffset = target;
    this.#start = this.#end = 0;
  }

  /**
   * Skips a value of any type; returns an array's item count. Arrays of fixed-size items are
   * skipped in one step; arrays of strings or arrays item by item, within the depth, size and
   * work limits.
   */
  async skipValue(type: number, depth = 0): Promise<number | undefined> {
    if (type === STRING) return void await this.skip(await this.u64("a string's length"));
    if (type === ARRAY) {
      if (depth >= MAX_ARRAY_DEPTH) {
        throw new Malformed(`arrays are nested more than ${MAX_ARRAY_DEPTH} deep`);
      }
      const itemType = await this.u32();
      const count = await this.u64("an array's item count");
      const fixed = FIXED_SIZES[itemType];
      if (fixed !== undefined) {
        this.visit();
        this.fits(count, fixed, "an array's item count");
        await this.skip(count * fixed);
        return count;
      }
      if (itemType !== STRING && itemType !== ARRAY) {
        throw new Malformed(`an array has items of unknown type ${itemType}`);
      }
      // A string takes at least its 8-byte length; an array its type and count.
      this.fits(count, itemType === STRING ? 8 : 12, "an array's item count");
      this.visit(count);
      for (let i = 0; i < count; i++) await this.skipValue(itemType, depth + 1);
      return count;
    }
    if (FIXED_SIZES[type] === undefined) throw new Malformed(`unknown value type ${type}`);
    await this.skip(FIXED_SIZES[type]);
  }
}

/**
 * The metadata of the GGUF file at `path`, read by walking its whole header: every key/value and
 * every tensor info. Throws GgufMalformed when the header cannot be read to its end (the file is
 * cut short, a count or length runs past the end, a type is unknown, or a limit is passed):
 * such a file is not a usable GGUF file. The caller has already checked the magic and version.
 * Refusals are quick and in constant memory whatever the file claims.
 */
export async function readGgufMetadata(path: string): Promise<GgufMetadata> {
  using file = await Deno.open(path, { read: true });
  const cursor = new FileCursor(file, (await file.stat()).size);
  await cursor.skip(8); // magic and version
  const tensorCount = await cursor.u64("the tensor count");
  const keyCount = await cursor.u64("the key/value count");
  cursor.fits(keyCount, MIN_KV_BYTES, "the key/value count");
  cursor.fits(tensorCount, MIN_TENSOR_BYTES, "the tensor count");
  cursor.visit(keyCount + tensorCount);
  const strings = new Map<string, string>();
  const numbers = new Map<string, number>();
  let vocabulary: number | undefined;
  for (let i = 0; i < keyCount; i++) {
    const key = await cursor.key();
    const type = await cursor.u32();
    if (type === STRING && wantedString(key)) {
      const text = await cursor.string(MAX_KEPT_STRING);
      if (text !== undefined) strings.set(key, text);
    } else if (FIXED_SIZES[type] !== undefined && numbers.size < MAX_NUMBERS) {
      // Every number is kept (a header has a few dozen): the hyperparameters are checked below.
      numbers.set(key, await cursor.scalar(type));
    } else {
      const count = await cursor.skipValue(type);
      if (key === "tokenizer.ggml.tokens") vocabulary = count;
    }
  }
  // In BigInt: 8 dimensions of up to 2^64 each overflow any float exactly.
  let parameterCount = 0n;
  let overflow: string | undefined;
  for (let i = 0; i < tensorCount; i++) {
    await cursor.skipValue(STRING); // name
    const dimensions = await cursor.u32();
    if (dimensions > MAX_DIMENSIONS) {
      throw new Malformed(`a tensor has ${dimensions} dimensions (at most ${MAX_DIMENSIONS})`);
    }
    const shape: bigint[] = [];
    for (let d = 0; d < dimensions; d++) shape.push(await cursor.bigU64());
    overflow ??= dimensionProblem(`#${i}`, shape);
    parameterCount += shape.reduce((a, b) => a * b, 1n);
    await cursor.skip(12); // type and offset
  }
  const architecture = strings.get("general.architecture");
  const problem = overflow ?? hyperparameterProblem(
    architecture,
    (key) => numbers.get(`${architecture}.${key}`),
    tensorCount,
    vocabulary,
  );
  const chatTemplate = strings.get("tokenizer.chat_template");
  const info: GgufInfo = { hasChatTemplate: chatTemplate !== undefined };
  if (architecture) info.architecture = architecture.slice(0, 256);
  const name = strings.get("general.name");
  if (name) info.name = name.slice(0, 1024);
  if (tensorCount > 0 && parameterCount <= BigInt(Number.MAX_SAFE_INTEGER)) {
    info.parameterCount = Number(parameterCount);
  }
  const context = architecture ? numbers.get(`${architecture}.context_length`) : undefined;
  if (context !== undefined && Number.isSafeInteger(context) && context >= 0) {
    info.contextLength = context;
  }
  const embedding = architecture ? numbers.get(`${architecture}.embedding_length`) : undefined;
  if (embedding !== undefined && Number.isSafeInteger(embedding) && embedding >= 0) {
    info.embeddingLength = embedding;
  }
  const fileType = numbers.get("general.file_type");
  if (fileType !== undefined && FILE_TYPES[fileType]) info.quantization = FILE_TYPES[fileType];
  return { info, chatTemplate, problem };
}

/** What the records keep of a model file's header: its metadata and the hint it suggests. */
export interface ModelFileFacts {
  ggufInfo?: GgufInfo;
  templateHint?: ChatTemplateHint;
}

/**
 * What the records keep of a model file's header. For GGUF, walking the header is the check
 * that the file is usable: a header that cannot be read is a 400 (Invalid) naming the problem.
 */
export async function describeModelFile(
  path: string,
  format: "gguf" | "onnx",
): Promise<ModelFileFacts> {
  if (format !== "gguf") return {};
  const metadata = await readGgufMetadata(path).catch((error) => {
    if (!(error instanceof GgufMalformed)) throw error;
    throw new Invalid(`not a usable GGUF file: ${error.message}`);
  });
  // llama.cpp would abort the engine on loading it: such a file is never ready.
  if (metadata.problem) throw new Invalid(`not a usable GGUF file: ${metadata.problem}`);
  return {
    ggufInfo: metadata.info,
    templateHint: metadata.chatTemplate ? hintForTemplate(metadata.chatTemplate) : undefined,
  };
}

function wantedString(key: string): boolean {
  return key === "general.architecture" || key === "general.name" ||
    key === "tokenizer.chat_template";
}
