/**
 * A bounded queue of peer checks: a few run at once, each key (peer and address) is queued at
 * most once, and a key that failed is not tried again for a while. Announcements can arrive in
 * floods (50 nodes starting together, or a forger); this keeps the HTTP checks they cause
 * bounded.
 *
 * @module
 */

/** Limits of a CheckQueue. */
export interface CheckQueueLimits {
  /** Checks running at once. */
  concurrency: number;
  /** Checks waiting; more are dropped (announcements come again). */
  maxWaiting: number;
  /** A failed key is not run again for this long, unless forced. */
  retryMs: number;
}

/** The queue. */
export class CheckQueue {
  readonly #limits: CheckQueueLimits;
  /** Keys running or waiting. */
  readonly #keys = new Set<string>();
  readonly #waiting: (() => void)[] = [];
  readonly #failedAt = new Map<string, number>();
  #running = 0;

  constructor(limits: CheckQueueLimits) {
    this.#limits = limits;
  }

  /**
   * Queues `check` under `key`, unless that key is already queued, the queue is full, or the key
   * failed within the retry time (`force` ignores that). A rejected check counts as a failure.
   */
  add(key: string, check: () => Promise<void>, force = false): void {
    const { concurrency, maxWaiting, retryMs } = this.#limits;
    if (this.#keys.has(key) || this.#keys.size >= concurrency + maxWaiting) return;
    const failed = this.#failedAt.get(key);
    if (!force && failed !== undefined && failed + retryMs > Date.now()) return;
    this.#keys.add(key);
    this.#waiting.push(() => {
      check()
        .then(() => this.#failedAt.delete(key), () => this.#failedAt.set(key, Date.now()))
        .finally(() => {
          this.#keys.delete(key);
          this.#running--;
          this.#start();
        });
    });
    this.#start();
  }

  /** Forgets failures older than the retry time. */
  prune(now = Date.now()): void {
    for (const [key, at] of this.#failedAt) {
      if (at + this.#limits.retryMs <= now) this.#failedAt.delete(key);
    }
  }

  #start(): void {
    while (this.#running < this.#limits.concurrency && this.#waiting.length > 0) {
      this.#running++;
      this.#waiting.shift()!();
    }
  }
}
