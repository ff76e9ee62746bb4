/**
 * Checks of responses against spec/store.yaml: status, content type, and a body that validates
 * against the schema the spec gives for it.
 *
 * @module
 */
import assert from "node:assert/strict";
import * as v from "valibot";
import { ErrorSchema } from "../../gen/store/validators.ts";

/** Asserts the status and that the JSON body matches `schema`; returns the body. */
export async function expectJson<S extends v.GenericSchema>(
  response: Response,
  status: number,
  schema: S,
): Promise<v.InferOutput<S>> {
  const text = await response.text();
  assert.equal(response.status, status, `expected ${status}, got ${response.status}: ${text}`);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  const result = v.safeParse(schema, JSON.parse(text));
  assert.ok(
    result.success,
    `body does not match the spec: ${text}\n${JSON.stringify(result.issues)}`,
  );
  return result.output;
}

/** Asserts an error response: status, the spec's error shape, code = status, and the message. */
export async function expectError(
  response: Response,
  status: number,
  message?: RegExp,
): Promise<string> {
  const body = await expectJson(response, status, ErrorSchema);
  assert.equal(body.error.code, status);
  assert.ok(body.error.message.length > 0);
  if (message) assert.match(body.error.message, message);
  return body.error.message;
}
