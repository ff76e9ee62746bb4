/**
 * Reading a byte stream (a request or response body, a file) into buffers of one's own.
 *
 * @example
 * ```ts
 * import { byobReader } from "./byob_reader.ts";
 * const reader = byobReader(new Blob(["hello"]).stream());
 * const { value } = await reader!.read(new Uint8Array(16));
 * ```
 *
 * @module
 */

/**
 * A BYOB reader of `source` when it is a byte stream, else undefined. Reading into a buffer that
 * is handed back each time leaves nothing for the garbage collector, where a default reader
 * allocates every chunk (and a transfer's chunks pile up until V8 collects them in a batch).
 */
export function byobReader(source: unknown): ReadableStreamBYOBReader | undefined {
  if (!(source instanceof ReadableStream)) return undefined;
  try {
    return source.getReader({ mode: "byob" });
  } catch {
    return undefined; // not a byte stream
  }
}
