import assert from "node:assert/strict";
import { fetchFailure } from "./fetch_failure.ts";

/** What fetch threw for `url`. */
async function failureOf(url: string): Promise<string> {
  try {
    const response = await fetch(url);
    await response.body?.cancel();
  } catch (error) {
    return fetchFailure(error);
  }
  throw new Error(`${url} answered`);
}

Deno.test("fetchFailure: a name that does not resolve says DNS", () => {
  // As Deno 2.9 throws it (the tests may not look up names: --allow-net names the hosts).
  const thrown = new TypeError("fetch failed", {
    cause: new Error(
      "error sending request for url (http://nosuchhost.invalid/m.gguf): client error " +
        "(Connect): dns error: failed to lookup address information: Name or service not known",
    ),
  });
  assert.equal(
    fetchFailure(thrown),
    "the host name does not resolve (DNS: failed to lookup address information: Name or " +
      "service not known)",
  );
});

Deno.test("fetchFailure: a port nothing listens on says refused", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  assert.match(await failureOf(`http://127.0.0.1:${port}/m.gguf`), /connection was refused/);
});

Deno.test("fetchFailure: https to a server that does not speak TLS says TLS", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const served = (async () => {
    for await (const connection of listener) {
      await connection.write(new TextEncoder().encode("HTTP/1.1 200 OK\r\n\r\n")).catch(() => {});
      connection.close();
    }
  })();
  try {
    assert.match(
      await failureOf(`https://127.0.0.1:${listener.addr.port}/m.gguf`),
      /^TLS failed \(.+\)$/,
    );
  } finally {
    listener.close();
    await served.catch(() => {});
  }
});

Deno.test("fetchFailure: an error without a cause is its message", () => {
  assert.equal(
    fetchFailure(new TypeError("Fetch failed: Requests to port 9 are blocked")),
    "Fetch failed: Requests to port 9 are blocked",
  );
  assert.equal(fetchFailure("odd"), "odd");
});
