import assert from "node:assert/strict";
import { callerToken } from "./hub_route.ts";

const JWT = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhY2N0LTEifQ.c2lnbmF0dXJl";

Deno.test("callerToken: x-edge-authorization first, else an Authorization that is a token", () => {
  const of = (headers: Record<string, string>) => callerToken(new Headers(headers));
  assert.equal(of({ "x-edge-authorization": `Bearer ${JWT}`, authorization: "bearer 1234" }), JWT);
  assert.equal(of({ authorization: `Bearer ${JWT}` }), JWT);
  // A microservice's API key is its callee's business, never sent to the hub as a token.
  assert.equal(of({ authorization: "bearer 1234" }), undefined);
  assert.equal(of({ authorization: "Basic dXNlcjpwYXNz" }), undefined);
  assert.equal(of({ "x-edge-authorization": JWT }), undefined, "not a bearer credential");
  assert.equal(of({}), undefined);
});
