import assert from "node:assert/strict";
import * as v from "valibot";
import { dependencyOrder, type JsonSchema, valibotFor } from "./valibot_emitter.ts";

/** The emitted source, evaluated with valibot in scope. */
function compiled(schema: JsonSchema): v.GenericSchema {
  return new Function("v", `return ${valibotFor(schema)};`)(v);
}

Deno.test("valibotFor: each schema accepts what it allows and says why it refuses the rest", () => {
  const cases: { schema: JsonSchema; good: unknown[]; bad: [unknown, RegExp][] }[] = [
    {
      schema: { type: "string", minLength: 2, maxLength: 3 },
      good: ["ab", "abc"],
      bad: [["a", /at least 2/], ["abcd", /at most 3/], [1, /string/]],
    },
    {
      schema: { type: "string", pattern: "^[a-z]+$", errorMessage: "lower-case letters only" },
      good: ["abc"],
      bad: [["aB", /lower-case letters only/]],
    },
    { schema: { type: "string", enum: ["a", "b"] }, good: ["a"], bad: [["c", /one of: a, b/]] },
    {
      schema: { type: "integer", minimum: 1, maximum: 9 },
      good: [1, 9],
      bad: [[0, /.+/], [1.5, /.+/], ["1", /.+/]],
    },
    { schema: { type: "boolean" }, good: [true, false], bad: [["true", /true or false/]] },
    {
      schema: { type: "array", items: { type: "string" }, maxItems: 2 },
      good: [[], ["a", "b"]],
      bad: [[["a", "b", "c"], /at most 2 items/], [[1], /string/]],
    },
    {
      schema: {
        type: "object",
        additionalProperties: false,
        required: ["id"],
        properties: { id: { type: "string" }, n: { type: "integer" } },
      },
      good: [{ id: "x" }, { id: "x", n: 1 }],
      bad: [[{}, /.+/], [{ id: "x", extra: 1 }, /.+/]],
    },
    { schema: {}, good: [null, 1, "x", { a: [1] }], bad: [] },
  ];
  for (const { schema, good, bad } of cases) {
    const parsed = compiled(schema);
    for (const value of good) {
      assert.ok(v.safeParse(parsed, value).success, `${JSON.stringify(schema)} takes ${value}`);
    }
    for (const [value, message] of bad) {
      const result = v.safeParse(parsed, value);
      assert.ok(!result.success, `${JSON.stringify(schema)} refuses ${JSON.stringify(value)}`);
      assert.match(result.issues.map((i) => i.message).join("; "), message);
    }
  }
});

Deno.test("dependencyOrder puts a schema after those it references", () => {
  const order = dependencyOrder({
    A: { $ref: "#/components/schemas/B" },
    B: { type: "array", items: { $ref: "#/components/schemas/C" } },
    C: { type: "string" },
  });
  assert.ok(order.indexOf("C") < order.indexOf("B") && order.indexOf("B") < order.indexOf("A"));
});
