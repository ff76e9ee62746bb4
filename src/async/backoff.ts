/**
 * Exponential back-off, shaped like the options of `@std/async`'s `retry` (which JSR would
 * provide; it cannot be installed from this machine's registries): the delay before attempt `n`
 * grows from `minTimeout` by `multiplier` up to `maxTimeout`, spread by ±`jitter`.
 *
 * @example
 * ```ts
 * import { backoffDelay } from "./backoff.ts";
 * backoffDelay(3, { minTimeout: 500, maxTimeout: 8000 }); // 2000
 * ```
 *
 * @module
 */

/** How the delays grow (the names of `@std/async`'s RetryOptions). */
export interface BackoffOptions {
  /** The first delay, milliseconds. */
  minTimeout: number;
  /** The largest delay, milliseconds. */
  maxTimeout: number;
  /** Growth per attempt; default 2. */
  multiplier?: number;
  /** Spread as a share of the delay (0.2: ±20%), so that many clients do not retry in step. */
  jitter?: number;
}

/** The delay before attempt `attempt` (1 for the first retry), in milliseconds. */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const { minTimeout, maxTimeout, multiplier = 2, jitter = 0 } = options;
  const delay = Math.min(maxTimeout, minTimeout * multiplier ** Math.max(0, attempt - 1));
  return jitter === 0 ? delay : delay * (1 - jitter + 2 * jitter * random());
}
