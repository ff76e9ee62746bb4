import assert from "node:assert/strict";
import { FrameDecoder, FrameWriter } from "./pipe_frames.ts";

Deno.test("FrameWriter: what a sink that does not read makes it hold is observable", async () => {
  const written: Uint8Array[] = [];
  let release!: () => void;
  const writer = new FrameWriter((bytes) => {
    written.push(bytes);
    return new Promise<void>((resolve) => release = resolve);
  }, () => {});
  writer.send("hello");
  writer.send(new Uint8Array(100));
  assert.equal(writer.queuedBytes, 5 + 5 + 5 + 100);
  await new Promise((resolve) => setTimeout(resolve, 0));
  writer.send("later");
  assert.equal(writer.queuedBytes, 115 + 10, "the batch being written counts until written");
  release();
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(writer.queuedBytes, 10);
  release();
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(writer.queuedBytes, 0);
  const frames = new FrameDecoder().push(
    new Uint8Array([...written[0], ...written[1]]),
  );
  assert.deepEqual(frames, ["hello", new Uint8Array(100), "later"]);
});
