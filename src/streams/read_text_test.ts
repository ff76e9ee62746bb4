import assert from "node:assert/strict";
import { brotliCompressSync } from "node:zlib";
import { readText } from "./read_text.ts";

Deno.test("readText: a compressed answer is counted inflated, and refused past the limit", async () => {
  const bomb = brotliCompressSync(new Uint8Array(8 << 20)); // 8 MiB of zeros, a few hundred bytes
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      new Response(bomb, { headers: { "Content-Encoding": "br", "Content-Type": "text/plain" } }),
  );
  const answer = await fetch(`http://127.0.0.1:${server.addr.port}/`);
  assert.ok(Number(answer.headers.get("content-length")) < 64 * 1024);
  await assert.rejects(() => readText(answer, 512 * 1024, "answer"), /larger than 524288 bytes/);
});

Deno.test("readText: requests within their declared length, with or without one", async () => {
  const sized = new Request("http://h/", { method: "POST", body: "hello" });
  assert.equal(await readText(sized, 10), "hello");
  const stream = new Request("http://h/", {
    method: "POST",
    body: ReadableStream.from([new TextEncoder().encode("he"), new TextEncoder().encode("llo")]),
  });
  assert.equal(await readText(stream, 10), "hello");
  const long = new Request("http://h/", { method: "POST", body: "x".repeat(20) });
  await assert.rejects(() => readText(long, 10), /larger than 10 bytes/);
});
