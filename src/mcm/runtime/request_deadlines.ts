/**
 * The deadlines of requests to microservices (MCM.MAX_EXECUTION_TIME_SEC), kept by one sweep
 * instead of a timer per request: in Deno `setTimeout` is Node's, whose timer objects cost a
 * routed request about 6% of the node's CPU time (a profile at 13k req/s), twice (set, then
 * cleared). The sweep runs every SWEEP_MS while any deadline is pending and stops once none is,
 * so a deadline fires up to SWEEP_MS late: its request then gets 504, or its body is cut off.
 *
 * @module
 */

/** How often pending deadlines are checked, milliseconds (how late one may fire, at most). */
export const SWEEP_MS = 100;

/** A pending deadline: `done()` once its request completed (then it never fires). */
export interface Deadline {
  done(): void;
}

interface Entry extends Deadline {
  at: number;
  onLate: () => void;
}

/** Deadlines checked by one periodic sweep. */
export class RequestDeadlines {
  readonly #pending = new Set<Entry>();
  #sweep: ReturnType<typeof setInterval> | undefined;
  readonly #now: () => number;

  /** `now` is the clock (tests pass their own). */
  constructor(now: () => number = performance.now.bind(performance)) {
    this.#now = now;
  }

  /** Deadlines not done nor fired. */
  get size(): number {
    return this.#pending.size;
  }

  /** Calls `onLate` once `ms` have passed, unless `done()` came first. */
  add(ms: number, onLate: () => void): Deadline {
    const pending = this.#pending;
    const entry: Entry = {
      at: this.#now() + ms,
      onLate,
      done: () => void pending.delete(entry),
    };
    pending.add(entry);
    this.#sweep ??= setInterval(() => this.check(), SWEEP_MS);
    return entry;
  }

  /** Fires the deadlines that passed; the sweep stops when none is left (the timer's tick). */
  check(): void {
    const now = this.#now();
    for (const entry of this.#pending) {
      if (entry.at > now) continue;
      this.#pending.delete(entry);
      entry.onLate();
    }
    if (this.#pending.size === 0) this.stop();
  }

  /** Stops the sweep (pending deadlines no longer fire until the next `add`). */
  stop(): void {
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }
}
