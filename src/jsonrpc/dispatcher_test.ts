import assert from "node:assert/strict";
import * as v from "valibot";
import { bindParams, type MethodSpec } from "./dispatcher.ts";

const none: MethodSpec = { params: [], result: v.unknown() };
const two: MethodSpec = {
  params: [
    { name: "token", required: true, schema: v.string() },
    { name: "speed", required: false, schema: v.pipe(v.string(), v.regex(/^\d+$/)) },
  ],
  result: v.unknown(),
};

Deno.test("bindParams: positional and named, extras, missing and invalid params", () => {
  const ok: [MethodSpec, unknown, Record<string, unknown>][] = [
    [none, undefined, {}],
    [none, [""], {}], // what real clients send to getMe
    [none, {}, {}],
    [two, ["t"], { token: "t" }],
    [two, ["t", "5"], { token: "t", speed: "5" }],
    [two, { speed: "5", token: "t" }, { token: "t", speed: "5" }],
  ];
  for (const [spec, given, want] of ok) {
    assert.deepEqual(bindParams("m", spec, given), want, JSON.stringify(given));
  }
  const refused: [MethodSpec, unknown, RegExp][] = [
    [none, { token: "t" }, /no param 'token'/],
    [two, [], /missing param 'token'/],
    [two, ["t", "5", "x"], /at most 2 params/],
    [two, { token: "t", nope: 1 }, /no param 'nope'/],
    [two, [42], /param 'token'/],
    [two, ["t", "fast"], /param 'speed'/],
  ];
  for (const [spec, given, message] of refused) {
    assert.throws(
      () => bindParams("m", spec, given),
      (error: { code?: number; message: string }) =>
        error.code === -32602 && message.test(error.message),
      JSON.stringify(given),
    );
  }
});
