import assert from "node:assert/strict";
import { Resolver } from "./refs.ts";
import {
  emitTypes,
  parameterMembers,
  propertyName,
  requestBodyType,
  responseMembers,
} from "./types_emitter.ts";
import { SchemaTypes } from "./valibot_emitter.ts";

const common = {
  components: {
    responses: {
      Error: {
        description: "An error.",
        content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
      },
    },
    schemas: { Error: { type: "object", properties: { message: { type: "string" } } } },
  },
};
const resolver = (spec: Record<string, unknown> = {}) =>
  new Resolver({ "common.yaml": common, "x.yaml": spec }, "x.yaml");
const named = () => new SchemaTypes("InferOutput", (name) => `schemas.${name}`);

Deno.test("propertyName: bare identifiers, quoted otherwise", () => {
  const cases = [
    { name: "identifier", given: "getModel", want: "getModel" },
    { name: "dash", given: "x-id", want: `"x-id"` },
    { name: "status class", given: "4XX", want: `"4XX"` },
  ];
  for (const { name, given, want } of cases) assert.equal(propertyName(given), want, name);
});

Deno.test("parameterMembers: openapi-fetch's parameters, required where a parameter is", () => {
  const cases = [
    {
      name: "none",
      given: [],
      want: ["query?: never", "header?: never", "path?: never", "cookie?: never"],
    },
    {
      name: "a path parameter by reference, an optional query parameter inline",
      given: [
        { name: "id", in: "path", schema: { $ref: "#/components/schemas/ModelId" } },
        { name: "ready", in: "query", schema: { type: "boolean" } },
      ],
      want: [
        "query?: { ready?: v.InferOutput<typeof inline1> }",
        "header?: never",
        "path: { id: schemas.ModelId }",
        "cookie?: never",
      ],
    },
    {
      name: "a required query parameter makes query required",
      given: [{ name: "type", in: "query", required: true, schema: { type: "string" } }],
      want: [
        "query: { type: v.InferOutput<typeof inline1> }",
        "header?: never",
        "path?: never",
        "cookie?: never",
      ],
    },
  ];
  for (const { name, given, want } of cases) {
    assert.deepEqual(parameterMembers(given, named()), want, name);
  }
});

Deno.test("requestBodyType: required or not, every media type", () => {
  const cases = [
    { name: "no body", given: {}, want: "requestBody?: never" },
    {
      name: "required JSON body",
      given: {
        requestBody: {
          required: true,
          content: { "application/json": { schema: { $ref: "#/components/schemas/In" } } },
        },
      },
      want: `requestBody: { content: { "application/json": schemas.In } }`,
    },
    {
      name: "optional body without a schema",
      given: { requestBody: { content: { "application/octet-stream": {} } } },
      want: `requestBody?: { content: { "application/octet-stream": unknown } }`,
    },
  ];
  for (const { name, given, want } of cases) {
    assert.equal(requestBodyType(given, resolver(), named()), want, name);
  }
});

Deno.test("responseMembers: every status, cross-file responses resolved", () => {
  const headers = "headers: { [name: string]: unknown }";
  const cases = [
    {
      name: "JSON, no content, and an error of common.yaml",
      given: {
        responses: {
          "200": {
            description: "ok",
            content: { "application/json": { schema: { $ref: "#/components/schemas/Model" } } },
          },
          "304": { description: "not modified" },
          "404": { $ref: "common.yaml#/components/responses/Error" },
          default: { $ref: "common.yaml#/components/responses/Error" },
        },
      },
      want: [
        `200: { ${headers}; content: { "application/json": schemas.Model } }`,
        `304: { ${headers}; content?: never }`,
        `404: { ${headers}; content: { "application/json": schemas.Error } }`,
        `default: { ${headers}; content: { "application/json": schemas.Error } }`,
      ],
    },
  ];
  for (const { name, given, want } of cases) {
    assert.deepEqual(responseMembers(given, resolver(), named()), want, name);
  }
});

Deno.test("emitTypes: components, paths and operations openapi-fetch reads", () => {
  const spec = {
    paths: {
      "/models/{id}": {
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        get: {
          operationId: "getModel",
          summary: "Read a model",
          responses: { "404": { $ref: "common.yaml#/components/responses/Error" } },
        },
      },
    },
    components: { schemas: { Model: { type: "object" } } },
  };
  const cases = [
    {
      name: "a spec with paths",
      given: spec,
      want: [
        `import * as v from "valibot";`,
        `import type * as schemas from "./validators.ts";`,
        `const inline1 = v.string("must be a string");`,
        `    Error: schemas.Error;\n    Model: schemas.Model;`,
        `  "/models/{id}": {\n    parameters: { query?: never; header?: never; path: { id: v.InferOutput<typeof inline1> }; cookie?: never };\n    /** Read a model */\n    get: operations["getModel"];\n    put?: never;`,
        `  getModel: {\n    parameters: {\n      query?: never;`,
      ],
    },
    {
      name: "a spec without paths",
      given: { components: { schemas: { A: { type: "string" } } } },
      want: [`    A: schemas.A;`, `export type paths = Record<string, never>;`],
    },
  ];
  for (const { name, given, want } of cases) {
    const source = emitTypes(given, "spec/x.yaml", resolver(given));
    for (const part of want) assert.ok(source.includes(part), `${name}: ${part}\n${source}`);
  }
});
