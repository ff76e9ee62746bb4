import assert from "node:assert/strict";
import { regressions } from "./quick.ts";

Deno.test("a ratio more than 30% below its record is a regression; within it is not", () => {
  const recorded = { upload: 0.8, requests: 0.5 };
  assert.deepEqual(regressions({ upload: 0.57, requests: 0.36 }, recorded), []);
  assert.deepEqual(regressions({ upload: 0.55, requests: 0.9 }, recorded), [
    "upload: 0.55 against 0.80 recorded",
  ]);
});

Deno.test("a recorded ratio that was not measured is reported, a new one is not", () => {
  assert.deepEqual(regressions({ fresh: 1 }, { gone: 0.5 }), [
    "gone: not measured (recorded 0.50)",
  ]);
});
