/**
 * The log budget of a container: 100 lines or 64 KiB a second. Applied where a microservice's
 * lines are made (the sandbox, so that a flood never queues on the channel) and again where the
 * node keeps them (which also hears the process's stderr). Both sides import it: it imports
 * nothing, and takes its clock (the sandbox's is the one its code cannot replace).
 *
 * @module
 */

/** Lines a container may log in a second. */
export const LINES_PER_SECOND = 100;
/** Bytes (characters) a container may log in a second. */
export const BYTES_PER_SECOND = 64 * 1024;

/** A one-second window of the budget. */
export class LogRate {
  #windowStart = 0;
  #lines = 0;
  #bytes = 0;
  #dropped = 0;
  readonly #now: () => number;

  /** `now`: the clock, milliseconds (the sandbox passes its own: worker/intrinsics.ts). */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /**
   * Whether a line of `size` characters fits. `onDropped` hears, once a new second begins, how
   * many lines the last ones dropped.
   */
  admit(size: number, onDropped: (count: number) => void): boolean {
    const now = this.#now();
    if (now - this.#windowStart >= 1000) {
      this.#windowStart = now;
      this.#lines = 0;
      this.#bytes = 0;
      if (this.#dropped > 0) {
        const dropped = this.#dropped;
        this.#dropped = 0;
        onDropped(dropped);
      }
    }
    this.#lines++;
    this.#bytes += size;
    if (this.#lines > LINES_PER_SECOND || this.#bytes > BYTES_PER_SECOND) {
      this.#dropped++;
      return false;
    }
    return true;
  }
}

/** The line that says how many were dropped. */
export function droppedLine(count: number): string {
  return `dropped ${count} log lines (over ${LINES_PER_SECOND} lines or ${BYTES_PER_SECOND} bytes a second)`;
}
