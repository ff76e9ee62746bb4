/**
 * A generic GGUF v3 writer: typed key/values, then tensor infos, then the tensor data, each
 * tensor's data aligned to `general.alignment` (32 bytes) from the start of the data section, the
 * way llama.cpp's gguf reader expects it.
 *
 * @module
 */
import { concatBytes } from "../src/tunnel/bytes.ts";

/** GGUF value types (gguf_type). */
export const GgufType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

/** ggml tensor types used here (ggml_type) and their bytes per element. */
export const GgmlType = { F32: 0, F16: 1 } as const;
const ELEMENT_BYTES: Record<number, number> = { 0: 4, 1: 2 };

/** Alignment of the tensor data (llama.cpp's GGUF_DEFAULT_ALIGNMENT). */
export const GGUF_ALIGNMENT = 32;

interface TensorEntry {
  name: string;
  dims: number[];
  type: number;
  data?: Uint8Array;
  bytes: number;
}

/** Little-endian byte sink. */
class Sink {
  parts: Uint8Array[] = [];
  size = 0;
  push(bytes: Uint8Array): void {
    this.parts.push(bytes);
    this.size += bytes.length;
  }
  fixed(bytes: number, write: (view: DataView) => void): void {
    const b = new Uint8Array(bytes);
    write(new DataView(b.buffer));
    this.push(b);
  }
  u32(n: number): void {
    this.fixed(4, (v) => v.setUint32(0, n, true));
  }
  u64(n: number): void {
    this.fixed(8, (v) => v.setBigUint64(0, BigInt(n), true));
  }
  str(s: string): void {
    const b = new TextEncoder().encode(s);
    this.u64(b.length);
    this.push(b);
  }
  pad(to: number): void {
    const rest = (to - (this.size % to)) % to;
    if (rest) this.push(new Uint8Array(rest));
  }
}

/**
 * Collects key/values and tensors, then lays them out as one GGUF v3 file with {@link bytes}.
 * `general.alignment` is written by the caller if wanted; the writer always aligns to 32.
 */
export class GgufWriter {
  #kv: Array<(sink: Sink) => void> = [];
  #tensors: TensorEntry[] = [];

  /** A key with a u32 value. */
  u32(key: string, value: number): this {
    return this.#add(key, (s) => (s.u32(GgufType.UINT32), s.u32(value)));
  }
  /** A key with an i32 value. */
  i32(key: string, value: number): this {
    return this.#add(key, (s) => {
      s.u32(GgufType.INT32);
      s.fixed(4, (v) => v.setInt32(0, value, true));
    });
  }
  /** A key with an f32 value. */
  f32(key: string, value: number): this {
    return this.#add(key, (s) => {
      s.u32(GgufType.FLOAT32);
      s.fixed(4, (v) => v.setFloat32(0, value, true));
    });
  }
  /** A key with a bool value. */
  bool(key: string, value: boolean): this {
    return this.#add(key, (s) => (s.u32(GgufType.BOOL), s.push(new Uint8Array([value ? 1 : 0]))));
  }
  /** A key with a UTF-8 string value. */
  string(key: string, value: string): this {
    return this.#add(key, (s) => (s.u32(GgufType.STRING), s.str(value)));
  }
  /** A key with an array of strings. */
  strings(key: string, values: readonly string[]): this {
    return this.#add(key, (s) => {
      s.u32(GgufType.ARRAY);
      s.u32(GgufType.STRING);
      s.u64(values.length);
      for (const value of values) s.str(value);
    });
  }
  /** A key with an array of f32. */
  f32s(key: string, values: readonly number[]): this {
    return this.#add(key, (s) => {
      s.u32(GgufType.ARRAY);
      s.u32(GgufType.FLOAT32);
      s.u64(values.length);
      s.fixed(4 * values.length, (v) => values.forEach((x, i) => v.setFloat32(4 * i, x, true)));
    });
  }
  /** A key with an array of i32. */
  i32s(key: string, values: readonly number[]): this {
    return this.#add(key, (s) => {
      s.u32(GgufType.ARRAY);
      s.u32(GgufType.INT32);
      s.u64(values.length);
      s.fixed(4 * values.length, (v) => values.forEach((x, i) => v.setInt32(4 * i, x, true)));
    });
  }

  /**
   * A tensor. `dims` are GGUF order (ne[0], the contiguous one, first). F32 `data` must hold
   * exactly the product of `dims` values. Without `data` the tensor is only declared: its info
   * and offset are written but no bytes (then no tensor of the file may have data).
   */
  tensor(name: string, dims: readonly number[], data?: Float32Array, type: number = GgmlType.F32) {
    const elements = dims.reduce((a, b) => a * b, 1);
    if (ELEMENT_BYTES[type] === undefined) throw new Error(`unsupported ggml type ${type}`);
    if (data && (type !== GgmlType.F32 || data.length !== elements)) {
      throw new Error(`tensor ${name}: ${data.length} values for dims ${dims.join("x")}`);
    }
    const bytes = data ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : undefined;
    this.#tensors.push({
      name,
      dims: [...dims],
      type,
      data: bytes,
      bytes: elements * ELEMENT_BYTES[type],
    });
    return this;
  }

  /** The whole file: header, tensor infos, padding, then the (aligned) data of every tensor. */
  bytes(): Uint8Array {
    const withData = this.#tensors.filter((t) => t.data).length;
    if (withData !== 0 && withData !== this.#tensors.length) {
      throw new Error("either every tensor has data or none has");
    }
    const s = new Sink();
    s.push(new TextEncoder().encode("GGUF"));
    s.u32(3);
    s.u64(this.#tensors.length);
    s.u64(this.#kv.length);
    for (const write of this.#kv) write(s);
    let offset = 0;
    for (const t of this.#tensors) {
      s.str(t.name);
      s.u32(t.dims.length);
      for (const d of t.dims) s.u64(d);
      s.u32(t.type);
      s.u64(offset);
      offset += Math.ceil(t.bytes / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;
    }
    s.pad(GGUF_ALIGNMENT);
    if (withData) {
      for (const t of this.#tensors) {
        s.push(t.data!);
        s.pad(GGUF_ALIGNMENT);
      }
    }
    return concatBytes(s.parts);
  }

  #add(key: string, write: (sink: Sink) => void): this {
    this.#kv.push((s) => (s.str(key), write(s)));
    return this;
  }
}
