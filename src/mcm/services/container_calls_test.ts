import assert from "node:assert/strict";
import {
  Cancelled,
  Forbidden,
  Invalid,
  NotFound,
  TooLarge,
  TooMany,
  Unauthenticated,
  Unavailable,
} from "../../errors/mod.ts";
import { NodeCallError } from "../sandbox/worker/node_calls.ts";
import { callFailure } from "./container_calls.ts";

Deno.test("callFailure: a domain error crosses the channel as its kind, never a status", () => {
  assert.deepEqual(callFailure(new Invalid("pass 'model'")), {
    message: "pass 'model'",
    kind: "invalid",
  });
  assert.deepEqual(callFailure(new Unavailable("busy", { retryAfterSeconds: 3 })), {
    message: "busy",
    kind: "unavailable",
    details: { retryAfterSeconds: 3 },
  });
});

Deno.test("callFailure: any other failure is the node's own, its message kept in the node", () => {
  assert.deepEqual(callFailure(new Error("disk on fire at /var/lib/x")), {
    message: "the node failed",
    kind: "internal",
  });
});

Deno.test("the sandbox gives the microservice the statuses it always got", () => {
  const cases: [Error, number][] = [
    [new Invalid("x"), 400],
    [new Unauthenticated("x"), 401],
    [new Forbidden("x"), 403],
    [new NotFound("x"), 404],
    [new TooLarge("x"), 413],
    [new TooMany("x"), 429],
    [new Cancelled("x"), 499],
    [new Unavailable("x"), 503],
    [new Error("x"), 500],
  ];
  for (const [error, status] of cases) {
    const { message, kind } = callFailure(error);
    assert.equal(new NodeCallError(message, kind).status, status, `${error.name}`);
  }
});
