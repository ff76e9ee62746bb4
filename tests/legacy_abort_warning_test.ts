/**
 * Deno.serve's request.signal deprecation ("request.signal aborts on successful responses
 * (legacy behavior)"): printed once a handler has read the signal of a request answered in
 * full, as every chat does. It reads like an error a user cannot act on, so the node runs with
 * the new behaviour (--unstable-no-legacy-abort), where the signal means only that the client
 * went away (issue 40).
 */
import assert from "node:assert/strict";
import { startTestNode } from "../testing/node.ts";

Deno.test("a chat answered in full prints no request.signal deprecation", async () => {
  await using node = await startTestNode();
  // Unknown models: answered in full, after the handlers have read the request's signal.
  for (const stream of [false, true]) {
    const response = await fetch(`${node.url}/v1/chat/completions`, {
      method: "POST",
      headers: node.auth({ "Content-Type": "application/json" }),
      body: JSON.stringify({
        model: "nosuch",
        stream,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    await response.body?.cancel();
    assert.equal(response.status, 404);
  }
  // The warning comes after the response; a marker request after it shows the log has caught up.
  await fetch(`${node.url}/nosuch-marker`).then((r) => r.body?.cancel());
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.doesNotMatch(node.output(), /legacy behavior|no-legacy-abort/);
});
