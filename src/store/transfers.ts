/**
 * Bookkeeping of work on one model at a time: a lock per model id, so that committing a file
 * and deleting a model never interleave, and the transfers (uploads, downloads) in progress per
 * id, so that a delete can cancel them.
 *
 * @module
 */
import { KeyedLock } from "../storage/keyed_lock.ts";

/** Locks and running transfers, keyed by model id. */
export class Transfers {
  #running = new Map<string, Set<AbortController>>();

  readonly #locks = new KeyedLock();

  /** Runs `work` once every earlier `exclusive` call for the same id has finished. */
  exclusive<T>(id: string, work: () => Promise<T>): Promise<T> {
    return this.#locks.exclusive(id, work);
  }

  /** Registers a transfer for `id`; its signal aborts when the model is deleted. */
  begin(id: string): AbortController {
    const controller = new AbortController();
    const set = this.#running.get(id) ?? new Set();
    set.add(controller);
    this.#running.set(id, set);
    return controller;
  }

  /** Unregisters a finished transfer. */
  end(id: string, controller: AbortController): void {
    const set = this.#running.get(id);
    set?.delete(controller);
    if (set?.size === 0) this.#running.delete(id);
  }

  /** Aborts every transfer running for `id`. */
  cancelAll(id: string, reason: string): number {
    const set = this.#running.get(id);
    for (const controller of set ?? []) controller.abort(new Error(reason));
    return set?.size ?? 0;
  }

  /** Aborts every transfer of every model with `reason`. */
  cancelEverything(reason: Error): void {
    for (const set of this.#running.values()) {
      for (const controller of set) controller.abort(reason);
    }
  }
}
