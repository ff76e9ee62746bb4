import assert from "node:assert/strict";
import { CallBody } from "../sandbox/worker/call_body.ts";
import { CALL_CHUNK_BYTES, CallCredit, CreditError, sendChunks } from "./call_credit.ts";
import { CallAnswers, StreamingAnswer } from "./container_calls.ts";

/** Whether `promise` settled within a few turns. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(() => done = true, () => done = true);
  await new Promise((resolve) => setTimeout(resolve, 0));
  return done;
}

Deno.test("CallCredit: sending waits once a window is in flight, until the container takes", async () => {
  const credit = new CallCredit(100);
  assert.ok(await settled(credit.sent(60)));
  const waiting = credit.sent(60);
  assert.equal(credit.inFlight, 120);
  assert.equal(await settled(waiting), false, "120 of a window of 100 in flight");
  credit.took(10);
  assert.equal(await settled(waiting), false, "110 still in flight");
  credit.took(50);
  assert.ok(await settled(waiting), "60 in flight");
});

Deno.test("CallCredit: a container that reports more than was sent breaks the protocol", () => {
  const credit = new CallCredit(100);
  void credit.sent(30);
  assert.throws(() => credit.took(31), CreditError);
  credit.took(30);
  assert.throws(() => credit.took(1), CreditError);
});

Deno.test("CallCredit: an ended answer waits for nothing", async () => {
  const credit = new CallCredit(10);
  const waiting = credit.sent(50);
  credit.end();
  assert.ok(await settled(waiting));
  assert.ok(await settled(credit.sent(50)));
});

Deno.test("sendChunks: parts of at most 64 KiB, the next read only within the credit", async () => {
  let reads = 0;
  const source = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (reads++ === 3) return controller.close();
      controller.enqueue(new Uint8Array(200 * 1024).fill(reads));
    },
  }, { highWaterMark: 0 });
  const credit = new CallCredit(256 * 1024);
  const sizes: number[] = [];
  const sending = sendChunks(source.getReader(), (event, bytes = 0) => {
    sizes.push(Uint8Array.fromBase64((event as { chunk: string }).chunk).length);
    return credit.sent(bytes);
  }, new AbortController().signal);
  assert.equal(await settled(sending), false);
  // 200 KiB read and sent (64, 64, 64, 8), then 64 KiB of the next: a window in flight.
  assert.equal(reads, 2, "the third read waits for credit");
  const K = 1024;
  assert.deepEqual(sizes, [64 * K, 64 * K, 64 * K, 8 * K, 64 * K]);
  while (!await settled(sending)) credit.took(credit.inFlight);
  assert.equal(sizes.reduce((x, y) => x + y, 0), 3 * 200 * 1024);
  assert.ok(sizes.every((size) => size <= CALL_CHUNK_BYTES));
});

Deno.test("CallAnswers: a streamed body goes within the container's credit, end to end", async () => {
  const total = 4 * 1024 * 1024;
  const sent: Record<string, unknown>[] = [];
  // deno-lint-ignore prefer-const
  let answers: CallAnswers;
  const body = new CallBody(() => {});
  let pumped = 0;
  answers = new CallAnswers(
    (text) => {
      const message = JSON.parse(text);
      sent.push(message);
      if (message.t !== "event") return;
      const bytes = Uint8Array.fromBase64(message.value.chunk);
      body.push(bytes, (n) => answers.took(1, n));
    },
    () =>
      Promise.resolve(
        new StreamingAnswer(async (emit, signal) => {
          const source = new ReadableStream<Uint8Array>({
            pull(controller) {
              if (pumped >= total) return controller.close();
              pumped += 64 * 1024;
              controller.enqueue(new Uint8Array(64 * 1024).fill(pumped / 65536));
            },
          }, { highWaterMark: 0 });
          await sendChunks(source.getReader(), emit, signal);
          return null;
        }),
      ),
    () => {},
  );
  const answered = answers.answer({ t: "call", id: 1, op: "mesh" });
  await new Promise((resolve) => setTimeout(resolve, 20));
  // Nothing read: the node read no more than a window (and the part it waits to send) of it.
  assert.ok(pumped <= 1024 * 1024 + 64 * 1024, `read ${pumped} bytes of the source`);
  assert.ok(body.queuedBytes <= 1024 * 1024 + 64 * 1024, `${body.queuedBytes} queued`);
  // A report of an unknown call is ignored; one of more than was sent breaks the protocol.
  answers.took(99, 10);
  assert.throws(() => answers.took(1, 64 * 1024 * 1024), CreditError);
  const reader = body.stream.getReader();
  let got = 0;
  let expect = 1;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    assert.equal(value[0], expect++, "in order");
    got += value.length;
    if (got === total) body.close();
  }
  await answered;
  assert.equal(got, total);
  assert.deepEqual(sent.at(-1), { t: "answer", id: 1, value: null });
  answers.took(1, 1); // Ended: ignored.
});
