/**
 * The resuming HTTP source in-process, with garbage collections forced while it waits: the
 * abort chain of every attempt (watchdog, cancel, the transfer's signal) must reach the
 * connection however long the body has been read, resumed attempts included.
 */
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import { UpstreamTimeout } from "../errors/mod.ts";
import { startFileServer } from "../../testing/file_server.ts";
import { MIN_BYTES_PER_SECOND, openSource } from "./http_source.ts";

v8.setFlagsFromString("--expose-gc");
const gc: () => void = vm.runInNewContext("gc");

/** Runs `body` while collecting garbage every 20 ms; fails when it takes over `ms`. */
async function withGc<T>(ms: number, body: () => Promise<T>): Promise<T> {
  const collector = setInterval(gc, 20);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      body(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`still running after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearInterval(collector);
    clearTimeout(timer);
  }
}

async function readAll(chunks: AsyncIterable<Uint8Array>): Promise<number> {
  let size = 0;
  for await (const chunk of chunks) size += chunk.byteLength;
  return size;
}

async function until(condition: () => boolean, what: string, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The source of `url` for a transfer that nobody aborts. */
function openUnaborted(url: string, stallMs: number, retries: number) {
  return openSource(url, { signal: new AbortController().signal, stallMs, retries });
}

/** The UpstreamTimeout that reading all of `chunks` ends in, with collections meanwhile. */
async function readTimeout(chunks: AsyncIterable<Uint8Array>): Promise<UpstreamTimeout> {
  const error = await withGc(8000, () => readAll(chunks)).then(() => undefined, (error) => error);
  assert.ok(error instanceof UpstreamTimeout, String(error));
  return error;
}

Deno.test("resumed attempts that stall are cut and retried, then 504, through collections", async () => {
  await using server = startFileServer();
  const url = server.serve("/m", new Uint8Array(256 * 1024), { stalls: [64 * 1024, 0, 0] });
  const source = await openUnaborted(url, 300, 2);
  const error = await readTimeout(source.chunks);
  assert.match(error.message, /the source sent no data for 0.3 s/);
  assert.deepEqual(server.requests.map((r) => r.range), [null, "bytes=65536-", "bytes=65536-"]);
  await until(() => server.open === 0, "every stalled connection to be closed");
});

Deno.test("two stalls in a row are resumed and the file completes", async () => {
  await using server = startFileServer();
  const url = server.serve("/m", new Uint8Array(256 * 1024), { stalls: [64 * 1024, 64 * 1024] });
  const source = await openUnaborted(url, 300, 5);
  assert.equal(await withGc(8000, () => readAll(source.chunks)), 256 * 1024);
  assert.deepEqual(server.requests.map((r) => r.range), [null, "bytes=65536-", "bytes=131072-"]);
  await until(() => server.open === 0, "every stalled connection to be closed");
});

Deno.test("aborting the transfer during a resumed attempt closes its connection", async () => {
  await using server = startFileServer();
  const url = server.serve("/m", new Uint8Array(4 << 20), {
    stalls: [64 * 1024],
    bytesPerSecond: 1024 * 1024, // a 64 KiB chunk every 62 ms, far inside the stall time
  });
  const transfer = new AbortController();
  const source = await openSource(url, { signal: transfer.signal, stallMs: 1000, retries: 5 });
  const outcome = await withGc(8000, async () => {
    let size = 0;
    try {
      for await (const chunk of source.chunks) {
        size += chunk.byteLength;
        if (size > 192 * 1024) transfer.abort(new Error("deleted"));
      }
    } catch (error) {
      return error;
    }
  });
  assert.equal((outcome as Error)?.message, "deleted");
  assert.equal(server.requests.length, 2, "the abort came during the resumed attempt");
  await withGc(3000, () => until(() => server.open === 0, "the resumed connection to close"));
});

Deno.test("cancel() during a resumed attempt closes its connection", async () => {
  await using server = startFileServer();
  const url = server.serve("/m", new Uint8Array(4 << 20), {
    stalls: [64 * 1024],
    bytesPerSecond: 1024 * 1024, // a 64 KiB chunk every 62 ms, far inside the stall time
  });
  const source = await openUnaborted(url, 1000, 5);
  const iterator = source.chunks[Symbol.asyncIterator]();
  await withGc(8000, async () => {
    let size = 0;
    while (size <= 192 * 1024) size += (await iterator.next()).value!.byteLength;
  });
  assert.equal(server.requests.length, 2);
  source.cancel();
  await withGc(3000, () => until(() => server.open === 0, "the resumed connection to close"));
});

Deno.test("a trickle below the minimum rate is cut, resumed, and fails naming the rate", async () => {
  await using server = startFileServer();
  const url = server.serve("/m", new Uint8Array(64 * 1024), {
    trickleAfter: 0,
    trickleBytesPerSecond: 20,
    failures: 9,
  });
  const source = await openUnaborted(url, 400, 1);
  const error = await readTimeout(source.chunks);
  assert.match(
    error.message,
    new RegExp(`sent \\d+ B/s over 0.4 s, below the minimum of ${MIN_BYTES_PER_SECOND} B/s`),
  );
  assert.equal(server.requests.length, 2);
  await until(() => server.open === 0, "every trickling connection to be closed");
});

Deno.test("a source at a steady rate above the minimum is never cut", async () => {
  await using server = startFileServer();
  const url = server.serve("/m", new Uint8Array(96 * 1024), { bytesPerSecond: 256 * 1024 });
  const source = await openUnaborted(url, 400, 0);
  assert.equal(await readAll(source.chunks), 96 * 1024);
  assert.equal(server.requests.length, 1);
});

Deno.test("a source with headers of its own does not follow a redirect: they never leave it", async () => {
  const seen: (string | null)[] = [];
  const elsewhere = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    seen.push(request.headers.get("x-edge-authorization"));
    return new Response("elsewhere's bytes");
  });
  const peer = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      new Response(null, {
        status: 302,
        headers: { location: `http://127.0.0.1:${elsewhere.addr.port}/file` },
      }),
  );
  try {
    const opened = openSource(`http://127.0.0.1:${peer.addr.port}/file`, {
      signal: new AbortController().signal,
      stallMs: 2000,
      retries: 0,
      headers: () => Promise.resolve({ "x-edge-authorization": "Bearer account-token" }),
    });
    await assert.rejects(opened, /302/);
    assert.deepEqual(seen, [], "the redirect's target was never asked");
  } finally {
    await peer.shutdown();
    await elsewhere.shutdown();
  }
});
