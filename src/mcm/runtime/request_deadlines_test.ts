import assert from "node:assert/strict";
import { RequestDeadlines, SWEEP_MS } from "./request_deadlines.ts";

Deno.test("a deadline fires once when passed, never once done; the sweep stops when none is left", () => {
  let now = 0;
  const deadlines = new RequestDeadlines(() => now);
  const fired: string[] = [];
  const slow = deadlines.add(1000, () => fired.push("slow"));
  const quick = deadlines.add(1000, () => fired.push("quick"));
  const later = deadlines.add(5000, () => fired.push("later"));
  quick.done();
  now = 999;
  deadlines.check();
  assert.deepEqual(fired, []);
  now = 1000;
  deadlines.check();
  assert.deepEqual(fired, ["slow"]);
  slow.done();
  deadlines.check();
  assert.deepEqual(fired, ["slow"], "fired once");
  assert.equal(deadlines.size, 1);
  later.done();
  deadlines.check();
  assert.equal(deadlines.size, 0);
  deadlines.stop();
});

Deno.test("the sweep fires a deadline at most one sweep late, and then stops", async () => {
  const deadlines = new RequestDeadlines();
  const started = performance.now();
  const fired = await new Promise<number>((resolve) => {
    deadlines.add(50, () => resolve(performance.now() - started));
  });
  assert.ok(fired >= 50 && fired < 50 + SWEEP_MS + 100, `fired after ${fired} ms`);
  // The next sweep finds nothing and stops (no timer left: the test's sanitizer checks).
  await new Promise((resolve) => setTimeout(resolve, SWEEP_MS * 2));
  assert.equal(deadlines.size, 0);
});
