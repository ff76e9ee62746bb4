/**
 * The container process's limits, kept by its host thread, which runs no user code: the
 * memory of the whole process (JavaScript heap, ArrayBuffers, WebAssembly memories, native), and
 * the CPU the microservice's thread uses while it serves no request. Over either, the process
 * ends with a code the node reads as the reason (container_channel.ts) and restarts it.
 *
 * @module
 */

/** Exit code: the process's memory went over its limit. */
export const EXIT_OUT_OF_MEMORY = 86;
/** Exit code: the microservice used more CPU than its budget, or stopped running. */
export const EXIT_CPU_BUDGET = 87;

/** The limits (spec/mcm.yaml, "Limits"). */
export interface WatchdogLimits {
  /** Resident memory of the whole process, bytes. */
  memoryBytes: number;
  /** CPU the microservice may use while serving no request, as a share of one core. */
  idleCpuShare: number;
  /** CPU it may use at once beyond that share (the bucket's size), milliseconds. */
  idleCpuBurstMs: number;
  /** How long the microservice's thread may go without reporting while serving a request. */
  busySilenceMs: number;
}

/** A report of the microservice's thread (sandbox_worker.ts). */
export interface CpuSample {
  /** Microseconds of CPU its thread used since it started. */
  micros: number;
}

/** Slots of the activity counters the worker shares with the watchdog (an Int32Array). */
export const REQUESTS_IN_FLIGHT = 0;
export const REQUESTS_BEGUN = 1;

/** The shared activity counters. */
export function activityBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(8);
}

/** How often the worker reports, and how long silence is allowed while it serves nothing. */
export const SAMPLE_MS = 250;
const IDLE_SILENCE_MS = 3000;
/** Silence allowed before the first sample, which comes once the code loaded. */
const LOAD_SILENCE_MS = 10_000;
const MEMORY_CHECK_MS = 100;

/**
 * Watches the process; `stop(code, why)` ends it. `activity` holds the worker's request
 * counters. Returns the sink for the worker's samples.
 */
export function watchContainer(
  limits: WatchdogLimits,
  stop: (code: number, why: string) => void,
  activity: SharedArrayBuffer,
): (sample: CpuSample) => void {
  const limitMb = Math.round(limits.memoryBytes / 2 ** 20);
  const counters = new Int32Array(activity);
  let last: { at: number; micros: number; begun: number } | undefined;
  let bucketMs = limits.idleCpuBurstMs;
  const started = Date.now();

  const timer = setInterval(() => {
    const rss = Deno.memoryUsage().rss;
    if (rss > limits.memoryBytes) {
      clearInterval(timer);
      return stop(
        EXIT_OUT_OF_MEMORY,
        `out of memory: the process used ${Math.round(rss / 2 ** 20)} MB of its ${limitMb} MB`,
      );
    }
    const silence = Date.now() - (last?.at ?? started);
    const serving = Atomics.load(counters, REQUESTS_IN_FLIGHT) > 0;
    const allowed = !last ? LOAD_SILENCE_MS : serving ? limits.busySilenceMs : IDLE_SILENCE_MS;
    if (silence > allowed) {
      clearInterval(timer);
      stop(
        EXIT_CPU_BUDGET,
        `the microservice's thread ran ${silence} ms without yielding${
          serving ? "" : " while serving no request"
        } (a runaway loop?)`,
      );
    }
  }, MEMORY_CHECK_MS);

  return (sample) => {
    const now = Date.now();
    const begun = Atomics.load(counters, REQUESTS_BEGUN);
    if (last) {
      // CPU counts against the budget only in a period without any request.
      const busy = begun !== last.begun || Atomics.load(counters, REQUESTS_IN_FLIGHT) > 0;
      const usedMs = (sample.micros - last.micros) / 1000;
      bucketMs = Math.min(
        limits.idleCpuBurstMs,
        bucketMs + (now - last.at) * limits.idleCpuShare - (busy ? 0 : usedMs),
      );
      if (bucketMs < 0) {
        clearInterval(timer);
        return stop(
          EXIT_CPU_BUDGET,
          `the microservice used more CPU than its budget while serving no request (${
            Math.round(limits.idleCpuShare * 100)
          }% of a core, ${limits.idleCpuBurstMs} ms at once)`,
        );
      }
    }
    last = { at: now, micros: sample.micros, begun };
  };
}
