import assert from "node:assert/strict";
import { encodeFrame } from "../worker/channel_frames.ts";
import { BusyProbe, FrameWatch, PING_FRAME } from "./busy_probe.ts";

const encoder = new TextEncoder();

Deno.test("FrameWatch follows frames split anywhere and finds the wanted ones", () => {
  const watch = new FrameWatch(encoder.encode('{"t":"ping"}'));
  const bytes = new Uint8Array([
    ...encodeFrame('{"t":"req","s":1}'),
    ...encodeFrame(new Uint8Array(70_000)),
    ...encodeFrame('{"t":"ping"}'),
    ...encodeFrame('{"t":"pinG"}'),
    ...PING_FRAME,
  ]);
  for (const size of [1, 3, 7, 1000, bytes.length]) {
    let found = 0;
    for (let at = 0; at < bytes.length; at += size) {
      found += watch.push(bytes.subarray(at, at + size));
      const whole = [22, 22 + 70_005].includes(at + size);
      if (whole) assert.ok(watch.atBoundary(), `a boundary at ${at + size}`);
    }
    assert.equal(found, 2, `chunks of ${size}`);
    assert.ok(watch.atBoundary());
  }
  watch.push(PING_FRAME.subarray(0, 6));
  assert.equal(watch.atBoundary(), false, "inside a frame");
});

Deno.test("BusyProbe times the answers to its own pings, the node's in between", () => {
  const probe = new BusyProbe();
  const posted: Uint8Array[] = [];
  const pong = encodeFrame('{"t":"pong"}');
  probe.toWorker(PING_FRAME); // the node's own ping, answered first
  assert.ok(probe.ping((bytes) => posted.push(bytes), 1000));
  assert.equal(probe.ping((bytes) => posted.push(bytes), 1001), false, "one at a time");
  assert.deepEqual(posted, [PING_FRAME]);
  probe.fromWorker(pong, 1002); // the node's
  assert.equal(probe.takeLate(1030), 20, "unanswered: late up to now, beyond 10 ms");
  probe.fromWorker(pong, 1050);
  assert.equal(probe.takeLate(1060), 20, "the rest of its 50 ms");
  assert.ok(probe.ping(() => {}, 2000));
  probe.fromWorker(pong, 2001);
  assert.equal(probe.takeLate(2100), 0, "a prompt answer");
  probe.toWorker(PING_FRAME.subarray(0, 3));
  assert.equal(probe.ping(() => {}, 3000), false, "never inside the node's frame");
});
