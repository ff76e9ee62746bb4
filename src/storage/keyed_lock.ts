/**
 * One piece of work at a time per key (a model id, a container id): later calls wait for the
 * earlier ones, whether those succeeded or failed.
 *
 * @module
 */

/** Serialises work by key. */
export class KeyedLock {
  #tails = new Map<string, Promise<unknown>>();

  /** Runs `work` once every earlier call for the same key has finished. */
  async exclusive<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const current = previous.catch(() => {}).then(work);
    this.#tails.set(key, current);
    try {
      return await current;
    } finally {
      if (this.#tails.get(key) === current) this.#tails.delete(key);
    }
  }
}
