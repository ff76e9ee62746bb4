import assert from "node:assert/strict";
import { MessageError } from "./messages.ts";
import { binaryCodec, type FrameSink, receiveFrames, type WireRequest } from "./wire_frames.ts";
import type { MuxMessage } from "./mux_codec.ts";

function collect(message: Uint8Array, heads: "req" | "res") {
  const got: unknown[] = [];
  const sink: FrameSink = {
    head: (head) => got.push(head),
    data: (stream, bytes) => got.push({ stream, bytes: [...bytes] }),
    control: (m: MuxMessage) => got.push(m),
  };
  receiveFrames(message, heads, sink);
  return got;
}

function join(...frames: (string | Uint8Array)[]): Uint8Array {
  const parts = frames as Uint8Array[];
  const whole = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) whole.set(part, at), at += part.length;
  return whole;
}

Deno.test("wire frames: heads, inline bodies, data, credit, end and abort round-trip", () => {
  const req = binaryCodec.head({
    t: "req",
    s: 7,
    method: "POST",
    path: "/a?b=c",
    port: 8083,
    headers: [["x-a", "1"]],
    body: false,
  }, new Uint8Array([1, 2, 3]));
  const message = join(
    req,
    binaryCodec.data(7, new Uint8Array([9, 8])),
    binaryCodec.control({ t: "credit", s: 7, n: 1024 }),
    binaryCodec.control({ t: "end", s: 7 }),
    binaryCodec.control({ t: "abort", s: 8, message: "gone" }),
  );
  const [head, data, credit, end, abort] = collect(message, "req");
  const request = head as WireRequest;
  assert.deepEqual({ ...request, inline: [...request.inline!] }, {
    t: "req",
    s: 7,
    method: "POST",
    path: "/a?b=c",
    port: 8083,
    headers: [["x-a", "1"]],
    body: false,
    inline: [1, 2, 3],
  });
  assert.deepEqual(data, { stream: 7, bytes: [9, 8] });
  assert.deepEqual([credit, end, abort], [
    { t: "credit", s: 7, n: 1024 },
    { t: "end", s: 7 },
    { t: "abort", s: 8, message: "gone" },
  ]);
  const res = binaryCodec.head({ t: "res", s: 3, status: 204, headers: [], body: true }, undefined);
  assert.deepEqual(collect(res as Uint8Array, "res"), [
    { t: "res", s: 3, status: 204, headers: [], body: true },
  ]);
});

Deno.test("wire frames: a data piece read into frame space is framed where it lies", () => {
  const space = binaryCodec.frameSpace!(4);
  space.set([5, 6, 7, 8]);
  const frame = binaryCodec.data(2, space, true) as Uint8Array;
  assert.equal(frame.buffer, space.buffer);
  assert.deepEqual(collect(frame, "res"), [{ stream: 2, bytes: [5, 6, 7, 8] }]);
});

Deno.test("wire frames: malformed or unexpected frames are refused", () => {
  const req = binaryCodec.head(
    { t: "req", s: 1, method: "GET", path: "/", port: 1, headers: [], body: false },
    undefined,
  ) as Uint8Array;
  // A node accepts requests, the hub responses: never the other way round.
  assert.throws(() => collect(req, "res"), MessageError);
  assert.throws(() => collect(req.subarray(0, req.length - 1), "req"), MessageError);
  const zeroStream = binaryCodec.control({ t: "end", s: 1 }) as Uint8Array;
  zeroStream[4] = 0;
  assert.throws(() => collect(zeroStream, "req"), /malformed frame/);
  const badPath = binaryCodec.head(
    { t: "req", s: 1, method: "GET", path: "no-slash", port: 1, headers: [], body: false },
    undefined,
  ) as Uint8Array;
  assert.throws(() => collect(badPath, "req"), /malformed request head/);
  const badStatus = binaryCodec.head(
    { t: "res", s: 1, status: 42, headers: [["a", 1]], body: false },
    undefined,
  ) as Uint8Array;
  assert.throws(() => collect(badStatus, "res"), /malformed response head/);
  assert.throws(() => collect(new Uint8Array([99, 0, 0, 0, 1, 0, 0, 0, 0]), "req"), /kind 99/);
  assert.throws(
    () => collect(binaryCodec.control({ t: "credit", s: 1, n: 0 }) as Uint8Array, "req"),
    /credit of 0/,
  );
});
