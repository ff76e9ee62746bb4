/**
 * Checks of responses against spec/store.yaml: status, content type, and a body that validates
 * against the schema the spec gives for it.
 *
 * @module
 */
import assert from "node:assert/strict";
import * as v from "valibot";
import { ErrorSchema } from "../gen/store/validators.ts";

/** Options an SDK call takes from `wire`. */
export interface WireOptions {
  parseAs: "stream";
  fetch: (request: Request) => Promise<Response>;
}

/**
 * The response of an SDK call, its body unread, for the checks below: the tests call the node
 * through the SDK and judge what came over the wire. `call` spreads the options it is given
 * into the SDK call: a success is then left unread (a stream), and an error answer, which the
 * SDK reads, is copied first.
 */
export async function wire(
  call: (options: WireOptions) => Promise<{ response: Response }>,
): Promise<Response> {
  let failed: Response | undefined;
  const { response } = await call({
    parseAs: "stream",
    fetch: async (request) => {
      const response = await fetch(request);
      if (!response.ok) failed = response.clone();
      return response;
    },
  });
  return failed ?? response;
}

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
