import assert from "node:assert/strict";
import { GroupFrameError, parseGroupEvent } from "./group_frames.ts";

const frame = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

Deno.test("a usage event is read, its unknown fields ignored", () => {
  assert.deepEqual(
    parseGroupEvent(frame({ t: "usage", usage: [[1, 2048, 300, 0, "later"]], extra: 1 })),
    { t: "usage", usage: [[1, 2048, 300, 0]] },
  );
  assert.deepEqual(parseGroupEvent(frame({ t: "ended", slot: 2, code: 0, more: true })), {
    t: "ended",
    slot: 2,
    code: 0,
  });
});

Deno.test("an event type not known yet is ignored, a malformed one is refused", () => {
  assert.deepEqual(parseGroupEvent(frame({ t: "future", x: 1 })), undefined);
  for (
    const bad of [
      null,
      [],
      { t: 3 },
      { t: "ended", slot: "1", code: 0 },
      { t: "usage", usage: [[1, -1, 0, 0]] },
      { t: "usage", usage: [[1, 2, 3]] },
      { t: "usage", usage: "x" },
    ]
  ) assert.throws(() => parseGroupEvent(frame(bad)), GroupFrameError);
  assert.throws(() => parseGroupEvent(new TextEncoder().encode("{")), GroupFrameError);
});
