import assert from "node:assert/strict";
import { safeParse } from "valibot";
import { NodeConfigSchema } from "../../gen/config/validators.ts";
import { describeIssue } from "./config_files.ts";

Deno.test("describeIssue: unknown fields in the user's words, with the nearest name", () => {
  const cases: { given: unknown; want: string }[] = [
    { given: { prot: 8083 }, want: "unknown field 'prot'; did you mean 'port'?" },
    { given: { apikey: "k" }, want: "unknown field 'apikey'; did you mean 'apiKey'?" },
    {
      given: { discovery: { anounceSeconds: 5 } },
      want: "unknown field 'discovery.anounceSeconds'; did you mean 'discovery.announceSeconds'?",
    },
    {
      given: { mcm: { memoryMB: 64 } },
      want: "unknown field 'mcm.memoryMB'; did you mean 'mcm.memoryMb'?",
    },
    { given: { port: "8083" }, want: "port: must be an integer" },
  ];
  for (const { given, want } of cases) {
    const result = safeParse(NodeConfigSchema, given);
    assert.equal(result.success, false, JSON.stringify(given));
    assert.equal(describeIssue(NodeConfigSchema, result.issues![0]), want);
  }
  const far = safeParse(NodeConfigSchema, { colour: 1 });
  assert.match(
    describeIssue(NodeConfigSchema, far.issues![0]),
    /^unknown field 'colour' \(known fields: .*port/,
  );
});
