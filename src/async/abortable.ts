/**
 * Iterating an async source until a signal aborts, shaped like `@std/async`'s `abortable` for
 * async iterables (JSR cannot be reached from this project's registries; swap when it can).
 *
 * @example
 * ```ts
 * import { abortable } from "./abortable.ts";
 *
 * const controller = new AbortController();
 * async function* numbers() {
 *   yield 1;
 *   yield 2;
 * }
 * for await (const n of abortable(numbers(), controller.signal)) {
 *   if (n === 1) controller.abort(); // the loop ends with the signal's reason
 * }
 * ```
 *
 * @module
 */

/**
 * Iterates `source` until `signal` aborts, without waiting for a stalled source to produce its
 * next chunk: a cancelled transfer stops at once even when the peer has gone quiet.
 */
export async function* abortable<T>(
  source: AsyncIterable<T>,
  signal?: AbortSignal,
): AsyncGenerator<T> {
  if (!signal) return yield* source;
  const iterator = source[Symbol.asyncIterator]();
  try {
    while (true) {
      signal.throwIfAborted();
      // A listener per read, removed when the read settles: racing every read against one
      // long-lived abort promise would keep each chunk reachable until the transfer ends.
      const result = await new Promise<IteratorResult<T>>((resolve, reject) => {
        const onAbort = () => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
        iterator.next().then(resolve, reject).finally(() =>
          signal.removeEventListener("abort", onAbort)
        );
      });
      if (result.done) return;
      yield result.value;
    }
  } finally {
    // Not awaited: a stalled source may never settle; the connection's end releases it.
    iterator.return?.()?.catch(() => {});
  }
}
