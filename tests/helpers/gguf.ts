/**
 * Builds GGUF files with real header metadata, the way llama.cpp's converter lays them out:
 * general keys first, a large tokenizer vocabulary array, the chat template after it, then the
 * tensor infos.
 *
 * @module
 */
import { concatBytes } from "../../src/tunnel/bytes.ts";

/** What to put in the header. */
export interface GgufSpec {
  architecture?: string;
  name?: string;
  contextLength?: number;
  fileType?: number;
  chatTemplate?: string;
  /** Strings in tokenizer.ggml.tokens (skipped by the reader). */
  vocabulary?: number;
  /** Tensor shapes. */
  tensors?: number[][];
  /** Bytes after the header (stand-in tensor data). */
  filler?: number;
}

/** A GGUF v3 file per `spec`. */
export function ggufWithMetadata(spec: GgufSpec): Uint8Array {
  const parts: Uint8Array[] = [];
  const u32 = (n: number) => {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, n, true);
    parts.push(b);
  };
  const u64 = (n: number) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(n), true);
    parts.push(b);
  };
  const str = (s: string) => {
    const b = new TextEncoder().encode(s);
    u64(b.byteLength);
    parts.push(b);
  };
  const kv: Array<() => void> = [];
  const add = (key: string, write: () => void) => kv.push(() => (str(key), write()));
  if (spec.architecture) add("general.architecture", () => (u32(8), str(spec.architecture!)));
  if (spec.name) add("general.name", () => (u32(8), str(spec.name!)));
  if (spec.architecture && spec.contextLength !== undefined) {
    add(`${spec.architecture}.context_length`, () => (u32(4), u32(spec.contextLength!)));
  }
  add(`${spec.architecture ?? "x"}.rope.freq_base`, () => (u32(6), u32(0x461c4000)));
  if (spec.fileType !== undefined) add("general.file_type", () => (u32(4), u32(spec.fileType!)));
  add("tokenizer.ggml.tokens", () => {
    u32(9);
    u32(8);
    u64(spec.vocabulary ?? 10);
    for (let i = 0; i < (spec.vocabulary ?? 10); i++) str(`token-${i}`);
  });
  add("tokenizer.ggml.scores", () => (u32(9), u32(6), u64(3), u32(0), u32(0), u32(0)));
  if (spec.chatTemplate) add("tokenizer.chat_template", () => (u32(8), str(spec.chatTemplate!)));
  const tensors = spec.tensors ?? [];
  parts.push(new Uint8Array([0x47, 0x47, 0x55, 0x46]));
  u32(3);
  u64(tensors.length);
  u64(kv.length);
  for (const write of kv) write();
  tensors.forEach((dims, i) => {
    str(`blk.${i}.weight`);
    u32(dims.length);
    for (const d of dims) u64(d);
    u32(0);
    u64(0);
  });
  parts.push(new Uint8Array(spec.filler ?? 0).map((_, i) => (i * 13) & 0xff));
  return concatBytes(parts);
}

/** A llama3-style chat template. */
export const LLAMA3_TEMPLATE =
  "{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n" +
  "{{ message['content'] }}<|eot_id|>{% endfor %}";
