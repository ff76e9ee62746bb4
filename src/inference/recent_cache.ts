/**
 * A small map whose entries live a fixed time: what mesh routing reuses for a few seconds (a
 * node request's signature, the check of one), so that a burst of requests pays the Ed25519
 * work once. Bounded: the oldest entry goes when it is full.
 *
 * @module
 */

/** Values by key, each kept `ttlMs` after it was put, `max` at most. */
export class RecentCache<V> {
  readonly #ttlMs: number;
  readonly #max: number;
  readonly #entries = new Map<string, { value: V; until: number }>();
  /** The values being made, by key: a second caller waits for the first's. */
  readonly #pending = new Map<string, Promise<V>>();

  constructor(ttlMs: number, max: number) {
    this.#ttlMs = ttlMs;
    this.#max = max;
  }

  /** The value of `key` if it was put less than the time ago. */
  get(key: string, now = Date.now()): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.until > now) return entry.value;
    this.#entries.delete(key);
    return undefined;
  }

  /** Keeps `value` for `key`. */
  set(key: string, value: V, now = Date.now()): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.#max) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { value, until: now + this.#ttlMs });
  }

  /**
   * The value of `key`, made by `make` (and kept) unless it is fresh. Callers that miss together
   * share one `make` (its promise is what is kept); a failure is not kept.
   */
  through(key: string, make: () => Promise<V>): Promise<V> {
    const kept = this.#pending.get(key) ?? this.get(key);
    if (kept !== undefined) return Promise.resolve(kept);
    const made = make();
    this.#pending.set(key, made);
    return made.then(
      (value) => {
        this.set(key, value);
        return value;
      },
    ).finally(() => {
      if (this.#pending.get(key) === made) this.#pending.delete(key);
    });
  }
}
