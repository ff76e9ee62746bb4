import assert from "node:assert/strict";
import { concatBytes } from "./bytes.ts";

Deno.test("concatBytes: joins in order, returns a single part as it is, handles none", () => {
  const one = new Uint8Array([1, 2]);
  assert.equal(concatBytes([one]), one);
  assert.deepEqual(concatBytes([]), new Uint8Array(0));
  assert.deepEqual(
    concatBytes([one, new Uint8Array(0), new Uint8Array([3]), new Uint8Array([4, 5])]),
    new Uint8Array([1, 2, 3, 4, 5]),
  );
});
