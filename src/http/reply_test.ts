import assert from "node:assert/strict";
import * as v from "valibot";
import { carriesCors } from "./cors.ts";
import { empty, fileReply, json, jsonText, raw } from "./reply.ts";
import type { JsonText } from "./reply.ts";
import type { Handlers } from "./routes.ts";

/** A route table as scripts/gen/routes_emitter.ts writes one. */
const routes = {
  getThing: {
    method: "GET",
    path: "/things/:id",
    auth: false,
    params: v.strictObject({ id: v.string() }),
    query: v.strictObject({}),
    body: { kind: "none" },
    responses: {} as unknown as {
      200: { json: { id: string; size: number } } | { raw: true };
      304: { empty: true };
    },
  },
  makeThing: {
    method: "POST",
    path: "/things",
    auth: true,
    params: v.strictObject({}),
    query: v.strictObject({}),
    body: { kind: "none" },
    responses: {} as unknown as {
      200: { json: { id: string } };
      201: { json: { id: string } };
    },
  },
} as const;

Deno.test("typed answers: what the spec declares compiles, anything else does not", () => {
  const created = Math.random() > 2;
  const good: Handlers<typeof routes> = {
    getThing: ({ params }) => json(200, { id: params.id, size: 1 }),
    makeThing: () => json(created ? 201 : 200, { id: "t" }),
  };
  const alsoGood: Handlers<typeof routes> = {
    getThing: () => empty(304),
    makeThing: async () => await Promise.resolve(json(201, { id: "t" })),
  };
  const wrong: Partial<Handlers<typeof routes>> = {
    // @ts-expect-error: a body without a field the spec requires.
    getThing: () => json(200, { id: "t", size: 1, extra: true } as { id: string; extra: boolean }),
    // @ts-expect-error: a status the operation does not declare.
    makeThing: () => json(202, { id: "t" }),
  };
  const untyped: Partial<Handlers<typeof routes>> = {
    // @ts-expect-error: a plain Response says nothing of its body.
    getThing: () => new Response("{}"),
    // @ts-expect-error: no body where the spec declares one.
    makeThing: () => empty(200),
  };
  assert.ok(good && alsoGood && wrong && untyped);
});

Deno.test("typed answers: the responses they build", async () => {
  const answer = json(201, { id: "t" }, { "X-Id": "t" });
  assert.equal(answer.status, 201);
  assert.equal(answer.headers.get("x-id"), "t");
  assert.deepEqual(await answer.json(), { id: "t" });
  const text = jsonText(200, '{"id":"t"}' as JsonText<{ id: string }>);
  assert.equal(text.headers.get("content-type"), "application/json");
  assert.equal(await text.text(), '{"id":"t"}');
  assert.equal(empty(304).body, null);
  assert.throws(() => raw(new Response("x", { status: 500 }), [200, 206]), /not one of 200, 206/);
  assert.equal(fileReply(new Response(null, { status: 304 })).status, 304);
  // JSON and empty answers carry CORS, and say so without their headers being read.
  for (const answer of [json(200, {}), json(201, {}, { "X-Id": "t" }), text, empty(204)]) {
    assert.ok(carriesCors(answer));
    assert.equal(answer.headers.get("access-control-allow-origin"), "*");
  }
  assert.equal(json(200, {}).headers.get("content-type"), "application/json");
  assert.ok(!carriesCors(new Response("x", { headers: { "Access-Control-Allow-Origin": "*" } })));
  assert.throws(() => fileReply(new Response("x", { status: 404 })), /not one of/);
});
