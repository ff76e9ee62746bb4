/**
 * Serialized JSON bodies kept until the data behind them changes. The owner of the data counts
 * its writes (a generation); a body computed at another generation is thrown away. For read-heavy
 * endpoints such as listings, this skips the database and JSON.stringify on every repeat.
 *
 * @module
 */
import type { JsonText } from "./reply.ts";

/** A cache of JSON bodies for one source of data. */
export class JsonCache {
  #generation = -1;
  #bodies = new Map<string, string>();
  readonly #maxEntries: number;

  /** A cache holding at most `maxEntries` bodies (all are dropped when it is full). */
  constructor(maxEntries = 4096) {
    this.#maxEntries = maxEntries;
  }

  /** The JSON text for `key` at `generation` if it is cached; nothing is computed. */
  peek<B>(key: string, generation: number): JsonText<B> | undefined {
    return generation === this.#generation
      ? this.#bodies.get(key) as JsonText<B> | undefined
      : undefined;
  }

  /** The JSON text for `key` at `generation`, computed by `compute` when not cached. */
  get<B>(key: string, generation: number, compute: () => B): JsonText<B> {
    if (generation !== this.#generation || this.#bodies.size >= this.#maxEntries) {
      this.#bodies.clear();
      this.#generation = generation;
    }
    let body = this.#bodies.get(key);
    if (body === undefined) {
      body = JSON.stringify(compute());
      this.#bodies.set(key, body);
    }
    return body as JsonText<B>;
  }
}
