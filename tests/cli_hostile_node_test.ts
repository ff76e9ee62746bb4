/**
 * The CLI against a node it cannot trust (an old one, or a server posing as one): what it prints
 * of the node's answers must not drive the terminal. Here the "node" is a plain HTTP server that
 * sends raw escape sequences in `containers logs` lines, with and without -f; a real node escapes
 * them itself (src/mcm/runtime/container_log.ts), which is why this is not a test node.
 */
import assert from "node:assert/strict";
import { runEdgenode } from "../testing/node.ts";

/** Escapes that clear the screen, set the window title and forge a line. */
const HOSTILE = "\x1b[2J\x1b]0;owned\x07\rforged\nline";

/** A server answering the logs of container `x`, with the hostile text in each message. */
function hostileNode() {
  const line = { time: Date.UTC(2026, 0, 1), level: "info", message: HOSTILE };
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const url = new URL(request.url);
    if (url.pathname !== "/mcm/v1/containers/x/logs") return new Response(null, { status: 404 });
    if (url.searchParams.get("follow") !== "true") return Response.json({ data: [line] });
    const end = { end: "removed", message: `container x ${HOSTILE}` };
    const events = [line, end].map((message) => `data: ${JSON.stringify(message)}\n\n`).join("");
    return new Response(events, { headers: { "content-type": "text/event-stream" } });
  });
}

Deno.test("containers logs escapes a node's control characters, with and without -f", async () => {
  await using server = hostileNode();
  const env = {
    EDGENODE_NODE: `http://127.0.0.1:${server.addr.port}`,
    EDGENODE_KEY: "k".repeat(32),
  };
  for (const args of [["containers", "logs", "x"], ["containers", "logs", "x", "-f"]]) {
    const shown = await runEdgenode(args, env);
    assert.equal(shown.code, 0, shown.stderr);
    const printed = shown.stdout + shown.stderr;
    // Only tab and the line ends the CLI writes itself: the escapes above are what is meant.
    // deno-lint-ignore no-control-regex
    assert.ok(!/[\x00-\x08\x0b-\x1f\x7f]/.test(printed), `no control characters: ${printed}`);
    assert.match(shown.stdout, /info {3}\\u001b\[2J\\u001b\]0;owned\\u0007\\rforged\\nline\n$/);
    if (args.includes("-f")) assert.match(shown.stderr, /container x \\u001b\[2J/);
  }
});
