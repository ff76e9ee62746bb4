/**
 * What a node's log says of peers it cannot list: the cause (refused, timeout), once, however
 * often the peer is checked (issue 40: "fetch failed", a line per peer and no cause).
 */
import assert from "node:assert/strict";
import { startTestNode, waitFor } from "../testing/node.ts";

/** A port where nothing listens (taken, then freed). */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

Deno.test("a static peer that refuses or never answers is named once, with the cause", async () => {
  const refused = `http://127.0.0.1:${closedPort()}`;
  // Accepts connections and never answers: the check's timeout.
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of silent) held.push(conn);
  })();
  const silentUrl = `http://127.0.0.1:${silent.addr.port}`;
  try {
    await using node = await startTestNode({
      config: {
        apiKey: "discovery-log-test-key-0123",
        discovery: { mdns: false, announceSeconds: 0.5, peers: [refused, silentUrl] },
      },
    });
    const lines = () => node.output().split("\n").filter((line) => line.startsWith("discovery:"));
    await waitFor(
      () => lines().some((line) => line.includes(silentUrl)),
      "the silent peer's timeout",
      15_000,
    );
    // Several rounds of checks have run by now (every 0.5 s): still one line each.
    assert.deepEqual(lines(), [
      `discovery: not listing peer at ${refused}: connection refused`,
      `discovery: not listing peer at ${silentUrl}: timeout (no answer in 3 s)`,
    ]);
  } finally {
    silent.close();
    for (const conn of held) conn.close();
    await accepting.catch(() => {});
  }
});
