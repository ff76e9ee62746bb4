/**
 * Bounds the memories a WebAssembly module defines, before it is compiled: each memory of its
 * memory section gets a maximum no larger than what the container may still allocate, so that
 * the module's own `memory.grow` fails inside the module (it returns -1, as at any memory's
 * limit) instead of taking the container past MCM.MEMORY_MB. The sizes it declares are kept for
 * the charge at instantiation (memory_charge.ts). Imported memories are the microservice's own
 * `WebAssembly.Memory` objects, bounded where they are made.
 *
 * Everything here runs on intrinsics (intrinsics.ts): the bytes are the microservice's.
 *
 * @module
 */
import {
  ArrayBufferIsView,
  ArrayPrototypePush,
  MathFloor,
  MathMin,
  SafeRangeError,
  SafeUint8Array,
  TypedArrayPrototypeGetBuffer,
  TypedArrayPrototypeGetByteLength,
  TypedArrayPrototypeGetByteOffset,
  TypedArrayPrototypeGetLength,
  TypedArrayPrototypeSet,
  viewOfBytes,
} from "./intrinsics.ts";

/** Bytes in a WebAssembly page. */
export const PAGE_BYTES = 65_536;

const MEMORY_SECTION = 5;
const HAS_MAX = 1;
const CUSTOM_PAGE_SIZE = 8;

/** A memory the module defines: its initial size and its maximum once bounded, in pages. */
export interface DefinedMemory {
  initialPages: number;
  maxPages: number;
}

/** The module's bytes, bounded, and the memories it defines. */
export interface BoundedModule {
  bytes: Uint8Array;
  memories: DefinedMemory[];
}

/**
 * A copy of a BufferSource's bytes (a later change by the microservice cannot reach it). Never
 * through `slice` or `subarray`, whose result's class the microservice could pick (species).
 */
export function copyOfSource(source: unknown): Uint8Array {
  const view = ArrayBufferIsView(source)
    ? new SafeUint8Array(
      TypedArrayPrototypeGetBuffer(source as ArrayBufferView),
      TypedArrayPrototypeGetByteOffset(source as ArrayBufferView),
      TypedArrayPrototypeGetByteLength(source as ArrayBufferView),
    )
    // An ArrayBuffer or a SharedArrayBuffer (else the native compile says what is wrong).
    : new SafeUint8Array(source as ArrayBuffer);
  const copy = new SafeUint8Array(TypedArrayPrototypeGetLength(view));
  TypedArrayPrototypeSet(copy, view);
  return copy;
}

function readLeb(bytes: Uint8Array, at: number): [value: number, next: number] {
  let value = 0;
  let scale = 1;
  while (true) {
    if (at >= TypedArrayPrototypeGetLength(bytes)) {
      throw new SafeRangeError("WebAssembly module: truncated");
    }
    const byte = bytes[at++];
    value += (byte & 0x7f) * scale;
    scale *= 128;
    if ((byte & 0x80) === 0) return [value, at];
  }
}

function writeLeb(out: number[], value: number): void {
  do {
    let byte = value % 128;
    value = MathFloor(value / 128);
    if (value > 0) byte |= 0x80;
    ArrayPrototypePush(out, byte);
  } while (value > 0);
}

/**
 * Bounds the memories `bytes` defines at `allowedPages` each (never below a memory's initial
 * size: the charge at instantiation refuses what does not fit). A module that is not valid
 * WebAssembly is returned as it is, for the native compile to refuse.
 */
export function boundMemories(bytes: Uint8Array, allowedPages: number): BoundedModule {
  const memories: DefinedMemory[] = [];
  const length = TypedArrayPrototypeGetLength(bytes);
  if (length < 8 || bytes[0] !== 0 || bytes[1] !== 0x61) return { bytes, memories };
  let at = 8;
  while (at < length) {
    const id = bytes[at];
    const [size, content] = readLeb(bytes, at + 1);
    const end = content + size;
    if (id !== MEMORY_SECTION) {
      at = end;
      continue;
    }
    const section: number[] = [];
    let [count, cursor] = readLeb(bytes, content);
    writeLeb(section, count);
    while (count-- > 0) {
      const flags = bytes[cursor++];
      if (flags & CUSTOM_PAGE_SIZE) {
        throw new SafeRangeError("WebAssembly memories with a custom page size are not supported");
      }
      let initial: number;
      let declared = Infinity;
      [initial, cursor] = readLeb(bytes, cursor);
      if (flags & HAS_MAX) [declared, cursor] = readLeb(bytes, cursor);
      const maxPages = MathMin(declared, allowedPages) < initial
        ? initial
        : MathMin(declared, allowedPages);
      ArrayPrototypePush(section, flags | HAS_MAX);
      writeLeb(section, initial);
      writeLeb(section, maxPages);
      ArrayPrototypePush(memories, { initialPages: initial, maxPages });
    }
    if (cursor !== end) throw new SafeRangeError("WebAssembly module: malformed memory section");
    const head: number[] = [MEMORY_SECTION];
    writeLeb(head, section.length);
    const out = new SafeUint8Array(length - (end - at) + head.length + section.length);
    TypedArrayPrototypeSet(out, viewOfBytes(bytes, 0, at), 0);
    TypedArrayPrototypeSet(out, head, at);
    TypedArrayPrototypeSet(out, section, at + head.length);
    TypedArrayPrototypeSet(out, viewOfBytes(bytes, end, length), at + head.length + section.length);
    return { bytes: out, memories };
  }
  return { bytes, memories };
}
