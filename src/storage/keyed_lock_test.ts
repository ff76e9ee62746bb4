import assert from "node:assert/strict";
import { KeyedLock } from "./keyed_lock.ts";

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

Deno.test("KeyedLock runs one piece of work at a time per key, in order, failures included", async () => {
  const lock = new KeyedLock();
  const order: string[] = [];
  const work = (name: string, fail = false) => async () => {
    order.push(`${name} start`);
    await tick();
    order.push(`${name} end`);
    if (fail) throw new Error(name);
    return name;
  };
  const results = await Promise.allSettled([
    lock.exclusive("a", work("a1")),
    lock.exclusive("a", work("a2", true)),
    lock.exclusive("a", work("a3")),
  ]);
  assert.deepEqual(order, ["a1 start", "a1 end", "a2 start", "a2 end", "a3 start", "a3 end"]);
  assert.deepEqual(results.map((r) => r.status), ["fulfilled", "rejected", "fulfilled"]);
});

Deno.test("KeyedLock lets different keys run at once", async () => {
  const lock = new KeyedLock();
  let running = 0;
  let most = 0;
  const work = async () => {
    most = Math.max(most, ++running);
    await tick();
    running--;
  };
  await Promise.all([lock.exclusive("a", work), lock.exclusive("b", work)]);
  assert.equal(most, 2);
});
