import assert from "node:assert/strict";
import { Resolver } from "./refs.ts";
import { emitRoutes } from "./routes_emitter.ts";

const item = (requestBody?: unknown) => ({
  post: { operationId: "op", ...(requestBody ? { requestBody } : {}) },
});
const schema = { type: "object", properties: { a: { type: "string" } } };

/** The body spec line of the one operation. */
function bodyLine(requestBody?: unknown): string {
  const out = emitRoutes({ paths: { "/x/{id}": item(requestBody) } }, "test", "test.yaml");
  return out.split("\n").find((line) => line.trim().startsWith("body:"))!.trim();
}

Deno.test("emitRoutes: how each operation's body is read, from its media types", () => {
  assert.equal(bodyLine(), `body: { kind: "none" },`);
  assert.match(
    bodyLine({ content: { "application/json": { schema } } }),
    /kind: "json", .*contentTypes: \["application\/json"\], untyped: false/,
  );
  assert.match(
    bodyLine({
      "x-json-without-content-type": true,
      content: {
        "application/json": { schema },
        "application/x-www-form-urlencoded": { schema },
      },
    }),
    /contentTypes: \["application\/json","application\/x-www-form-urlencoded"\], untyped: true/,
  );
  assert.equal(
    bodyLine({ content: { "application/x-tar": { schema: {} }, "application/octet-stream": {} } }),
    `body: { kind: "stream", contentTypes: ["application/x-tar","application/octet-stream"] },`,
  );
  assert.throws(
    () =>
      bodyLine({
        content: { "application/json": { schema }, "text/plain": { schema: { type: "string" } } },
      }),
    /must have the same schema/,
  );
});

Deno.test("emitRoutes: paths, methods, the key requirement and parameters", () => {
  const out = emitRoutes(
    {
      security: [{ apiKey: [] }],
      paths: {
        "/models/{id}": {
          get: {
            operationId: "getModel",
            security: [{}],
            parameters: [{ name: "id", in: "path", schema: { type: "string" } }],
          },
          delete: {
            operationId: "deleteModel",
            parameters: [
              { name: "id", in: "path", schema: { type: "string" } },
              { name: "purge", in: "query", schema: { type: "boolean" } },
            ],
          },
        },
      },
    },
    "store",
    "store.yaml",
  );
  assert.match(out, /getModel: \{\n\s+method: "GET",\n\s+path: "\/models\/:id",\n\s+auth: false,/);
  assert.match(out, /deleteModel: \{\n\s+method: "DELETE",\n[^]*?auth: true,/);
  assert.match(out, /"purge": v\.optional\(/);
  assert.match(out, /export const storeRoutes = \{/);
});

Deno.test("emitRoutes: the responses field types each success status's body", () => {
  const model = { $ref: "#/components/schemas/Model" };
  const json = (schema?: unknown) => ({
    description: "",
    content: { "application/json": schema ? { schema } : {} },
  });
  const cases = [
    {
      name: "json, raw, empty",
      given: {
        "200": json(model),
        "206": {
          description: "",
          content: { "application/octet-stream": { schema: { type: "string" } } },
        },
        "204": { description: "" },
      },
      want:
        `{ 200: { json: v.InferInput<typeof ModelSchema> }; 204: { empty: true }; 206: { raw: true } }`,
    },
    {
      name: "both JSON and another type: a union",
      given: {
        "200": {
          description: "",
          content: {
            "application/json": { schema: model },
            "text/html": { schema: { type: "string" } },
          },
        },
      },
      want: `{ 200: { json: v.InferInput<typeof ModelSchema> } | { raw: true } }`,
    },
    {
      name: "101 is kept; default, 4xx and 5xx are not",
      given: {
        "101": { description: "" },
        "400": json(model),
        "503": json(model),
        default: json(model),
      },
      want: `{ 101: { empty: true } }`,
    },
    {
      name: "JSON without a schema is raw; a +json type with one is json",
      given: {
        "200": json(),
        "201": { description: "", content: { "application/problem+json": { schema: model } } },
      },
      want: `{ 200: { raw: true }; 201: { json: v.InferInput<typeof ModelSchema> } }`,
    },
    {
      name: "an inline schema goes through a local constant",
      given: { "200": json({ type: "object", properties: { ok: { type: "boolean" } } }) },
      want: `{ 200: { json: v.InferInput<typeof inline1> } }`,
    },
    {
      name: "a response of common.yaml, resolved across files",
      given: { "200": { $ref: "common.yaml#/components/responses/Ok" } },
      want: `{ 200: { json: v.InferInput<typeof StatusSchema> } }`,
    },
    { name: "no response in the spec", given: undefined, want: `{}` },
  ];
  for (const { name, given, want } of cases) {
    const spec = {
      paths: { "/x": { get: { operationId: "op", ...(given ? { responses: given } : {}) } } },
    };
    const documents = {
      "x.yaml": spec,
      "common.yaml": {
        components: {
          responses: {
            Ok: {
              description: "",
              content: { "application/json": { schema: { $ref: "#/components/schemas/Status" } } },
            },
          },
        },
      },
    };
    const out = emitRoutes(spec, "x", "spec/x.yaml", new Resolver(documents, "x.yaml"));
    const line = out.split("\n").find((l) => l.trim().startsWith("responses:"))!.trim();
    assert.equal(line, `responses: {} as unknown as ${want},`, name);
    if (want.includes("inline1")) {
      assert.match(out, /const inline1 = v\.looseObject\(\{ "ok": v\.optional\(v\.boolean/);
    }
    for (const schema of want.match(/[A-Z]\w*Schema/g) ?? []) {
      assert.match(
        out,
        new RegExp(`import \\{[^}]*\\b${schema}\\b[^}]*\\} from "./validators.ts"`),
      );
    }
  }
});

Deno.test("emitRoutes: parameters and bodies through references into common.yaml", () => {
  const documents = {
    "common.yaml": {
      components: {
        parameters: {
          Id: {
            name: "id",
            in: "path",
            required: true,
            schema: { $ref: "#/components/schemas/Id" },
          },
        },
        schemas: { Id: { type: "string" } },
      },
    },
  };
  const spec = {
    paths: {
      "/x/{id}": {
        parameters: [{ $ref: "common.yaml#/components/parameters/Id" }],
        put: {
          operationId: "put",
          requestBody: {
            content: {
              "application/json": { schema: { $ref: "common.yaml#/components/schemas/Id" } },
            },
          },
        },
      },
    },
  };
  const out = emitRoutes(
    spec,
    "x",
    "spec/x.yaml",
    new Resolver({ ...documents, "x.yaml": spec }, "x.yaml"),
  );
  assert.match(out, /params: v\.strictObject\(\{ "id": IdSchema \}\)/);
  assert.match(out, /body: \{ kind: "json", schema: IdSchema,/);
  assert.match(out, /import \{ IdSchema \} from "\.\/validators\.ts";/);
});
