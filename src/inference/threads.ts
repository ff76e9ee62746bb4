/**
 * How many threads the engine gives a model. llama.cpp's default (its idea of the machine's
 * cores, 4 on our 2-core VMs) oversubscribes small machines badly: threads spin-wait for each
 * other at every layer, so on 2 cores a 260K-parameter model generated 100 tokens in 55 s with 4
 * threads, 1.5 s with 2 and 50 ms with 1 (`../shared/notes/toolchain.md`). A thread pays off only
 * when each has enough of the weights to work on between those waits.
 *
 * @module
 */

/** Weights per thread below which another thread costs more in waiting than it computes. */
export const BYTES_PER_THREAD = 128 * 2 ** 20;

/**
 * The cores this process may really run on: Deno's count follows the CPU affinity mask and
 * cgroup quota (a container limited to 2 CPUs of a 64-core host gets 2).
 */
export function availableCores(): number {
  return Math.max(1, navigator.hardwareConcurrency || 1);
}

/**
 * Threads for a model of `modelBytes`: one per BYTES_PER_THREAD of weights, at least one and at
 * most the available cores; `configured` (inference.threads) wins when set.
 *
 * @example
 * ```ts
 * chooseThreads(1_200_000, 2); // 1: a tiny model on one core
 * chooseThreads(4_000_000_000, 2); // 2: a 4 GB model on every core there is
 * ```
 */
export function chooseThreads(
  modelBytes: number,
  cores: number = availableCores(),
  configured?: number,
): number {
  if (configured && configured > 0) return configured;
  return Math.min(cores, Math.max(1, Math.floor(modelBytes / BYTES_PER_THREAD)));
}
