/**
 * Crash consistency, a short run (tests/helpers/crash_harness.ts has the invariants):
 * EDGENODE_CRASH_ROUNDS and EDGENODE_CRASH_SECONDS make it longer; `deno task soak` runs hundreds.
 */
import assert from "node:assert/strict";
import { runCrashRounds } from "./helpers/crash_harness.ts";
import { withTempDir } from "../testing/node.ts";

const ROUNDS = Number(Deno.env.get("EDGENODE_CRASH_ROUNDS") ?? 10);
const SECONDS = Number(Deno.env.get("EDGENODE_CRASH_SECONDS") ?? 60);

Deno.test("killed at random moments, the node restarts with nothing lost or half-written", () =>
  withTempDir(async (dir) => {
    const report = await runCrashRounds(dir, ROUNDS, SECONDS);
    console.log(
      `crash: ${report.iterations} kills in ${report.seconds.toFixed(0)} s ${
        JSON.stringify(report.byOperation)
      }, ${report.ready} transfers finished before their kill; every invariant held`,
    );
    assert.ok(report.iterations > 0);
  }));
