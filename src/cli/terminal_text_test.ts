import assert from "node:assert/strict";
import { terminalSafe } from "./terminal_text.ts";

Deno.test("terminalSafe escapes what would drive a terminal, keeps the rest", () => {
  for (
    const [given, want] of [
      ["plain text, a tab\there, ünïcode ✓", "plain text, a tab\there, ünïcode ✓"],
      ["\x1b[2J\x1b]0;owned\x07", "\\u001b[2J\\u001b]0;owned\\u0007"],
      ["a\nforged line\r", "a\\nforged line\\r"],
      ["\x9b31m \x7f \u2028 \u202e", "\\u009b31m \\u007f \\u2028 \\u202e"],
    ]
  ) assert.equal(terminalSafe(given), want, JSON.stringify(given));
});
