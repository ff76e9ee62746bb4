import assert from "node:assert/strict";
import { defaultsOf, emitDefaults } from "./defaults_emitter.ts";
import { Resolver } from "./refs.ts";

const schemas = {
  Root: {
    type: "object",
    properties: {
      port: { type: "integer", default: 8083 },
      name: { type: "string" },
      child: { $ref: "#/components/schemas/Child" },
      bare: { $ref: "#/components/schemas/Bare" },
    },
  },
  Child: { type: "object", properties: { on: { type: "boolean", default: false } } },
  Bare: { type: "object", properties: { x: { type: "string" } } },
};

Deno.test("defaultsOf collects defaults through nested objects and references", () => {
  assert.deepEqual(defaultsOf(schemas.Root, schemas), { port: 8083, child: { on: false } });
  assert.equal(defaultsOf(schemas.Bare, schemas), undefined);
  assert.deepEqual(defaultsOf({ type: "array", default: [] }, schemas), []);
  assert.throws(() => defaultsOf({ $ref: "#/components/schemas/Nope" }, schemas), /unresolved/);
});

Deno.test("emitDefaults writes one constant per schema that has defaults, and nothing without", () => {
  const source = emitDefaults(schemas, "x.yaml")!;
  assert.match(source, /export const ChildDefaults = \{\n {2}"on": false\n\} as const;/);
  assert.match(source, /export const RootDefaults = \{/);
  assert.doesNotMatch(source, /BareDefaults/);
  assert.equal(emitDefaults({ Bare: schemas.Bare }, "x.yaml"), undefined);
});

Deno.test("defaultsOf: table of schemas, with references into another file", () => {
  const resolver = new Resolver(
    {
      "x.yaml": { components: { schemas } },
      "common.yaml": {
        components: {
          schemas: {
            Shared: { type: "object", properties: { n: { type: "integer", default: 3 } } },
            Nested: { properties: { s: { $ref: "#/components/schemas/Shared" } } },
          },
        },
      },
    },
    "x.yaml",
  );
  const cases = [
    { name: "a default at the top", given: { type: "string", default: "a" }, want: "a" },
    { name: "none", given: { type: "string" }, want: undefined },
    {
      name: "a schema of common.yaml",
      given: { properties: { c: { $ref: "common.yaml#/components/schemas/Shared" } } },
      want: { c: { n: 3 } },
    },
    {
      name: "a schema of common.yaml that refers to another of its schemas",
      given: { $ref: "common.yaml#/components/schemas/Nested" },
      want: { s: { n: 3 } },
    },
  ];
  for (const { name, given, want } of cases) {
    assert.deepEqual(defaultsOf(given, schemas, resolver), want, name);
  }
  assert.throws(
    () => defaultsOf({ $ref: "common.yaml#/components/schemas/Shared" }, schemas),
    /unresolved/,
  );
});
