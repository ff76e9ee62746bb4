import assert from "node:assert/strict";
import { abortable } from "./abortable.ts";

async function* counting(stallAfter: number) {
  for (let n = 1;; n++) {
    if (n > stallAfter) await new Promise(() => {}); // A source that goes quiet.
    yield n;
  }
}

Deno.test("abortable: passes everything without a signal, and stops at once when aborted", async () => {
  const seen: number[] = [];
  for await (
    const n of abortable((async function* () {
      yield* [1, 2, 3];
    })())
  ) seen.push(n);
  assert.deepEqual(seen, [1, 2, 3]);

  const controller = new AbortController();
  const read: number[] = [];
  const reason = new Error("cancelled by the client");
  setTimeout(() => controller.abort(reason), 20);
  await assert.rejects(async () => {
    for await (const n of abortable(counting(2), controller.signal)) read.push(n);
  }, (error) => error === reason);
  assert.deepEqual(read, [1, 2], "the stalled read did not hold the abort back");
});

Deno.test("abortable: an already aborted signal yields nothing", async () => {
  const controller = new AbortController();
  controller.abort(new Error("gone"));
  await assert.rejects(async () => {
    for await (const _ of abortable(counting(5), controller.signal)) {
      assert.fail("nothing may be yielded");
    }
  }, /gone/);
});
