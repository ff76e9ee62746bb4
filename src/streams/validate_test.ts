import assert from "node:assert/strict";
import * as v from "valibot";
import { Invalid } from "../errors/mod.ts";
import { validate } from "./validate.ts";

const schema = v.strictObject({
  model: v.string(),
  top_p: v.optional(v.pipe(v.number(), v.maxValue(1))),
  options: v.optional(v.strictObject({ seed: v.number() })),
});

function refusal(value: unknown, source: "body" | "query" | "path" = "body"): Invalid {
  try {
    validate(schema, value, source);
  } catch (error) {
    assert.ok(error instanceof Invalid);
    return error;
  }
  assert.fail("validated");
}

Deno.test("validate: the output of a valid value", () => {
  assert.deepEqual(validate(schema, { model: "m", top_p: 0.5 }, "body"), {
    model: "m",
    top_p: 0.5,
  });
});

Deno.test("validate: the message names each field, details.field the first at fault", () => {
  const cases: [unknown, RegExp, string | undefined][] = [
    [{ model: "m", top_p: 2 }, /^field 'top_p' /, "top_p"],
    [{ top_p: 0.5 }, /^field 'model' is required/, "model"],
    [{ model: "m", nope: 1 }, /^unknown field 'nope'/, "nope"],
    [{ model: "m", options: { seed: "x" } }, /^field 'options\.seed' /, "options.seed"],
    [{ model: 1, top_p: 5 }, /^field 'model' .*; field 'top_p' /, "model"],
    ["text", /^body: must be a JSON object/, undefined],
  ];
  for (const [value, message, field] of cases) {
    const error = refusal(value);
    assert.match(error.message, message);
    assert.equal(error.details.field, field, error.message);
  }
});

Deno.test("validate: query and path parameters are named so, with no body field", () => {
  const error = refusal({ top_p: 0.5 }, "query");
  assert.match(error.message, /^query parameter 'model' is required/);
  assert.equal(error.details.field, undefined);
  assert.match(refusal({ model: "m", x: 1 }, "path").message, /^unknown path parameter 'x'/);
});
