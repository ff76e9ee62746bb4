import assert from "node:assert/strict";
import { carriesCors } from "./cors.ts";
import { JsonCache } from "./json_cache.ts";
import { jsonText } from "./reply.ts";

Deno.test("JsonCache: kept text and answers, until the generation moves on", async () => {
  const cache = new JsonCache();
  assert.equal(cache.answer("a", 1), undefined, "nothing kept yet");
  let computed = 0;
  const text = cache.get("a", 1, () => ({ id: "a", n: ++computed }));
  assert.equal(text, '{"id":"a","n":1}');
  assert.equal(cache.get("a", 1, () => ({ id: "a", n: ++computed })), text);
  assert.equal(computed, 1);
  const made = jsonText(200, text);
  const seen = async (response: Response) =>
    `${response.status} ${JSON.stringify([...response.headers])} ${await response.text()}`;
  const expected = await seen(made);
  for (let i = 0; i < 3; i++) {
    const answer = cache.answer("a", 1);
    assert.ok(answer && carriesCors(answer));
    assert.equal(await seen(answer), expected, "a copy, readable every time");
  }
  assert.equal(cache.answer("b", 1), undefined);
  assert.equal(cache.answer("a", 2), undefined, "a write moved the generation on");
  assert.equal(cache.get("a", 2, () => ({ id: "a", n: ++computed })), '{"id":"a","n":2}');
});
