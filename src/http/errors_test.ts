import assert from "node:assert/strict";
import {
  Invalid,
  NotFound,
  RangeNotSatisfiable,
  Unauthenticated,
  Unavailable,
} from "../errors/mod.ts";
import { errorPayload, responseForError, statusCodeError } from "./errors.ts";

/** Runs `fn` with console.error captured; returns what was logged. */
function logged(fn: () => void): unknown[][] {
  const lines: unknown[][] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => void lines.push(args);
  try {
    fn();
  } finally {
    console.error = original;
  }
  return lines;
}

Deno.test("errorPayload: a domain error's status, headers, body and details, nothing logged", () => {
  const cases: [Error, number, Record<string, string>][] = [
    [new NotFound("no model 'm'", { resource: "model", id: "m" }), 404, {}],
    [new Invalid("field 'top_p' must be at most 1", { field: "top_p" }), 400, {}],
    [new Unavailable("busy", { retryAfterSeconds: 2 }), 503, { "Retry-After": "2" }],
    [new Unauthenticated("send a token"), 401, { "WWW-Authenticate": 'Bearer realm="edgenode"' }],
    [new RangeNotSatisfiable("bad range", { size: 9 }), 416, {
      "Content-Range": "bytes */9",
      "Access-Control-Expose-Headers": "Content-Range",
    }],
  ];
  for (const [error, status, headers] of cases) {
    const lines = logged(() => {
      const payload = errorPayload(error);
      assert.equal(payload.status, status);
      assert.deepEqual(payload.headers, headers);
      assert.deepEqual(payload.body, { code: status, message: error.message });
      assert.deepEqual(payload.details, (error as NotFound).details);
    });
    assert.deepEqual(lines, []);
  }
});

Deno.test("errorPayload: a service's override replaces the status", () => {
  assert.equal(errorPayload(new Unauthenticated("key"), "x", { unauthenticated: 403 }).status, 403);
});

Deno.test("errorPayload: anything else is logged once and answered 500 without internals", () => {
  let payload!: ReturnType<typeof errorPayload>;
  const lines = logged(() => {
    payload = errorPayload(new TypeError("secret /var/lib/x is undefined"), "download of 'm'");
  });
  assert.equal(lines.length, 1);
  assert.match(String(lines[0][0]), /^\[[0-9a-f-]{36}\] download of 'm' failed:$/);
  assert.equal(payload.status, 500);
  assert.deepEqual(payload.headers, {});
  assert.deepEqual(payload.details, {});
  assert.match(payload.body.message, /^internal error \(logged as [0-9a-f-]{36}\)$/);
  const id = /logged as ([0-9a-f-]+)/.exec(payload.body.message)![1];
  assert.ok(String(lines[0][0]).startsWith(`[${id}]`), "the same id");
  assert.doesNotMatch(payload.body.message, /secret/);
});

Deno.test("responseForError: the payload in the service's shape, the request in the log", async () => {
  const request = new Request("http://h/models/m?x=1", { method: "DELETE" });
  const answer = responseForError(new NotFound("no model 'm'"), request, statusCodeError);
  assert.equal(answer.status, 404);
  assert.deepEqual(await answer.json(), { message: "no model 'm'", statusCode: 404 });
  const standard = responseForError(new Unavailable("wait", { retryAfterSeconds: 1 }), request);
  assert.equal(standard.headers.get("retry-after"), "1");
  assert.deepEqual(await standard.json(), { error: { code: 503, message: "wait" } });
  const lines = logged(() => {
    const failed = responseForError(new Error("boom"), request);
    assert.equal(failed.status, 500);
  });
  assert.match(String(lines[0][0]), /\] DELETE \/models\/m failed:$/);
});

Deno.test("ErrorFormat: a format gets the error's details", async () => {
  const answer = responseForError(
    new Invalid("field 'n' is wrong", { field: "n" }),
    new Request("http://h/"),
    (status, message, _headers, details) => Response.json({ status, message, details }, { status }),
  );
  assert.deepEqual(await answer.json(), {
    status: 400,
    message: "field 'n' is wrong",
    details: { field: "n" },
  });
});
