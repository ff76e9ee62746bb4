import assert from "node:assert/strict";
import { CallBody } from "./call_body.ts";

Deno.test("CallBody: nothing is taken until the reader pulls; what it took is reported in batches", async () => {
  const reports: number[] = [];
  const body = new CallBody(() => {}, 400);
  for (let i = 0; i < 5; i++) body.push(new Uint8Array(60).fill(i), (n) => reports.push(n));
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(reports, [], "unread: nothing taken");
  assert.equal(body.queuedBytes, 300);
  const reader = body.stream.getReader();
  for (let i = 0; i < 5; i++) assert.equal((await reader.read()).value![0], i);
  // A quarter of the window (100) per report: after 120 and 240 bytes.
  assert.deepEqual(reports, [120, 120]);
  body.error(new TypeError("broken off"));
  await assert.rejects(reader.read(), /broken off/);
});

Deno.test("CallBody: what came before an error is read first; a cancel reaches the call", async () => {
  let cancelled = 0;
  const body = new CallBody(() => cancelled++);
  body.push(new Uint8Array([1, 2]), () => {});
  body.error(new TypeError("late"));
  const reader = body.stream.getReader();
  assert.deepEqual((await reader.read()).value, new Uint8Array([1, 2]));
  await assert.rejects(reader.read(), /late/);
  const other = new CallBody(() => cancelled++);
  other.push(new Uint8Array(10), () => {});
  await other.stream.cancel();
  assert.equal(cancelled, 1);
  other.push(new Uint8Array(10), () => {});
  assert.equal(other.queuedBytes, 0, "nothing is kept after a cancel");
});
