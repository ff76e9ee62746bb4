import assert from "node:assert/strict";
import { ProofError } from "../identity/node_proof.ts";
import {
  checkFailureCause,
  CheckFailureLog,
  LINES_PER_WINDOW,
  REPEAT_AFTER_MS,
  WINDOW_MS,
} from "./check_failures.ts";

/** The error Deno's fetch throws, with the cause it carries. */
function fetchFailed(detail: string): TypeError {
  return new TypeError("fetch failed", { cause: new Error(detail) });
}

Deno.test("a failed check names its cause", () => {
  const table: [string, unknown, string][] = [
    [
      "refused",
      fetchFailed("client error (Connect): tcp connect error: Connection refused (os error 111)"),
      "connection refused",
    ],
    [
      "timeout",
      new DOMException("The operation was aborted due to timeout", "TimeoutError"),
      "timeout (no answer in 3 s)",
    ],
    [
      "DNS",
      fetchFailed("client error (Connect): dns error: failed to lookup address information"),
      "DNS lookup failed",
    ],
    [
      "TLS",
      fetchFailed("client error (Connect): received corrupt message of type MessageTooLarge"),
      "TLS failed: client error (Connect): received corrupt message of type MessageTooLarge",
    ],
    [
      "bad proof",
      new ProofError("the proof is for another challenge"),
      "no valid proof: the proof is for another challenge",
    ],
    ["other", fetchFailed("something new"), "something new"],
  ];
  for (const [name, error, want] of table) assert.equal(checkFailureCause(error), want, name);
});

Deno.test("a peer's failure is said once per cause until some minutes pass", () => {
  const lines: string[] = [];
  let now = 0;
  const log = new CheckFailureLog({ print: (line) => lines.push(line), now: () => now });
  log.failed("03da at http://127.0.0.1:40183", "connection refused");
  log.failed("03da at http://127.0.0.1:40183", "connection refused");
  assert.deepEqual(lines, [
    "discovery: not listing 03da at http://127.0.0.1:40183: connection refused",
  ]);
  log.failed("03da at http://127.0.0.1:40183", "timeout (no answer in 3 s)");
  assert.equal(lines.length, 2);
  now += REPEAT_AFTER_MS;
  log.failed("03da at http://127.0.0.1:40183", "timeout (no answer in 3 s)");
  assert.equal(lines.length, 3);
  log.succeeded("03da at http://127.0.0.1:40183");
  log.failed("03da at http://127.0.0.1:40183", "timeout (no answer in 3 s)");
  assert.equal(lines.length, 4);
});

Deno.test("many failing peers print a few lines and then a count", () => {
  const lines: string[] = [];
  let now = 0;
  const log = new CheckFailureLog({ print: (line) => lines.push(line), now: () => now });
  for (let peer = 0; peer < 100; peer++) {
    log.failed(`peer${peer} at http://127.0.0.1:${40000 + peer}`, "connection refused");
  }
  log.failed("peer100 at http://127.0.0.1:1", "timeout (no answer in 3 s)");
  assert.equal(lines.length, LINES_PER_WINDOW);
  now += WINDOW_MS;
  log.failed("peer101 at http://127.0.0.1:2", "connection refused");
  assert.equal(lines.length, LINES_PER_WINDOW + 2);
  assert.equal(
    lines[LINES_PER_WINDOW],
    "discovery: 96 more peer checks failed in the last 1 min (95 connection refused, 1 timeout " +
      "(no answer in 3 s)); not listed",
  );
  assert.match(lines.at(-1)!, /not listing peer101 .*: connection refused/);
});

Deno.test("the count of a window's unsaid failures is printed on the next check or success", () => {
  const lines: string[] = [];
  let now = 0;
  const log = new CheckFailureLog({ print: (line) => lines.push(line), now: () => now });
  for (let peer = 0; peer <= LINES_PER_WINDOW; peer++) {
    log.failed(`peer${peer}`, "DNS lookup failed");
  }
  log.checking();
  assert.equal(lines.length, LINES_PER_WINDOW, "the window has not ended");
  now += WINDOW_MS;
  log.succeeded("peer0");
  assert.equal(lines.length, LINES_PER_WINDOW + 1);
  assert.match(lines.at(-1)!, /^discovery: 1 more peer check failed .*\(1 DNS lookup failed\)/);
  log.checking();
  assert.equal(lines.length, LINES_PER_WINDOW + 1, "said once");
  now += 1;
  log.failed("peer9", "connection refused");
  assert.match(lines.at(-1)!, /not listing peer9: connection refused/);
});

Deno.test("a cycle of causes ends: at most five deep", () => {
  const looped = new Error("outer");
  let current = looped;
  for (let i = 0; i < 10; i++) {
    const next = new Error(`cause ${i}`);
    current.cause = next;
    current = next;
  }
  assert.equal(checkFailureCause(looped), "cause 4");
  const cycle = new Error("a");
  cycle.cause = new Error("b", { cause: cycle });
  assert.match(checkFailureCause(cycle), /^[ab]$/);
});
