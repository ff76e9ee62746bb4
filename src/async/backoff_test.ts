import assert from "node:assert/strict";
import { backoffDelay } from "./backoff.ts";

Deno.test("backoffDelay doubles from the first delay up to the cap", () => {
  const options = { minTimeout: 500, maxTimeout: 8000 };
  const cases: [number, number][] = [[0, 500], [1, 500], [2, 1000], [3, 2000], [5, 8000], [
    30,
    8000,
  ]];
  for (const [attempt, want] of cases) {
    assert.equal(backoffDelay(attempt, options), want, `${attempt}`);
  }
  assert.equal(backoffDelay(3, { ...options, multiplier: 3 }), 4500);
});

Deno.test("backoffDelay spreads by the jitter, both ways", () => {
  const options = { minTimeout: 1000, maxTimeout: 1000, jitter: 0.2 };
  const near = (actual: number, want: number) =>
    assert.ok(Math.abs(actual - want) < 1e-6, `${actual} is not ${want}`);
  near(backoffDelay(1, options, () => 0), 800);
  near(backoffDelay(1, options, () => 0.5), 1000);
  near(backoffDelay(1, options, () => 1), 1200);
});
