import assert from "node:assert/strict";
import fc from "fast-check";
import * as v from "valibot";
import { ResponseMessageSchema } from "../../../gen/hub/validators.ts";
import { plainResponse } from "./response_check.ts";

/** Mostly a valid value (`good`), else one near it: a wrong kind, a limit, one past it. */
const mostly = <T>(good: fc.Arbitrary<T>, ...bad: fc.Arbitrary<unknown>[]) =>
  fc.oneof({ weight: 12, arbitrary: good }, ...bad.map((arbitrary) => ({ weight: 1, arbitrary })));

const text = mostly(
  fc.string({ maxLength: 4 }),
  fc.constantFrom("x".repeat(16384), "x".repeat(16385)),
  fc.integer(),
  fc.constant(null),
);
const header = mostly(
  fc.tuple(text, text),
  fc.array(text, { maxLength: 3 }),
  fc.string(),
);
const fields = fc.record({
  t: mostly(fc.constant("res"), fc.string()),
  s: mostly(fc.integer({ min: 1, max: 2 ** 40 }), fc.constantFrom(0, -1, 2 ** 53, 1.5, "1")),
  status: mostly(
    fc.integer({ min: 100, max: 599 }),
    fc.constantFrom(99, 600, 200.5, "200"),
  ),
  headers: mostly(
    fc.array(header, { maxLength: 4 }),
    fc.constantFrom(256, 257).map((n) => Array(n).fill(["a", "b"])),
    fc.constantFrom(null, {}, "a: b"),
  ),
  body: mostly(fc.boolean(), fc.constantFrom(0, "true")),
  inline: mostly(
    fc.string({ maxLength: 4 }),
    fc.constantFrom("y".repeat(87384), "y".repeat(87385)),
    fc.integer(),
  ),
}, { requiredKeys: ["t", "s", "status", "headers", "body"] });
/** Now and then a key the schema does not know (`__proto__` included). */
const message = fc.tuple(
  fields,
  mostly(fc.constant(null), fc.constantFrom("extra", "__proto__", "constructor")),
  fc.anything(),
).map(([value, key, extra]) =>
  key === null ? value : JSON.parse(
    `${JSON.stringify(value).slice(0, -1)},${JSON.stringify(key)}:${
      JSON.stringify(extra) ?? "null"
    }}`,
  )
);

Deno.test("the hand check of a response's head accepts exactly what the schema does, as it does", () => {
  fc.assert(
    fc.property(message, (value) => {
      // As it comes off the channel: JSON.
      const parsed = JSON.parse(JSON.stringify(value) ?? "null");
      const schema = v.safeParse(ResponseMessageSchema, parsed);
      assert.equal(plainResponse(parsed), schema.success, JSON.stringify(parsed).slice(0, 300));
      if (schema.success) assert.deepEqual({ ...parsed }, schema.output);
    }),
    { numRuns: 3000 },
  );
});

Deno.test("a plain response's head passes the hand check; what does not is left to the schema", () => {
  const plain = {
    t: "res",
    s: 1,
    status: 200,
    headers: [["content-type", "text/plain"]],
    body: true,
  };
  assert.ok(plainResponse(plain));
  assert.ok(plainResponse({ ...plain, inline: "hello" }));
  for (
    const bad of [
      { ...plain, extra: 1 },
      { ...plain, s: 0 },
      { ...plain, status: 600 },
      { ...plain, headers: [["a"]] },
      { ...plain, body: "yes" },
      JSON.parse(`{"t":"res","s":1,"status":200,"headers":[],"body":true,"__proto__":{}}`),
      [plain],
      null,
    ]
  ) {
    assert.equal(plainResponse(bad), false, JSON.stringify(bad));
    assert.equal(plainResponse(bad), v.safeParse(ResponseMessageSchema, bad).success);
  }
});
