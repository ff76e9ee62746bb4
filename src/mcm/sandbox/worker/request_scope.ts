/**
 * Which request the microservice's code is serving right now, as far as the sandbox can tell:
 * while its handler runs, and while a `context` callback runs of a call made in that request
 * (the reference's microservices chain callbacks: `http.request`'s success calls `ml`, whose
 * success writes to `res`). A call to the node made in a request is cancelled when that request
 * ends early (its client went away, or its time ran out), so that a generation nobody reads
 * stops. Code that continues in a promise or a timer of its own loses the request (JavaScript
 * has no async context yet); such calls run to their end.
 *
 * @module
 */

let current: AbortSignal | undefined;

/** The signal of the request being served now: aborted when it ends early. */
export function requestSignal(): AbortSignal | undefined {
  return current;
}

/** Runs `work` as part of the request of `signal` (none: as part of no request). */
export function inRequest<T>(signal: AbortSignal | undefined, work: () => T): T {
  const outer = current;
  current = signal;
  try {
    return work();
  } finally {
    current = outer;
  }
}

/**
 * Runs a callback the microservice gave `context`, as part of the request of `signal` (by
 * default the one being served now); its exception is logged, not left to kill the worker.
 */
export function callBack<T>(
  callback: ((value: T) => void) | undefined,
  value: T,
  signal: AbortSignal | undefined = current,
): void {
  if (typeof callback !== "function") return;
  try {
    inRequest(signal, () => callback(value));
  } catch (error) {
    console.error("a context callback threw:", error);
  }
}
