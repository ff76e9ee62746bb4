import assert from "node:assert/strict";
import { parseRange } from "./file_response.ts";

Deno.test("parseRange: single ranges, suffixes, open ends, and what it ignores or refuses", () => {
  const cases: [string | null, number, ReturnType<typeof parseRange>][] = [
    [null, 100, undefined],
    ["bytes=0-9", 100, { start: 0, end: 9 }],
    ["bytes=90-", 100, { start: 90, end: 99 }],
    ["bytes=90-200", 100, { start: 90, end: 99 }],
    ["bytes=-10", 100, { start: 90, end: 99 }],
    ["bytes=-200", 100, { start: 0, end: 99 }],
    [" bytes=5-5 ", 100, { start: 5, end: 5 }],
    ["bytes=100-", 100, "unsatisfiable"],
    ["bytes=50-40", 100, "unsatisfiable"],
    ["bytes=-0", 100, "unsatisfiable"],
    ["bytes=-5", 0, "unsatisfiable"],
    ["bytes=-", 100, undefined],
    ["bytes=0-1,5-6", 100, undefined],
    ["items=0-9", 100, undefined],
  ];
  for (const [header, size, want] of cases) {
    assert.deepEqual(parseRange(header, size), want, `${header} of ${size}`);
  }
});
