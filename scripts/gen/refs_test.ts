import assert from "node:assert/strict";
import { formatRef, parseRef, rebase, Resolver } from "./refs.ts";

const documents = {
  "common.yaml": {
    components: {
      responses: {
        Error: {
          description: "An error.",
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
        },
      },
      schemas: {
        Error: { type: "object", properties: { message: { type: "string" } } },
        Alias: { $ref: "#/components/schemas/Error" },
      },
    },
  },
  "store.yaml": {
    paths: {
      "/x": {
        get: { responses: { "400": { $ref: "common.yaml#/components/responses/Error" } } },
      },
    },
    components: {
      parameters: { Id: { name: "id", in: "path", schema: { type: "string" } } },
      schemas: {
        Model: {
          type: "object",
          properties: { a: { $ref: "common.yaml#/components/schemas/Alias" } },
        },
        Local: { $ref: "#/components/schemas/Model" },
      },
    },
  },
};

Deno.test("parseRef and formatRef: local and cross-file references", () => {
  const cases = [
    {
      name: "local",
      given: ["#/components/schemas/Model", "store.yaml"],
      want: { file: "store.yaml", section: "schemas", name: "Model" },
    },
    {
      name: "cross-file",
      given: ["common.yaml#/components/schemas/Error", "store.yaml"],
      want: { file: "common.yaml", section: "schemas", name: "Error" },
    },
    {
      name: "cross-file with ./",
      given: ["./common.yaml#/components/responses/Error", "store.yaml"],
      want: { file: "common.yaml", section: "responses", name: "Error" },
    },
  ] as const;
  for (const { name, given, want } of cases) {
    const ref = parseRef(given[0], given[1]);
    assert.deepEqual(ref, want, name);
    assert.equal(formatRef(ref, given[1]), given[0].replace("./", ""), name);
  }
  assert.throws(() => parseRef("https://x/y.yaml", "store.yaml"), /unsupported \$ref/);
});

Deno.test("rebase: a part of another file keeps naming what it named there", () => {
  const cases = [
    {
      name: "a local ref of common.yaml, read in store.yaml",
      given: {
        value: { $ref: "#/components/schemas/Error" },
        from: "common.yaml",
        into: "store.yaml",
      },
      want: { $ref: "common.yaml#/components/schemas/Error" },
    },
    {
      name: "a ref back into the reading file becomes local",
      given: {
        value: { items: [{ $ref: "store.yaml#/components/schemas/Model" }] },
        from: "common.yaml",
        into: "store.yaml",
      },
      want: { items: [{ $ref: "#/components/schemas/Model" }] },
    },
    {
      name: "same file: unchanged",
      given: { value: { $ref: "#/components/schemas/X" }, from: "a.yaml", into: "a.yaml" },
      want: { $ref: "#/components/schemas/X" },
    },
  ];
  for (const { name, given, want } of cases) {
    assert.deepEqual(rebase(given.value, given.from, given.into), want, name);
  }
});

Deno.test("Resolver.resolve: follows references within and across files", () => {
  const resolver = new Resolver(documents, "store.yaml");
  const cases = [
    { name: "not a reference", given: { type: "string" }, want: { type: "string" } },
    {
      name: "a local parameter",
      given: { $ref: "#/components/parameters/Id" },
      want: { name: "id", in: "path", schema: { type: "string" } },
    },
    {
      name: "a response of common.yaml, its schema rebased",
      given: { $ref: "common.yaml#/components/responses/Error" },
      want: {
        description: "An error.",
        content: {
          "application/json": { schema: { $ref: "common.yaml#/components/schemas/Error" } },
        },
      },
    },
    {
      name: "a chain: local alias, then common alias, then the schema",
      given: { $ref: "#/components/schemas/Local" },
      want: documents["store.yaml"].components.schemas.Model,
    },
    {
      name: "a cross-file alias",
      given: { $ref: "common.yaml#/components/schemas/Alias" },
      want: documents["common.yaml"].components.schemas.Error,
    },
  ];
  for (const { name, given, want } of cases) assert.deepEqual(resolver.resolve(given), want, name);
  assert.throws(
    () => resolver.resolve({ $ref: "common.yaml#/components/schemas/Nope" }),
    /unresolved/,
  );
  assert.throws(() => resolver.resolve({ $ref: "other.yaml#/components/schemas/X" }), /unresolved/);
});

Deno.test("Resolver.externalSchemas: the schemas of other files a file uses, through responses too", () => {
  const cases = [
    {
      name: "store.yaml uses Alias directly and Error through common's Error response",
      given: "store.yaml",
      want: new Map([["common.yaml", new Set(["Alias", "Error"])]]),
    },
    { name: "common.yaml uses nothing of other files", given: "common.yaml", want: new Map() },
  ];
  for (const { name, given, want } of cases) {
    assert.deepEqual(new Resolver(documents, given).externalSchemas(), want, name);
  }
});
