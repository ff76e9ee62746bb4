/**
 * GET /models/{id} answers a record it answered before from the JSON it kept (src/store/routes.ts
 * `prepared`): these check that the kept answer is the one the handler gives, byte for byte, and
 * that a write, a query or a missing key still goes the handler's way.
 */
import assert from "node:assert/strict";
import { startTestNode, type TestNode } from "../testing/node.ts";

/** Status, headers (but the date) and body of an answer, as one string to compare. */
async function seen(response: Response): Promise<string> {
  const headers = [...response.headers].filter(([name]) => name !== "date");
  return `${response.status} ${JSON.stringify(headers)} ${await response.text()}`;
}

function put(node: TestNode, body: unknown) {
  return fetch(`${node.storeUrl}/models`, {
    method: "PUT",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify(body),
  });
}

Deno.test("a record read again is the same answer, and a write is seen at once", async () => {
  await using node = await startTestNode();
  const created = await fetch(`${node.storeUrl}/models`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify({ id: "m.1", version: "1", kind: "llm" }),
  });
  assert.equal(created.status, 201);
  await created.body?.cancel();
  const url = `${node.storeUrl}/models/m.1`;
  const first = await seen(await fetch(url));
  assert.match(
    first,
    /^200 .*"access-control-allow-origin","\*".*"content-type","application\/json"/,
  );
  for (
    const again of [url, `${url}?`, `${node.storeUrl}/models/m%2E1`, `${node.storeUrl}//models/m.1`]
  ) {
    assert.equal(await seen(await fetch(again)), first, again);
  }
  // HEAD: the same headers, no body.
  const head = await fetch(url, { method: "HEAD" });
  assert.equal(await seen(head), first.replace(/ \{.*$/, " "));

  const updated = await put(node, { action: "update", id: "m.1", gguf: { initContextSize: 512 } });
  assert.equal(updated.status, 200);
  const afterUpdate = await seen(await fetch(url));
  assert.notEqual(afterUpdate, first);
  assert.match(afterUpdate, /"initContextSize":512/);
  assert.equal(await seen(await fetch(url)), afterUpdate);

  // A query is the handler's to judge, every time.
  for (let i = 0; i < 2; i++) {
    assert.match(await seen(await fetch(`${url}?file=model`)), /^400 /);
    assert.match(await seen(await fetch(`${url}?nope=1`)), /^400 /);
  }
  const deleted = await fetch(url, { method: "DELETE", headers: node.auth() });
  assert.equal(deleted.status, 200);
  await deleted.body?.cancel();
  assert.match(await seen(await fetch(url)), /^404 /);
  assert.match(await seen(await fetch(`${node.storeUrl}/models/..m`)), /^400 /);
});

Deno.test("with readsRequireKey, a kept record is still refused without the key", async () => {
  await using node = await startTestNode({
    config: { apiKey: "a-test-key-of-enough-length", readsRequireKey: true },
  });
  const created = await fetch(`${node.storeUrl}/models`, {
    method: "POST",
    headers: node.auth({ "Content-Type": "application/json" }),
    body: JSON.stringify({ id: "m", version: "1", kind: "llm" }),
  });
  assert.equal(created.status, 201);
  await created.body?.cancel();
  const url = `${node.storeUrl}/models/m`;
  const first = await seen(await fetch(url, { headers: node.auth() }));
  assert.match(first, /^200 /);
  assert.equal(await seen(await fetch(url, { headers: node.auth() })), first);
  assert.match(await seen(await fetch(url)), /^401 /);
  const wrong = await fetch(url, { headers: { Authorization: "Bearer wrong-key-of-some-length" } });
  assert.match(await seen(wrong), /^403 /);
});
