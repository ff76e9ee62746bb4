/**
 * The write buffers of file sinks (src/storage/file_sinks.ts), handed from a finished file to
 * the next.
 *
 * @example
 * ```ts
 * import { BufferPool } from "./file_sinks_pool.ts";
 * const pool = new BufferPool(512 << 10, 16);
 * const buffer = pool.take(); // a new one: the pool is empty
 * pool.give(buffer); // kept for the next take
 * ```
 *
 * @module
 */

/**
 * Buffers of one size, at most `max` of them kept. A file's sink used to allocate its own and
 * drop them at the end, and a transfer makes too little garbage for the collector to come by
 * soon: each upload into a node added its 8 MiB window to the RSS (three 1 GiB uploads into one
 * node: 110, 118, then 128 MB).
 */
export class BufferPool {
  readonly #bytes: number;
  readonly #max: number;
  readonly #free: ArrayBuffer[] = [];

  /** A pool of buffers of `bytes`, keeping `max` at most. */
  constructor(bytes: number, max: number) {
    this.#bytes = bytes;
    this.#max = max;
  }

  /** A kept buffer, else a new one. Its bytes are whatever the last file left there. */
  take(): ArrayBuffer {
    return this.#free.pop() ?? new ArrayBuffer(this.#bytes);
  }

  /**
   * Keeps `buffer` for the next take, unless the pool is full or the buffer was moved away (to
   * a worker, or into a BYOB read): the caller must hold no view of it that it still uses.
   */
  give(buffer: ArrayBuffer): void {
    if (buffer.detached || buffer.byteLength !== this.#bytes) return;
    if (this.#free.length < this.#max && !this.#free.includes(buffer)) this.#free.push(buffer);
  }

  /** Lets the kept buffers go (nothing is being written for a while). */
  clear(): void {
    this.#free.length = 0;
  }
}
