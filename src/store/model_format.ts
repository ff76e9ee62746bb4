/**
 * Which file format each model kind stores, and the header check done before a file is accepted.
 *
 * @module
 */
import type { Kind } from "../../gen/store/validators.ts";

/** The on-disk format of a model file. */
export type ModelFormat = "gguf" | "onnx";

/** The format of a kind's model file: GGUF for llm, vlm and embed; ONNX for onnx. */
export function formatOf(kind: Kind): ModelFormat {
  return kind === "onnx" ? "onnx" : "gguf";
}

/** Bytes of a GGUF file's fixed header: magic, version, tensor count, metadata count. */
export const GGUF_HEADER_BYTES = 24;
const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46]; // "GGUF"
const GGUF_VERSIONS = [2, 3];

/**
 * Why a file with this beginning cannot be a model of the format, or undefined when it can.
 * `head` holds the first GGUF_HEADER_BYTES bytes (fewer for a shorter file).
 */
export function headerProblem(
  format: ModelFormat,
  head: Uint8Array,
  size: number,
): string | undefined {
  if (size === 0) return "the file is empty";
  if (format === "onnx") return undefined;
  if (!GGUF_MAGIC.every((byte, i) => head[i] === byte)) {
    return "not a GGUF file: it does not start with the bytes 'GGUF' (check the file and the model's kind)";
  }
  if (size < GGUF_HEADER_BYTES) {
    return "not a GGUF file: it is shorter than the 24-byte GGUF header";
  }
  const version = new DataView(head.buffer, head.byteOffset, head.byteLength).getUint32(4, true);
  if (!GGUF_VERSIONS.includes(version)) {
    return `GGUF version ${version} is not supported (llama.cpp reads versions 2 and 3)`;
  }
  return undefined;
}
