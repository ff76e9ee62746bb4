/**
 * Reads what users need from a GGUF file's header: the metadata keys that describe the model and
 * the tensor shapes (for the parameter count). The header is walked in order from disk; arrays
 * (the tokenizer's vocabulary is hundreds of thousands of strings) are skipped, never held.
 *
 * Layout (GGUF v2/v3, little-endian): magic, u32 version, u64 tensor count, u64 key/value count,
 * then the key/values (u64-length string key, u32 type, value), then per tensor: name, u32
 * dimension count, u64 dimensions, u32 type, u64 offset.
 *
 * @module
 */
import type { ChatTemplateHint, GgufInfo } from "../../gen/store/validators.ts";
import { hintForTemplate } from "./chat_template_hint.ts";

/** What the header says, plus the chat template text itself (for hint detection). */
export interface GgufMetadata {
  info: GgufInfo;
  chatTemplate?: string;
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

/** The header could not be read to its end; the file is cut short or malformed. */
class Malformed extends Error {}

/** Sequential reads over a file through a buffer that grows only for one long value. */
class FileCursor {
  readonly #file: Deno.FsFile;
  readonly #size: number;
  #buffer = new Uint8Array(1 << 20);
  #view = new DataView(this.#buffer.buffer);
  #start = 0; // index of the next unread byte in the buffer
  #end = 0; // bytes valid in the buffer
  #fileOffset = 0; // file offset of buffer[#end]

  constructor(file: Deno.FsFile, size: number) {
    this.#file = file;
    this.#size = size;
  }

  async #need(bytes: number): Promise<void> {
    if (this.#end - this.#start >= bytes) return;
    if (this.#fileOffset + bytes - (this.#end - this.#start) > this.#size) {
      throw new Malformed("the header runs past the end of the file");
    }
    if (this.#fileOffset + bytes > MAX_HEADER_BYTES) {
      throw new Malformed("the header is implausibly large");
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
      if (read === null) throw new Malformed("the file ended inside its header");
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

  async u64(): Promise<number> {
    await this.#need(8);
    const value = this.#view.getBigUint64(this.#start, true);
    this.#start += 8;
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new Malformed("a count is implausibly large");
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

  async string(): Promise<string> {
    const length = await this.u64();
    await this.#need(length);
    const text = new TextDecoder().decode(this.#buffer.subarray(this.#start, this.#start + length));
    this.#start += length;
    return text;
  }

  async skip(bytes: number): Promise<void> {
    const buffered = this.#end - this.#start;
    if (bytes <= buffered) {
      this.#start += bytes;
      return;
    }
    const target = this.#fileOffset + bytes - buffered;
    if (target > this.#size || target > MAX_HEADER_BYTES) {
      throw new Malformed("the header runs past the end of the file, or is implausibly large");
    }
    await this.#file.seek(target, Deno.SeekMode.Start);
    this.#fileOffset = target;
    this.#start = this.#end = 0;
  }

  /** Skips a value of any type, arrays of arrays included. */
  async skipValue(type: number): Promise<void> {
    if (type === STRING) return await this.skip(await this.u64());
    if (type === ARRAY) {
      const itemType = await this.u32();
      const count = await this.u64();
      if (FIXED_SIZES[itemType] !== undefined) {
        return await this.skip(count * FIXED_SIZES[itemType]);
      }
      for (let i = 0; i < count; i++) await this.skipValue(itemType);
      return;
    }
    if (FIXED_SIZES[type] === undefined) throw new Malformed(`unknown value type ${type}`);
    await this.skip(FIXED_SIZES[type]);
  }
}

/**
 * The metadata of the GGUF file at `path`, or undefined when its header cannot be read (the
 * caller has already checked the magic and version; a file that fails here is still accepted,
 * just without metadata).
 */
export async function readGgufMetadata(path: string): Promise<GgufMetadata | undefined> {
  using file = await Deno.open(path, { read: true });
  const cursor = new FileCursor(file, (await file.stat()).size);
  try {
    await cursor.skip(8); // magic and version
    const tensorCount = await cursor.u64();
    const keyCount = await cursor.u64();
    const strings = new Map<string, string>();
    const numbers = new Map<string, number>();
    for (let i = 0; i < keyCount; i++) {
      const key = await cursor.string();
      const type = await cursor.u32();
      if (type === STRING && wantedString(key)) {
        const text = await cursor.string();
        if (text.length <= MAX_KEPT_STRING) strings.set(key, text);
      } else if (FIXED_SIZES[type] !== undefined && wantedNumber(key)) {
        numbers.set(key, await cursor.scalar(type));
      } else {
        await cursor.skipValue(type);
      }
    }
    let parameterCount = 0;
    for (let i = 0; i < tensorCount; i++) {
      await cursor.skipValue(STRING); // name
      const dimensions = await cursor.u32();
      if (dimensions > 8) throw new Malformed(`a tensor has ${dimensions} dimensions`);
      let elements = 1;
      for (let d = 0; d < dimensions; d++) elements *= await cursor.u64();
      parameterCount += elements;
      await cursor.skip(12); // type and offset
    }
    const architecture = strings.get("general.architecture");
    const chatTemplate = strings.get("tokenizer.chat_template");
    const info: GgufInfo = { hasChatTemplate: chatTemplate !== undefined };
    if (architecture) info.architecture = architecture.slice(0, 256);
    const name = strings.get("general.name");
    if (name) info.name = name.slice(0, 1024);
    if (tensorCount > 0) info.parameterCount = parameterCount;
    const context = architecture ? numbers.get(`${architecture}.context_length`) : undefined;
    if (context !== undefined && Number.isSafeInteger(context) && context >= 0) {
      info.contextLength = context;
    }
    const fileType = numbers.get("general.file_type");
    if (fileType !== undefined && FILE_TYPES[fileType]) info.quantization = FILE_TYPES[fileType];
    return { info, chatTemplate };
  } catch (error) {
    if (error instanceof Malformed) return undefined;
    throw error;
  }
}

/** What the records keep of a model file's header: its metadata and the hint it suggests. */
export async function describeModelFile(
  path: string,
  format: "gguf" | "onnx",
): Promise<{ ggufInfo?: GgufInfo; templateHint?: ChatTemplateHint }> {
  const metadata = format === "gguf" ? await readGgufMetadata(path) : undefined;
  return {
    ggufInfo: metadata?.info,
    templateHint: metadata?.chatTemplate ? hintForTemplate(metadata.chatTemplate) : undefined,
  };
}

function wantedString(key: string): boolean {
  return key === "general.architecture" || key === "general.name" ||
    key === "tokenizer.chat_template";
}

function wantedNumber(key: string): boolean {
  return key === "general.file_type" || key.endsWith(".context_length");
}
