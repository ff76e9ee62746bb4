import assert from "node:assert/strict";
import { RecentCache } from "./recent_cache.ts";

Deno.test("RecentCache: an entry lives its time, the oldest goes when full, failures are not kept", async () => {
  const cache = new RecentCache<number>(1000, 2);
  cache.set("a", 1, 0);
  assert.equal(cache.get("a", 999), 1);
  assert.equal(cache.get("a", 1000), undefined);
  cache.set("a", 1);
  cache.set("b", 2);
  cache.set("c", 3);
  assert.equal(cache.get("a"), undefined);
  assert.equal(cache.get("c"), 3);
  await assert.rejects(cache.through("d", () => Promise.reject(new Error("no"))));
  assert.equal(await cache.through("d", () => Promise.resolve(4)), 4);
  assert.equal(await cache.through("d", () => Promise.resolve(5)), 4);
});

Deno.test("RecentCache.through: callers that miss together share one make", async () => {
  const cache = new RecentCache<string>(1000, 4);
  let made = 0;
  const gate = Promise.withResolvers<void>();
  const make = async () => {
    made++;
    await gate.promise;
    return "v";
  };
  const both = Promise.all([cache.through("k", make), cache.through("k", make)]);
  gate.resolve();
  assert.deepEqual(await both, ["v", "v"]);
  assert.equal(made, 1);
  const failing = () => Promise.reject(new Error("no"));
  await assert.rejects(Promise.all([cache.through("f", failing), cache.through("f", failing)]));
  assert.equal(await cache.through("f", () => Promise.resolve("later")), "later");
});
