import assert from "node:assert/strict";
import { NotFound, Unavailable } from "../errors/mod.ts";
import { eventStream, eventStreamResponse, runStream, sseResponse } from "./sse.ts";

Deno.test("eventStream: one data line per message, nothing after close, headers for proxies", async () => {
  let disconnected = false;
  const stream = eventStream(() => disconnected = true);
  assert.equal(stream.response.headers.get("content-type"), "text/event-stream");
  assert.equal(stream.response.headers.get("x-accel-buffering"), "no");
  assert.equal(stream.send({ status: "downloading", bytes: 1 }), true);
  assert.equal(stream.send("two\nlines"), true);
  stream.close();
  assert.equal(stream.send({ late: true }), false);
  assert.equal(
    await stream.response.text(),
    'data: {"status":"downloading","bytes":1}\n\ndata: "two\\nlines"\n\n',
  );
  assert.equal(disconnected, false, "closing is not the client leaving");
});

Deno.test("eventStream: the client leaving calls onDisconnect once and stops sends", async () => {
  let disconnects = 0;
  const stream = eventStream(() => disconnects++);
  stream.send({ n: 1 });
  await stream.response.body!.cancel();
  assert.equal(disconnects, 1);
  assert.equal(stream.send({ n: 2 }), false);
  stream.close();
  assert.equal(disconnects, 1);
});

Deno.test("runStream: a thrown error is the last message (errorPayload), then `last`, then the end", async () => {
  const stream = eventStream(() => {});
  await runStream(stream, async (s) => {
    s.send({ n: 1 });
    await Promise.resolve();
    throw new NotFound("no model 'm'", { resource: "model", id: "m" });
  }, {
    onError: ({ status, body, details }) => ({ status, message: body.message, id: details.id }),
    last: "[DONE]",
  });
  assert.equal(
    await stream.response.text(),
    'data: {"n":1}\n\ndata: {"status":404,"message":"no model \'m\'","id":"m"}\n\n' +
      "data: [DONE]\n\n",
  );
});

Deno.test("runStream: a producer that ends closes the stream, no error message", async () => {
  const stream = eventStream(() => {});
  await runStream(stream, (s) => Promise.resolve(void s.send({ n: 1 })));
  assert.equal(await stream.response.text(), 'data: {"n":1}\n\n');
});

Deno.test("sseResponse: events as messages; `failed` and a failing source as the standard error", async () => {
  const events = ReadableStream.from<{ progress: number } | { failed: unknown }>([
    { progress: 1 },
    { failed: new Unavailable("the node is shutting down") },
  ]);
  assert.equal(
    await sseResponse(events, "download").text(),
    'data: {"progress":1}\n\n' +
      'data: {"error":{"code":503,"message":"the node is shutting down"}}\n\n',
  );
  let pulls = 0;
  const broken = new ReadableStream<{ n: number }>({
    pull(controller) {
      if (pulls++ === 0) controller.enqueue({ n: 1 });
      else controller.error(new Error("disk gone"));
    },
  });
  const original = console.error;
  console.error = () => {};
  try {
    const text = await sseResponse(broken, "download").text();
    assert.match(
      text,
      /^data: \{"n":1\}\n\ndata: \{"error":\{"code":500,"message":"internal error \(logged as [0-9a-f-]+\)"\}\}\n\n$/,
    );
  } finally {
    console.error = original;
  }
});

Deno.test({
  name: "eventStreamResponse: the headers, the body's bytes, and no keep-alive timer once it ends",
  sanitizeOps: true,
  async fn() {
    const ended = eventStreamResponse(
      ReadableStream.from([new TextEncoder().encode("data: 1\n\n")]),
    );
    assert.equal(ended.headers.get("content-type"), "text/event-stream");
    assert.equal(ended.headers.get("cache-control"), "no-cache");
    assert.equal(await ended.text(), "data: 1\n\n");
    let cancelled = false;
    const left = eventStreamResponse(new ReadableStream({ cancel: () => void (cancelled = true) }));
    await left.body!.cancel();
    assert.equal(cancelled, true, "the client going cancels the body");
  },
});
