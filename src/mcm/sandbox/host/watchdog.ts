/**
 * The container's limits, kept by its host thread, which runs no user code: memory, and the CPU
 * the microservice's thread uses while it serves no request. Over either, the container ends
 * with a code the node reads as the reason (../channel_protocol.ts, EXIT_*) and restarts it.
 *
 * Memory is the whole process's (JavaScript heap, ArrayBuffers, WebAssembly memories, native)
 * when the container has a process of its own. In a client's process, shared by several
 * containers (tenant_host.ts), it is the worker's heap and external memory as the worker
 * reports it with its CPU samples; the process's total is watched by tenant_host.ts.
 *
 * @module
 */
import { EXIT_CPU_BUDGET, EXIT_OUT_OF_MEMORY, type WatchdogLimits } from "../channel_protocol.ts";
import { type CpuSample, REQUESTS_BEGUN, REQUESTS_IN_FLIGHT } from "../host_protocol.ts";

/** Whose memory the watchdog counts (see the module's documentation). */
export type MemoryScope = "process" | "worker";

/** A watched container, as its host sees it. */
export interface ContainerWatch {
  /** Takes the worker's sample. */
  sample(sample: CpuSample): void;
  /** The heap and external bytes the worker last reported (0 before its first sample). */
  heap(): number;
  /** Milliseconds since the worker last reported. */
  silence(): number;
  /** Whether it is serving a request now. */
  serving(): boolean;
  /** The lateness of its reports since the last call, milliseconds. */
  takeLag(): number;
  /** Whether it served a request since the last call (or serves one now). */
  takeBusy(): boolean;
  /**
   * Its CPU time so far, microseconds, as the host estimates it (a worker that does not
   * measure its own: tenant_host.ts); counted as a sample's `micros` is.
   */
  charge(micros: number): void;
  /** Stops watching (the container ended). */
  stop(): void;
}

/** The shared activity counters. */
export function activityBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(8);
}

/** A report this late (ms) or less came on time: the scheduler's jitter on a loaded machine. */
export const LAG_JITTER_MS = 10;
/** How long silence is allowed while it serves nothing. */
const IDLE_SILENCE_MS = 3000;
/**
 * A host's charge (a client's process) leaves a container this silent to the silence check:
 * far beyond a yielding loop's lateness (SAMPLE_MS and its busy spell), well within
 * IDLE_SILENCE_MS.
 */
const CHARGED_SILENCE_MS = 1000;
/** Silence allowed before the first sample, which comes once the code loaded (default). */
const LOAD_SILENCE_MS = 10_000;
const MEMORY_CHECK_MS = 100;

/** Megabytes, rounded, for messages. */
function mb(bytes: number): number {
  return Math.round(bytes / 2 ** 20);
}

/**
 * Watches a container; `stop(code, why)` ends it. `activity` holds the worker's request
 * counters; `scope` says whose memory counts.
 */
export function watchContainer(
  limits: WatchdogLimits,
  stop: (code: number, why: string) => void,
  activity: SharedArrayBuffer,
  scope: MemoryScope = "process",
  /** Bytes the host holds for the container (its outbound requests' bodies). */
  held: () => number = () => 0,
): ContainerWatch {
  const counters = new Int32Array(activity);
  let last: { at: number; heap: number; lagMs: number } | undefined;
  let bucketMs = Math.min(limits.idleCpuBurstMs, limits.idleCpuStartMs ?? limits.idleCpuBurstMs);
  const started = Date.now();
  let stopped = false;
  const end = (code: number, why: string) => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    stop(code, why);
  };

  const timer = setInterval(() => {
    const rss = scope === "process" ? Deno.memoryUsage().rss : 0;
    if (rss > limits.memoryBytes) {
      return end(
        EXIT_OUT_OF_MEMORY,
        `out of memory: the process used ${mb(rss)} MB of its ${mb(limits.memoryBytes)} MB`,
      );
    }
    const silence = Date.now() - (last?.at ?? started);
    const serving = Atomics.load(counters, REQUESTS_IN_FLIGHT) > 0;
    const allowed = !last
      ? limits.loadSilenceMs ?? LOAD_SILENCE_MS
      : serving
      ? limits.busySilenceMs
      : IDLE_SILENCE_MS;
    if (silence > allowed) {
      end(
        EXIT_CPU_BUDGET,
        `the microservice's thread ran ${silence} ms without yielding${
          serving ? "" : " while serving no request"
        } (a runaway loop?)`,
      );
    }
  }, MEMORY_CHECK_MS);

  /** CPU time so far, microseconds: counted against the budget in periods without requests. */
  let cpu: { at: number; micros: number; begun: number } | undefined;
  let begunAtTake = 0;
  const charge = (micros: number) => {
    const now = Date.now();
    const begun = Atomics.load(counters, REQUESTS_BEGUN);
    if (cpu) {
      const busy = begun !== cpu.begun || Atomics.load(counters, REQUESTS_IN_FLIGHT) > 0;
      const usedMs = (micros - cpu.micros) / 1000;
      bucketMs = Math.min(
        limits.idleCpuBurstMs,
        bucketMs + (now - cpu.at) * limits.idleCpuShare - (busy ? 0 : usedMs),
      );
    }
    cpu = { at: now, micros, begun };
    // A thread silent this long runs without yielding: the silence check names that, as it
    // does where the thread measures itself (it reports nothing then); the bucket stays spent.
    const silent = Date.now() - (last?.at ?? started) > CHARGED_SILENCE_MS;
    if (bucketMs < 0 && !silent) {
      end(
        EXIT_CPU_BUDGET,
        `the microservice used more CPU than its budget while serving no request (${
          Math.round(limits.idleCpuShare * 100)
        }% of a core, ${limits.idleCpuBurstMs} ms at once)`,
      );
    }
  };

  const sample = (sample: CpuSample) => {
    if (stopped) return;
    const used = scope === "worker" ? sample.heap + held() : 0;
    if (used > limits.heapBytes) {
      return end(
        EXIT_OUT_OF_MEMORY,
        `out of memory: its heap, buffers and pending outbound requests used ${
          mb(used)
        } MB of its ${mb(limits.heapBytes)} MB`,
      );
    }
    // Lateness within LAG_JITTER_MS is the scheduler's (a loaded machine), not a busy thread's.
    const lagMs = Math.max(0, (sample.lagMs ?? 0) - LAG_JITTER_MS);
    last = { at: Date.now(), heap: sample.heap, lagMs: (last?.lagMs ?? 0) + lagMs };
    if (sample.micros !== undefined) charge(sample.micros);
  };
  return {
    sample,
    heap: () => last?.heap ?? 0,
    silence: () => Date.now() - (last?.at ?? started),
    serving: () => Atomics.load(counters, REQUESTS_IN_FLIGHT) > 0,
    takeBusy: () => {
      const begun = Atomics.load(counters, REQUESTS_BEGUN);
      const busy = begun !== begunAtTake || Atomics.load(counters, REQUESTS_IN_FLIGHT) > 0;
      begunAtTake = begun;
      return busy;
    },
    takeLag: () => {
      const lag = last?.lagMs ?? 0;
      if (last) last.lagMs = 0;
      return lag;
    },
    charge: (micros) => {
      if (!stopped) charge(micros);
    },
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
