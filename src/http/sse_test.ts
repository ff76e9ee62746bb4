import assert from "node:assert/strict";
import { eventStream } from "./sse.ts";

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
