import assert from "node:assert/strict";
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
