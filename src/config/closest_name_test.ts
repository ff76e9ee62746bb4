import assert from "node:assert/strict";
import { closestName } from "./closest_name.ts";

Deno.test("closestName: typos find their name, other words find none", () => {
  const fields = ["host", "port", "apiKey", "storePrefixes", "announceSeconds"];
  const cases: [string, string | undefined][] = [
    ["prot", "port"],
    ["apikey", "apiKey"],
    ["storePrefix", "storePrefixes"],
    ["anounceSeconds", "announceSeconds"],
    ["colour", undefined],
    ["x", undefined],
  ];
  for (const [given, want] of cases) assert.equal(closestName(given, fields), want, given);
  assert.equal(closestName("modles", ["models", "me", "nodes"]), "models");
});
