/** The callers' ledger (caller_usage.ts): figures per caller and the detached budget. */
import assert from "node:assert/strict";
import { CallerLedger } from "./caller_usage.ts";

/** Polls `condition` until true, or fails after `ms`. */
async function waitFor(condition: () => boolean, what: string, ms: number) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test("the ledger: usage per caller, and a detached budget that refills", async () => {
  const ledger = new CallerLedger({ engineSeconds: 0.05, windowSeconds: 0.5 });
  const caller = { id: "container:c", client: "c", priority: false, detached: true };
  await ledger.metered(caller, async () => {
    await new Promise((resolve) => setTimeout(resolve, 80));
    return { value: 1, promptTokens: 3, completionTokens: 5 };
  });
  const usage = ledger.of("container:c");
  assert.equal(usage.requests, 1);
  assert.equal(usage.promptTokens, 3);
  assert.equal(usage.completionTokens, 5);
  assert.ok(usage.engineMs >= 70 && usage.detachedEngineMs === usage.engineMs, `${usage.engineMs}`);
  assert.throws(() => ledger.detachedAllowance("container:c"), /detachedEngineSeconds/);
  await waitFor(
    () => {
      try {
        return ledger.detachedAllowance("container:c") > 0;
      } catch {
        return false;
      }
    },
    "the budget to refill",
    5_000,
  );
  assert.deepEqual([...ledger.all().keys()], ["container:c"]);
});
