import assert from "node:assert/strict";
import { CheckQueue } from "./check_queue.ts";

const LIMITS = { concurrency: 1, maxWaiting: 4, retryMs: 60_000 };

/** A check that records its label and finishes when `release` is called. */
function gated(log: string[], label: string, fail = false) {
  const gate = Promise.withResolvers<void>();
  const check = async () => {
    log.push(label);
    await gate.promise;
    if (fail) throw new Error(label);
  };
  return { check, release: () => gate.resolve() };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("a change announced while its check runs is checked again once, with the newest check", async () => {
  const queue = new CheckQueue(LIMITS);
  const log: string[] = [];
  const first = gated(log, "first");
  queue.add("peer@a", first.check);
  // A flood of announcements during the check: one more run, the last one's.
  const later = ["second", "third", "fourth"].map((label) => gated(log, label));
  for (const { check } of later) queue.add("peer@a", check);
  first.release();
  await settle();
  await settle();
  assert.deepEqual(log, ["first", "fourth"]);
  for (const { release } of later) release();
  await settle();
  await settle();
  assert.deepEqual(log, ["first", "fourth"], "nothing more runs");
});

Deno.test("a waiting check is replaced by a newer one for the same key", async () => {
  const queue = new CheckQueue(LIMITS);
  const log: string[] = [];
  const busy = gated(log, "busy");
  queue.add("other@b", busy.check);
  const older = gated(log, "older");
  const newer = gated(log, "newer");
  queue.add("peer@a", older.check);
  queue.add("peer@a", newer.check);
  busy.release();
  newer.release();
  await settle();
  await settle();
  assert.deepEqual(log, ["busy", "newer"]);
});

Deno.test("after a failed check a rerun waits for the retry time, unless forced (a goodbye)", async () => {
  const queue = new CheckQueue(LIMITS);
  const log: string[] = [];
  const failing = gated(log, "failing", true);
  queue.add("peer@a", failing.check);
  queue.add("peer@a", gated(log, "plain").check);
  failing.release();
  await settle();
  await settle();
  assert.deepEqual(log, ["failing"], "a failure holds plain reruns back");
  queue.add("peer@a", gated(log, "again").check);
  await settle();
  assert.deepEqual(log, ["failing"], "and plain checks within the retry time");

  const failing2 = gated(log, "failing2", true);
  queue.add("peer@b", failing2.check);
  queue.add("peer@b", gated(log, "goodbye").check, true);
  failing2.release();
  await settle();
  await settle();
  assert.deepEqual(log, ["failing", "failing2", "goodbye"]);
});
