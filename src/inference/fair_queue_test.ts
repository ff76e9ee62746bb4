/** The fair queue's order and limits (fair_queue.ts); the node-level tests are in tests/hostile_inference_test.ts. */
import assert from "node:assert/strict";
import { FairQueue, type QueueCaller } from "./fair_queue.ts";

/** The key holder's place in a queue. */
const KEY: QueueCaller = { client: "key-holder", priority: true };

Deno.test("the queue: the key holder first, then microservices' clients in turn", async () => {
  const queue = new FairQueue("m", 4, 2);
  const served: string[] = [];
  const wait = (who: string, caller: QueueCaller) =>
    queue.wait(caller, undefined).then(() => served.push(who));
  const a = { client: "a", priority: false };
  const b = { client: "b", priority: false };
  const waits = [wait("a1", a), wait("a2", a), wait("b1", b), wait("key", KEY)];
  // A client's third place is refused at once, naming the limit.
  assert.throws(() => queue.wait(a), (error: Error) => /client 'a'/.test(error.message));
  while (queue.next()) await Promise.resolve();
  await Promise.all(waits);
  assert.deepEqual(served, ["key", "a1", "b1", "a2"]);
});
