/**
 * Timing helpers shared by every package that waits: the back-off of retries (shaped like
 * `@std/async`'s retry options) and promises that give up when a signal aborts.
 *
 * @module
 */
export * from "./abortable.ts";
export * from "./backoff.ts";
