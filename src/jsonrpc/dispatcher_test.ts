import assert from "node:assert/strict";
import * as v from "valibot";
import { Forbidden, NotFound } from "../errors/mod.ts";
import {
  bindParams,
  jsonRpcEndpoint,
  type MethodHandlers,
  type MethodSpec,
  preparedResult,
} from "./dispatcher.ts";
import { jsonRpcErrorOf } from "./error_codes.ts";

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

Deno.test("jsonRpcEndpoint: a single call answered directly is byte for byte the library's answer", async () => {
  const spec = (params: MethodSpec["params"]): MethodSpec => ({ params, result: v.unknown() });
  const methods = {
    getMe: spec([]),
    echo: spec([{ name: "token", required: true, schema: v.string() }]),
    later: spec([]),
    refused: spec([]),
    refusedLater: spec([]),
    broken: spec([]),
    nothing: spec([]),
    kept: spec([]),
  };
  const kept = preparedResult({ name: 'n"ö\u2028', nested: { list: [1, null, "x"] } });
  const handlers: MethodHandlers<typeof methods> = {
    getMe: () => ({ nodeId: "n1", name: "node" }),
    echo: ({ token }) => ({ token }),
    later: async () => await Promise.resolve({ done: true }),
    refused: () => {
      throw new NotFound("no such thing");
    },
    refusedLater: async () => {
      await Promise.resolve();
      throw new Forbidden("not yours");
    },
    broken: () => {
      throw new TypeError("a bug");
    },
    nothing: () => undefined,
    kept: () => kept,
  };
  const direct = jsonRpcEndpoint(methods, handlers, jsonRpcErrorOf);
  const library = jsonRpcEndpoint(methods, handlers, jsonRpcErrorOf, { directCalls: false });
  const bodies = [
    `{"jsonrpc":"2.0","id":1,"method":"getMe"}`,
    ` {"jsonrpc":"2.0","id":"a","method":"getMe","params":[""]}`,
    `{"jsonrpc":"2.0","method":"getMe","params":{}}`,
    `{"jsonrpc":"2.0","id":null,"method":"getMe","params":{"x":1}}`,
    `{"jsonrpc":"2.0","id":1.5,"method":"getMe","extra":true}`,
    `{"jsonrpc":"2.0","id":1e400,"method":"getMe"}`,
    `{"jsonrpc":"2.0","id":-0,"method":"getMe"}`,
    `{"jsonrpc":"2.0","id":12345678901234567890,"method":"getMe"}`,
    `{"jsonrpc":"2.0","id":true,"method":"getMe"}`,
    `{"jsonrpc":"2.0","id":{},"method":"getMe"}`,
    `{"jsonrpc":"1.0","id":1,"method":"getMe"}`,
    `{"jsonrpc":"2.0","id":1,"method":"getMe","result":1}`,
    `{"jsonrpc":"2.0","id":1,"method":"getMe","error":{}}`,
    `{"jsonrpc":"2.0","id":1,"method":"getMe","params":null}`,
    `{"jsonrpc":"2.0","id":1,"method":"getMe","params":"x"}`,
    `{"jsonrpc":"2.0","id":1,"method":"getMe","params":[{"id":12345678901234567890,"method":"m"}]}`,
    `{"jsonrpc":"2.0","id":1,"method":"nope"}`,
    `{"jsonrpc":"2.0","id":1,"method":"__proto__"}`,
    `{"jsonrpc":"2.0","id":1,"method":7}`,
    `{"jsonrpc":"2.0","id":2,"method":"echo","params":["t"]}`,
    `{"jsonrpc":"2.0","id":2,"method":"echo","params":{"token":"t"}}`,
    `{"jsonrpc":"2.0","id":2,"method":"echo","params":[]}`,
    `{"jsonrpc":"2.0","id":2,"method":"echo","params":[5]}`,
    `{"jsonrpc":"2.0","id":2,"method":"echo","params":["t","u"]}`,
    `{"jsonrpc":"2.0","id":3,"method":"later"}`,
    `{"jsonrpc":"2.0","id":4,"method":"refused"}`,
    `{"jsonrpc":"2.0","id":5,"method":"refusedLater"}`,
    `{"jsonrpc":"2.0","id":6,"method":"nothing"}`,
    `{"jsonrpc":"2.0","id":8,"method":"kept"}`,
    `{"jsonrpc":"2.0","id":"\\u00e9\\"x","method":"kept"}`,
    `{"jsonrpc":"2.0","id":1e400,"method":"kept"}`,
    `{"jsonrpc":"2.0","id":-1.5e-7,"method":"kept"}`,
    `{"jsonrpc":"2.0","method":"kept"}`,
    `[{"jsonrpc":"2.0","id":1,"method":"getMe"},{"jsonrpc":"2.0","id":2,"method":"later"}]`,
    `[]`,
    `{"jsonrpc":"2.0","id":1,"method":"getMe"`,
    ``,
    `null`,
    `"getMe"`,
  ];
  const post = (body: string) =>
    new Request("http://127.0.0.1/jsonrpc/v1", { method: "POST", body });
  const seen = async (response: Response) =>
    `${response.status} ${JSON.stringify([...response.headers])} ${await response.text()}`;
  for (const body of bodies) {
    assert.equal(await seen(await direct(post(body))), await seen(await library(post(body))), body);
  }
  // An unexpected error is logged under a fresh id each time: the same answer but for the id.
  const errors: unknown[] = [];
  const log = console.error;
  console.error = (...args: unknown[]) => errors.push(args);
  try {
    const broken = `{"jsonrpc":"2.0","id":7,"method":"broken"}`;
    const anyId = (text: string) => text.replace(/logged as [0-9a-f-]+/, "logged as ID");
    assert.equal(
      anyId(await seen(await direct(post(broken)))),
      anyId(await seen(await library(post(broken)))),
    );
    assert.match(anyId(await seen(await direct(post(broken)))), /-32603,"message":"Internal/);
  } finally {
    console.error = log;
  }
  assert.equal(errors.length, 3);
  assert.ok(Object.isFrozen(kept.nested.list), "a prepared result is frozen through");
});
