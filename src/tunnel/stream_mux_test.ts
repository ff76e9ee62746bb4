import assert from "node:assert/strict";
import { StreamAborted, StreamMux } from "./stream_mux.ts";
import { binaryCodec } from "./wire_frames.ts";

Deno.test("stream mux: a send aborted while it waits for credit rejects with StreamAborted", async () => {
  const sent: (string | Uint8Array)[] = [];
  // The reads offer 16, 32, 64 and 64 KiB: the window ends where the fourth piece does, and the
  // send waits for credit before it reads again.
  const window = 176 * 1024;
  const mux = new StreamMux((frame) => sent.push(frame), {
    codec: binaryCodec,
    windowBytes: window,
    chunkBytes: 64 * 1024,
  });
  const body = new Blob([new Uint8Array(4 * window)]).stream();
  const sending = mux.send(1, { t: "res", s: 1, status: 200, headers: [], body: true }, body);
  while (sent.reduce((n, frame) => n + frame.length, 0) < window) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  mux.onControl({ t: "abort", s: 1, message: "gone" });
  await assert.rejects(sending, StreamAborted);
});
