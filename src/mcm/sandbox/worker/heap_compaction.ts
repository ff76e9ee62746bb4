/**
 * When the sandboxed worker compacts its heap (host_globals.ts, `compact`: V8's last-resort
 * collection, which gives the heap's unused pages back, a few milliseconds of the worker's
 * thread for a small heap). V8 does it by itself only after a full collection, which a small
 * microservice may never need: its pages stay as its start and its last burst of requests left
 * them, about 1.5 MiB of a container of 7 in a client's process.
 *
 * So the worker compacts once COMPACT_AFTER_MS after its code loaded (the start's garbage and,
 * usually, its first requests'), and again when it went QUIET_MS without a request after
 * serving some, at most every MIN_INTERVAL_MS and only while its heap is small (SMALL_HEAP_BYTES:
 * the collection's time grows with the heap, and it is charged to the container's CPU; a large
 * heap has full collections of its own anyway).
 *
 * @module
 */
import { AtomicsLoad } from "./intrinsics.ts";
import { REQUESTS_BEGUN, REQUESTS_IN_FLIGHT } from "../host_protocol.ts";

/** After the code loaded, the first compaction comes this much later. */
export const COMPACT_AFTER_MS = 1000;
/** After serving, a compaction comes once no request began for this long. */
export const QUIET_MS = 10_000;
/** Compactions after the first are at least this far apart. */
export const MIN_INTERVAL_MS = 30_000;
/** Compactions after the first only while the heap and buffers in use are below this. */
export const SMALL_HEAP_BYTES = 32 * 2 ** 20;

/** What the schedule needs of the worker (host_globals.ts, Taken). */
export interface Compactable {
  compact(): void;
  /** Bytes of heap and external memory in use. */
  heap(): number;
}

/**
 * The compaction schedule of a worker whose code loaded at `loaded` (performance.now): call the
 * result at each of its reports with the time; it compacts `worker` when one is due.
 * `activity` holds the requests counters (watchdog.ts).
 */
export function compactionSchedule(
  loaded: number,
  activity: Int32Array,
  worker: Compactable,
): (now: number) => void {
  let last: number | undefined;
  let served = false;
  let begun = AtomicsLoad(activity, REQUESTS_BEGUN);
  let quietSince = loaded;
  return (now) => {
    const count = AtomicsLoad(activity, REQUESTS_BEGUN);
    if (count !== begun || AtomicsLoad(activity, REQUESTS_IN_FLIGHT) > 0) {
      begun = count;
      quietSince = now;
      served = true;
    }
    const due = last === undefined
      ? now - loaded >= COMPACT_AFTER_MS
      : served && now - quietSince >= QUIET_MS && now - last >= MIN_INTERVAL_MS &&
        worker.heap() < SMALL_HEAP_BYTES;
    if (!due) return;
    last = now;
    served = false;
    worker.compact();
  };
}
