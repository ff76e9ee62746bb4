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

/** A key's check: the one to run, and whether it is running. */
interface Entry {
  check: () => Promise<void>;
  running: boolean;
  /** A newer check asked for while this one ran: it runs next (the peer changed meanwhile). */
  again?: { check: () => Promise<void>; force: boolean };
}

/** The queue. */
export class CheckQueue {
  readonly #limits: CheckQueueLimits;
  /** Keys running or waiting. */
  readonly #entries = new Map<string, Entry>();
  readonly #waiting: string[] = [];
  readonly #failedAt = new Map<string, number>();
  #running = 0;

  constructor(limits: CheckQueueLimits) {
    this.#limits = limits;
  }

  /**
   * Queues `check` under `key`, unless the queue is full or the key failed within the retry
   * time (`force` ignores that). A key already waiting takes the newer check; a key running
   * runs once more afterwards with the newest check, so that a change announced during a check
   * is not lost (unless this run failed and the newer one is not forced: the retry time holds).
   * A rejected check counts as a failure.
   */
  add(key: string, check: () => Promise<void>, force = false): void {
    const { concurrency, maxWaiting, retryMs } = this.#limits;
    const entry = this.#entries.get(key);
    if (entry) {
      if (entry.running) entry.again = { check, force: force || entry.again?.force === true };
      else entry.check = check;
      return;
    }
    if (this.#entries.size >= concurrency + maxWaiting) return;
    const failed = this.#failedAt.get(key);
    if (!force && failed !== undefined && failed + retryMs > Date.now()) return;
    this.#entries.set(key, { check, running: false });
    this.#waiting.push(key);
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
      const key = this.#waiting.shift()!;
      const entry = this.#entries.get(key)!;
      this.#running++;
      entry.running = true;
      let ok = false;
      entry.check()
        .then(() => {
          ok = true;
          this.#failedAt.delete(key);
        }, () => this.#failedAt.set(key, Date.now()))
        .finally(() => {
          this.#running--;
          if (entry.again && (ok || entry.again.force)) {
            // Runs again with the newest check, at the end of the line.
            this.#entries.set(key, { check: entry.again.check, running: false });
            this.#waiting.push(key);
          } else {
            this.#entries.delete(key);
          }
          this.#start();
        });
    }
  }
}
