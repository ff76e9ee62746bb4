import assert from "node:assert/strict";
import { RequestActivity } from "./request_activity.ts";
import { REQUESTS_BEGUN, REQUESTS_IN_FLIGHT } from "../host_protocol.ts";

Deno.test("a request counts in flight until it ends, once, however often it is ended", () => {
  const counters = new Int32Array(new SharedArrayBuffer(8));
  const activity = new RequestActivity(counters, 1000);
  activity.begin(1, 0);
  activity.begin(2, 0);
  assert.equal(counters[REQUESTS_IN_FLIGHT], 2);
  assert.equal(counters[REQUESTS_BEGUN], 2);
  activity.end(1);
  activity.end(1);
  assert.equal(counters[REQUESTS_IN_FLIGHT], 1);
});

Deno.test("a request past its time limit and a second stops counting without an end", () => {
  const counters = new Int32Array(new SharedArrayBuffer(8));
  const activity = new RequestActivity(counters, 1000);
  activity.begin(1, 0);
  activity.begin(2, 500);
  activity.expire(1999);
  assert.equal(counters[REQUESTS_IN_FLIGHT], 2);
  activity.expire(2000);
  assert.equal(counters[REQUESTS_IN_FLIGHT], 1);
  activity.end(1);
  assert.equal(counters[REQUESTS_IN_FLIGHT], 1, "already ended");
  activity.expire(2500);
  assert.equal(counters[REQUESTS_IN_FLIGHT], 0);
});
