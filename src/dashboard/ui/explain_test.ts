/// <reference lib="deno.ns" />
// The page's own settings (src/dashboard/ui/deno.json) leave Deno's types out; its tests need them.
import assert from "node:assert/strict";
import { answerText, diskMeterLevels, STORE_TOKEN_COMMAND, tokenProblem } from "./explain.ts";

Deno.test("a microservice's answer says what its status means", () => {
  const table: [number | undefined, string][] = [
    [200, "yes (200)"],
    [404, "yes (404, nothing at its base path)"],
    [401, "yes (401, wants a credential)"],
    [502, "no (502, it failed)"],
    [undefined, "no (no answer)"],
  ];
  for (const [status, want] of table) assert.equal(answerText(status).text, want, `${status}`);
});

Deno.test("the account token's problem loses the API wording; the command is the CLI's", () => {
  assert.equal(
    tokenProblem(
      "listing the account's nodes needs a stored account token, and it is missing: " +
        "PUT /token with a valid one",
    ),
    "listing the account's nodes needs a stored account token, and it is missing",
  );
  assert.equal(tokenProblem("the hub is unreachable"), undefined);
  assert.match(STORE_TOKEN_COMMAND, /^edgenode account-token /);
});

Deno.test("the disk meter is green while the disk has room, red when nearly full", () => {
  const { low, high, optimum } = diskMeterLevels(1000);
  // A <meter> with optimum below `low` is green under `low`, yellow to `high`, red above.
  assert.equal(optimum, 0);
  assert.ok(low > 0 && low < high && high < 1000);
  assert.equal(high, 900);
});
