/**
 * Serialized JSON bodies, and the 200 answers made of them, kept until the data behind them
 * changes. The owner of the data counts its writes (a generation); a body computed at another
 * generation is thrown away. For read-heavy endpoints such as listings, this skips the database
 * and JSON.stringify on every repeat.
 *
 * @module
 */
import { type JsonText, preparedJson, type Reply } from "./reply.ts";

/** A body, and the 200 answer made of it once asked for (reply.ts `preparedJson`). */
interface Entry {
  text: string;
  answer?: () => Response;
}

/** A cache of JSON bodies for one source of data. */
export class JsonCache {
  #generation = -1;
  #bodies = new Map<string, Entry>();
  readonly #maxEntries: number;

  /** A cache holding at most `maxEntries` bodies (all are dropped when it is full). */
  constructor(maxEntries = 4096) {
    this.#maxEntries = maxEntries;
  }

  /**
   * A 200 answer of the JSON text for `key` at `generation` if it is cached (nothing is
   * computed): a copy of one made the first time, the same status, headers and body.
   */
  answer<B>(key: string, generation: number): Reply<200, { json: B }> | undefined {
    if (generation !== this.#generation) return undefined;
    const entry = this.#bodies.get(key);
    if (entry === undefined) return undefined;
    entry.answer ??= preparedJson(entry.text as JsonText<B>);
    return entry.answer() as Reply<200, { json: B }>;
  }

  /** The JSON text for `key` at `generation`, computed by `compute` when not cached. */
  get<B>(key: string, generation: number, compute: () => B): JsonText<B> {
    if (generation !== this.#generation || this.#bodies.size >= this.#maxEntries) {
      this.#bodies.clear();
      this.#generation = generation;
    }
    let entry = this.#bodies.get(key);
    if (entry === undefined) {
      entry = { text: JSON.stringify(compute()) };
      this.#bodies.set(key, entry);
    }
    return entry.text as JsonText<B>;
  }
}
