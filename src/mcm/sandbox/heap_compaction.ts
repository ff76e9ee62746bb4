/**
 * When the sandboxed worker compacts its heap (host_globals.ts, `compact`: V8's last-resort
 * collection, which gives the heap's unused pages back, a few milliseconds of the worker's
 * thread). V8 does it by itself only after a full collection, which a small microservice may
 * never need: its pages stay as its start and its last burst of requests left them, about
 * 1.5 MiB of a container of 7 in a client's process.
 *
 * So the worker compacts once COMPACT_AFTER_MS after its code loaded (the start's garbage and,
 * usually, its first requests'), and again whenever it went QUIET_MS without a request after
 * serving some: at most once per quiet spell, so that a busy container pays nothing and an
 * idle one gives its memory back.
 *
 * @module
 */
import { REQUESTS_BEGUN, REQUESTS_IN_FLIGHT } from "./watchdog.ts";

/** After the code loaded, the first compaction comes this much later. */
export const COMPACT_AFTER_MS = 1000;
/** After serving, a compaction comes once no request began for this long. */
export const QUIET_MS = 5000;

/**
 * The compaction schedule of a worker whose code loaded at `loaded` (performance.now):
 * call the result at each of its reports with the time; it calls `compact` when one is due.
 * `activity` holds the requests counters (watchdog.ts).
 */
export function compactionSchedule(
  loaded: number,
  activity: Int32Array,
  compact: () => void,
): (now: number) => void {
  let first = true;
  let served = false;
  let begun = Atomics.load(activity, REQUESTS_BEGUN);
  let quietSince = loaded;
  return (now) => {
    const count = Atomics.load(activity, REQUESTS_BEGUN);
    if (count !== begun || Atomics.load(activity, REQUESTS_IN_FLIGHT) > 0) {
      begun = count;
      quietSince = now;
      served = true;
    }
    if (first ? now - loaded >= COMPACT_AFTER_MS : served && now - quietSince >= QUIET_MS) {
      first = false;
      served = false;
      compact();
    }
  };
}
