/// <reference lib="deno.ns" />
// The page's own settings (src/dashboard/ui/deno.json) leave Deno's types out; its tests need them.
import assert from "node:assert/strict";
import { parameters } from "./format.ts";

Deno.test("parameter counts read in the unit that fits", () => {
  const table: [number, string][] = [
    [7_241_732_096, "7.2 B"],
    [1_100_048_384, "1.1 B"],
    [15_200_000, "15.2 M"],
    [260_000, "260 K"],
    [4_600, "4.6 K"],
    [812, "812"],
    // Rounding up to the next unit: that unit, as people say it.
    [999_950, "1.0 M"],
    [999_960_000, "1.0 B"],
    [99_960_000, "100 M"],
    [999_400, "999 K"],
  ];
  for (const [count, want] of table) assert.equal(parameters(count), want, `${count}`);
});
