import assert from "node:assert/strict";
import { readEnvelope } from "./envelope.ts";

const codeOf = (item: unknown) => (item as { error?: { code: number } }).error?.code;
const idOf = (item: unknown) => JSON.stringify((item as { id: unknown }).id);

Deno.test("readEnvelope: what JSON-RPC 2.0 and the reference's clients send", () => {
  const cases: { name: string; given: string; want: "parse" | [number | "ok", string][] }[] = [
    { name: "not JSON", given: "{not json", want: "parse" },
    { name: "a broken batch", given: '[{"jsonrpc":"2.0","method":"a","id":1}', want: "parse" },
    { name: "null is JSON, not a request", given: "null", want: [[-32600, "null"]] },
    { name: "an empty batch", given: "[]", want: [[-32600, "null"]] },
    {
      name: "spec example 6",
      given: '{"jsonrpc":"2.0","method":1,"params":"bar"}',
      want: [[
        -32600,
        "null",
      ]],
    },
    {
      name: "params a string",
      given: '{"jsonrpc":"2.0","method":"a","params":"bar","id":3}',
      want: [[
        -32600,
        "3",
      ]],
    },
    {
      name: "an object id",
      given: '{"jsonrpc":"2.0","method":"a","id":{"x":1}}',
      want: [[
        -32600,
        "null",
      ]],
    },
    {
      name: "wrong version",
      given: '{"jsonrpc":"1.0","method":"a","id":"q"}',
      want: [[
        -32600,
        '"q"',
      ]],
    },
    {
      name: "no id: answered with id null",
      given: '{"jsonrpc":"2.0","method":"a"}',
      want: [[
        "ok",
        "null",
      ]],
    },
    {
      name: "an id beyond 2^53 keeps its digits",
      given: '{"jsonrpc":"2.0","method":"a","id":12345678901234567890,"params":{"id":9}}',
      want: [["ok", "12345678901234567890"]],
    },
    {
      name: "a batch of mixed members",
      given: '[1,{"jsonrpc":"2.0","method":"a","id":2},{"jsonrpc":"2.0","method":5,"id":3}]',
      want: [[-32600, "null"], ["ok", "2"], [-32600, "3"]],
    },
  ];
  for (const { name, given, want } of cases) {
    const envelope = readEnvelope(given);
    if (want === "parse") {
      assert.equal(envelope, undefined, name);
      continue;
    }
    assert.ok(envelope, name);
    const items = envelope.kind === "single" ? [envelope.item] : envelope.items;
    assert.deepEqual(
      items.map((item) => [codeOf(item) ?? "ok", idOf(item)]),
      want,
      name,
    );
  }
});

Deno.test("readEnvelope: a large id inside params stays a number", () => {
  const envelope = readEnvelope(
    '{"jsonrpc":"2.0","method":"a","id":1,"params":{"id":12345678901234567890}}',
  );
  assert.ok(envelope?.kind === "single");
  const params = (envelope.item as { params: { id: unknown } }).params;
  assert.equal(typeof params.id, "number");
});
