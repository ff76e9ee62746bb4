import assert from "node:assert/strict";
import {
  COMPACT_AFTER_MS,
  compactionSchedule,
  MIN_INTERVAL_MS,
  QUIET_MS,
  SMALL_HEAP_BYTES,
} from "./heap_compaction.ts";
import { REQUESTS_BEGUN } from "../host_protocol.ts";

function worker(heap = 4 * 2 ** 20) {
  const state = { compactions: 0, heap };
  return { state, compact: () => void state.compactions++, heap: () => state.heap };
}

Deno.test("a worker compacts once after its load, then only once quiet after serving", () => {
  const activity = new Int32Array(new SharedArrayBuffer(8));
  const w = worker();
  const tick = compactionSchedule(0, activity, w);
  tick(COMPACT_AFTER_MS - 1);
  assert.equal(w.state.compactions, 0);
  tick(COMPACT_AFTER_MS);
  assert.equal(w.state.compactions, 1);
  // Idle without serving: nothing more to give back.
  tick(MIN_INTERVAL_MS * 3);
  assert.equal(w.state.compactions, 1);
  Atomics.add(activity, REQUESTS_BEGUN, 1);
  const served = MIN_INTERVAL_MS * 3 + 250;
  tick(served);
  tick(served + QUIET_MS - 1);
  assert.equal(w.state.compactions, 1);
  tick(served + QUIET_MS);
  assert.equal(w.state.compactions, 2);
  tick(served + QUIET_MS * 2);
  assert.equal(w.state.compactions, 2);
});

Deno.test("compactions after the first are spaced, and skipped for a large heap", () => {
  const activity = new Int32Array(new SharedArrayBuffer(8));
  const w = worker();
  const tick = compactionSchedule(0, activity, w);
  tick(COMPACT_AFTER_MS);
  Atomics.add(activity, REQUESTS_BEGUN, 1);
  tick(COMPACT_AFTER_MS + 250);
  // Quiet long enough, but too soon after the first.
  tick(COMPACT_AFTER_MS + 250 + QUIET_MS);
  assert.equal(w.state.compactions, 1);
  w.state.heap = SMALL_HEAP_BYTES;
  tick(COMPACT_AFTER_MS + MIN_INTERVAL_MS);
  assert.equal(w.state.compactions, 1);
  w.state.heap = SMALL_HEAP_BYTES - 1;
  tick(COMPACT_AFTER_MS + MIN_INTERVAL_MS + 250);
  assert.equal(w.state.compactions, 2);
});
