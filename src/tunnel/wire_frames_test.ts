import assert from "node:assert/strict";
import { concatBytes } from "./bytes.ts";
import { MessageError } from "./messages.ts";
import {
  binaryCodec,
  FrameBatcher,
  type FrameSink,
  MAX_MESSAGE_BYTES,
  MAX_REASON_BYTES,
  receiveFrames,
  type WireRequest,
} from "./wire_frames.ts";
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

const join = (...frames: (string | Uint8Array)[]) => concatBytes(frames as Uint8Array[]);

Deno.test("wire frames: heads, inline bodies, data, credit, end and abort round-trip", () => {
  const sent = {
    t: "req",
    s: 7,
    method: "POST",
    path: "/a?b=c",
    port: 8083,
    headers: [["x-a", "1"]],
    body: false,
  } as const;
  const req = binaryCodec.head(sent, new Uint8Array([1, 2, 3]));
  const message = join(
    req,
    binaryCodec.data(7, new Uint8Array([9, 8])),
    binaryCodec.control({ t: "credit", s: 7, n: 1024 }),
    binaryCodec.control({ t: "end", s: 7 }),
    binaryCodec.control({ t: "abort", s: 8, message: "gone" }),
  );
  const [head, data, credit, end, abort] = collect(message, "req");
  const request = head as WireRequest;
  assert.deepEqual({ ...request, inline: [...request.inline!] }, { ...sent, inline: [1, 2, 3] });
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

/** A request head frame on stream 1 whose payload is `payload`. */
function rawHead(payload: Uint8Array): Uint8Array {
  const frame = new Uint8Array(9 + payload.length);
  frame[0] = 1;
  new DataView(frame.buffer).setUint32(1, 1);
  new DataView(frame.buffer).setUint32(5, payload.length);
  frame.set(payload, 9);
  return frame;
}

/** A head payload: body mode, then `json`, then `inline`. */
function headPayload(mode: number, json: string, inline = new Uint8Array()): Uint8Array {
  const text = new TextEncoder().encode(json);
  const payload = new Uint8Array(5 + text.length + inline.length);
  payload[0] = mode;
  new DataView(payload.buffer).setUint32(1, text.length);
  payload.set(text, 5);
  payload.set(inline, 5 + text.length);
  return payload;
}

Deno.test("wire frames: an untrusted head fails with MessageError, never another error", () => {
  const request = '["GET","/",1,[]]';
  const cases: [string, Uint8Array][] = [
    ["a head of two bytes", rawHead(new Uint8Array([0, 0]))],
    [
      "a head of two bytes, more frames after",
      join(
        rawHead(new Uint8Array([0, 0])),
        binaryCodec.control({ t: "end", s: 1 }),
      ),
    ],
    ["JSON that is not an array", rawHead(headPayload(0, '{"length":4}'))],
    ["JSON null", rawHead(headPayload(0, "null"))],
    ["an inline body over 64 KiB", rawHead(headPayload(1, request, new Uint8Array(65537)))],
  ];
  for (const [what, message] of cases) {
    assert.throws(() => collect(message, "req"), MessageError, what);
  }
  // An inline body of exactly 64 KiB is the largest accepted.
  const [head] = collect(rawHead(headPayload(1, request, new Uint8Array(65536))), "req");
  assert.equal((head as WireRequest).inline!.length, 65536);
});

Deno.test("wire frames: an abort's reason is at most 1024 UTF-8 bytes both ways", () => {
  const frame = binaryCodec.control({ t: "abort", s: 1, message: "é".repeat(1000) + "x" });
  const [abort] = collect(frame as Uint8Array, "req") as { message: string }[];
  assert.ok(new TextEncoder().encode(abort.message).length <= MAX_REASON_BYTES);
  assert.equal(abort.message, "é".repeat(512));
  const long = new Uint8Array(9 + MAX_REASON_BYTES + 1);
  long.set([6, 0, 0, 0, 1]);
  new DataView(long.buffer).setUint32(5, MAX_REASON_BYTES + 1);
  assert.throws(() => collect(long, "req"), MessageError);
});

Deno.test("wire frames: a small piece is copied out of its message, a large one is not", () => {
  const large = new Uint8Array(256 * 1024).fill(1);
  const message = join(binaryCodec.data(1, large), binaryCodec.data(2, new Uint8Array([7, 7])));
  const got: Uint8Array[] = [];
  receiveFrames(message, "res", { data: (_, bytes) => got.push(bytes), control() {} });
  assert.equal(got[0].buffer, message.buffer);
  assert.notEqual(got[1].buffer, message.buffer);
  assert.equal(got[1].buffer.byteLength, 2);
});

Deno.test("wire frames: the batcher bounds its messages and sends large frames alone", async () => {
  const sizes: number[] = [];
  const done = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.binaryType = "arraybuffer";
    socket.onmessage = (event) => {
      const data = event.data as ArrayBuffer;
      if (data.byteLength === 1) return done.resolve();
      sizes.push(data.byteLength);
    };
    return response;
  });
  const socket = new WebSocket(`ws://127.0.0.1:${server.addr.port}`);
  try {
    await new Promise((resolve) => socket.onopen = resolve);
    const batcher = new FrameBatcher(socket);
    // In one turn: 40 frames of 32 KiB (1.25 MiB), three of 1 MiB, then 40 more small ones.
    const small = binaryCodec.data(1, new Uint8Array(32 * 1024 - 9)) as Uint8Array;
    const large = binaryCodec.data(2, new Uint8Array(1024 * 1024)) as Uint8Array;
    for (let i = 0; i < 40; i++) batcher.send(small);
    for (let i = 0; i < 3; i++) batcher.send(large);
    for (let i = 0; i < 40; i++) batcher.send(small);
    await Promise.resolve();
    socket.send(new Uint8Array(1));
    await done.promise;
    assert.ok(
      sizes.every((size) => size <= MAX_MESSAGE_BYTES || size === large.length),
      `${sizes}`,
    );
    assert.equal(sizes.filter((size) => size === large.length).length, 3);
    assert.equal(sizes.reduce((a, b) => a + b), 80 * small.length + 3 * large.length);
  } finally {
    socket.close();
    await server.shutdown();
  }
});
