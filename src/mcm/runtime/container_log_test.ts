import assert from "node:assert/strict";
import { safeLine } from "./container_log.ts";
import { LogRate } from "../sandbox/log_rate.ts";

Deno.test("safeLine escapes what could forge a line or drive a terminal, and cuts long lines", () => {
  const cases: [string, string][] = [
    ["plain text, with\ttab", "plain text, with\ttab"],
    ["two\nlines", "two\\nlines"],
    ["carriage\rreturn", "carriage\\rreturn"],
    ["\u001b[31mred", "\\u001b[31mred"],
    ["nul\u0000", "nul\\u0000"],
    ["c1\u009b", "c1\\u009b"],
    ["line\u2028separator", "line\\u2028separator"],
    ["bidi\u202eevil", "bidi\\u202eevil"],
    ["ünïcödé ✓", "ünïcödé ✓"],
  ];
  for (const [given, want] of cases) assert.equal(safeLine(given), want, JSON.stringify(given));
  const long = safeLine("x".repeat(20_000));
  assert.ok(long.startsWith("x".repeat(16_384)) && long.endsWith("(cut at 16384 characters)"));
});

Deno.test("LogRate admits 100 lines a second, then counts the dropped ones", () => {
  const rate = new LogRate();
  let reported = -1;
  const admitted = Array.from({ length: 150 }, () => rate.admit(10, (n) => (reported = n)));
  assert.equal(admitted.filter(Boolean).length, 100);
  assert.equal(reported, -1, "nothing is reported within the second");
  const big = new LogRate();
  assert.equal(big.admit(64 * 1024, () => {}), true);
  assert.equal(big.admit(1, () => {}), false, "the byte budget counts too");
});
