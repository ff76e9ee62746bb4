import assert from "node:assert/strict";
import * as v from "valibot";
import {
  dependencyOrder,
  emitValidators,
  type JsonSchema,
  refsOf,
  schemaConstsIn,
  SchemaTypes,
  valibotFor,
} from "./valibot_emitter.ts";

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
      schema: { type: "string", pattern: "^[a-z]+$", "x-error-message": "lower-case letters only" },
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

Deno.test("valibotFor: a rule's message is x-error-message; the former errorMessage throws", () => {
  const allOf = {
    type: "string",
    allOf: [
      { pattern: "^[a-z]+$", "x-error-message": "letters only" },
      { not: { pattern: "x" }, "x-error-message": "no x" },
    ],
  };
  const parsed = compiled(allOf);
  assert.match(v.safeParse(parsed, "a1").issues?.[0].message ?? "", /letters only/);
  assert.match(v.safeParse(parsed, "ax").issues?.[0].message ?? "", /no x/);
  assert.throws(
    () => valibotFor({ type: "string", pattern: "^a$", errorMessage: "a" }),
    /x-error-message/,
  );
  assert.throws(
    () => valibotFor({ type: "string", allOf: [{ pattern: "^a$", errorMessage: "a" }] }),
    /x-error-message/,
  );
});

Deno.test("dependencyOrder puts a schema after those it references", () => {
  const order = dependencyOrder({
    A: { $ref: "#/components/schemas/B" },
    B: { type: "array", items: { $ref: "#/components/schemas/C" } },
    C: { type: "string" },
  });
  assert.ok(order.indexOf("C") < order.indexOf("B") && order.indexOf("B") < order.indexOf("A"));
});

Deno.test("emitValidators: schemas of other files are imported and exported again", () => {
  const cases: {
    name: string;
    given: { schemas: Record<string, JsonSchema>; external: Map<string, Set<string>> };
    want: string[];
  }[] = [
    {
      name: "a service using common.yaml's Error",
      given: {
        schemas: {
          Model: {
            type: "object",
            properties: { error: { $ref: "common.yaml#/components/schemas/Error" } },
          },
        },
        external: new Map([["common.yaml", new Set(["Error", "Address"])]]),
      },
      want: [
        `import { AddressSchema, ErrorSchema } from "../common/validators.ts";`,
        `export { AddressSchema, type Address, ErrorSchema, type Error } from "../common/validators.ts";`,
        `export const ModelSchema = v.looseObject({ "error": v.optional(ErrorSchema) }, "must be an object");`,
        `export type Model = v.InferOutput<typeof ModelSchema>;`,
      ],
    },
    {
      name: "a local alias of a shared schema",
      given: {
        schemas: { InsightError: { $ref: "common.yaml#/components/schemas/MeshError" } },
        external: new Map([["common.yaml", new Set(["MeshError"])]]),
      },
      want: [`export const InsightErrorSchema = MeshErrorSchema;`],
    },
    {
      name: "no other file",
      given: { schemas: { A: { type: "string" } }, external: new Map() },
      want: [`import * as v from "valibot";\n\n/** The A schema. */`],
    },
  ];
  for (const { name, given, want } of cases) {
    const source = emitValidators(given.schemas, "spec/x.yaml", given.external);
    for (const part of want) assert.ok(source.includes(part), `${name}: ${part}\n${source}`);
  }
  assert.throws(
    () =>
      emitValidators(
        { Error: { type: "string" } },
        "spec/x.yaml",
        new Map([["common.yaml", new Set(["Error"])]]),
      ),
    /Error is both a schema of spec\/x.yaml and of common.yaml/,
  );
});

Deno.test("valibotFor, refsOf, schemaConstsIn: references within and across files", () => {
  const cases = [
    { name: "local", given: { $ref: "#/components/schemas/Model" }, want: "ModelSchema" },
    {
      name: "cross-file",
      given: { $ref: "common.yaml#/components/schemas/Error" },
      want: "ErrorSchema",
    },
  ];
  for (const { name, given, want } of cases) assert.equal(valibotFor(given), want, name);
  assert.throws(() => valibotFor({ $ref: "#/components/responses/Error" }), /unsupported \$ref/);
  assert.deepEqual(
    refsOf({
      properties: {
        a: { $ref: "#/components/schemas/A" },
        b: { $ref: "common.yaml#/components/schemas/B" },
      },
    }),
    new Set(["A"]),
  );
  assert.deepEqual(schemaConstsIn("v.array(BSchema), ASchema, BSchema, inline1"), [
    "ASchema",
    "BSchema",
  ]);
});

Deno.test("SchemaTypes: components by their constant, one constant per distinct inline schema", () => {
  const types = new SchemaTypes();
  const cases = [
    {
      name: "reference",
      given: { $ref: "#/components/schemas/M" },
      want: "v.InferInput<typeof MSchema>",
    },
    { name: "first inline", given: { type: "string" }, want: "v.InferInput<typeof inline1>" },
    { name: "same inline again", given: { type: "string" }, want: "v.InferInput<typeof inline1>" },
    { name: "another inline", given: { type: "boolean" }, want: "v.InferInput<typeof inline2>" },
  ];
  for (const { name, given, want } of cases) assert.equal(types.typeOf(given), want, name);
  assert.deepEqual(types.declarations(), [
    `const inline1 = v.string("must be a string");`,
    `const inline2 = v.boolean("must be true or false");`,
  ]);
});
