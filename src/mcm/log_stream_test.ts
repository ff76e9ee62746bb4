import assert from "node:assert/strict";
import { TooMany } from "../errors/mod.ts";
import { followedLogResponse, followedLogStream, HELD_MESSAGES } from "./log_stream.ts";
import type { LogLine } from "./runtime/container_log.ts";
import {
  type LogFollower,
  LogFollowers,
  MAX_FOLLOWERS_PER_CLIENT,
  MAX_FOLLOWERS_PER_NODE,
} from "./runtime/log_followers.ts";

const line = (message: string): LogLine => ({ time: 1, level: "info", message });

/** The `data:` messages of an event stream's text, parsed. */
function messages(text: string): unknown[] {
  return text.split("\n\n").filter((block) => block.startsWith("data: ")).map((block) =>
    JSON.parse(block.slice("data: ".length))
  );
}

/** A stream following container "c" of `followers`, with `recent` lines. */
function follow(followers: LogFollowers, recent: LogLine[] = []) {
  return followedLogStream((follower: LogFollower) => ({
    recent,
    unfollow: followers.add("c", "a-client", follower),
  }));
}

Deno.test("a followed log sends the recent lines, the new ones, and its end", async () => {
  const followers = new LogFollowers();
  const stream = follow(followers, [line("old")]);
  followers.line("c", line("new"));
  followers.line("other", line("not this container's"));
  followers.end("c", { end: "removed", message: "container c was removed" });
  assert.deepEqual(messages(await new Response(stream).text()), [
    line("old"),
    line("new"),
    { end: "removed", message: "container c was removed" },
  ]);
  assert.equal(followers.count("c"), 0);
});

Deno.test("a follower that does not read holds a bounded queue, then learns what it missed", async () => {
  const followers = new LogFollowers();
  const stream = follow(followers);
  for (let i = 0; i < 10 * HELD_MESSAGES; i++) followers.line("c", line(`line ${i}`));
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (let i = 0; i < HELD_MESSAGES; i++) {
    text += decoder.decode((await reader.read()).value, { stream: true });
  }
  // Reading made room: the next line comes after a note counting the dropped ones.
  followers.line("c", line("after"));
  followers.end("c", { end: "removed", message: "gone" });
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    text += decoder.decode(chunk.value, { stream: true });
  }
  const got = messages(text) as { message: string; level?: string }[];
  assert.equal(got.length, HELD_MESSAGES + 3);
  assert.equal(got[HELD_MESSAGES - 1].message, `line ${HELD_MESSAGES - 1}`);
  assert.deepEqual(
    { level: got[HELD_MESSAGES].level, message: got[HELD_MESSAGES].message },
    {
      level: "node",
      message: `${9 * HELD_MESSAGES} lines dropped: the follower did not keep up`,
    },
  );
  assert.equal(got[HELD_MESSAGES + 1].message, "after");
});

Deno.test("a follower that goes away is removed", async () => {
  const followers = new LogFollowers();
  const stream = follow(followers);
  assert.equal(followers.count("c"), 1);
  await stream.cancel();
  assert.equal(followers.count("c"), 0);
  followers.line("c", line("nobody listens"));
});

Deno.test({
  name: "a follow that is refused leaves no keep-alive timer behind (the ops sanitizer)",
  sanitizeOps: true,
  fn() {
    assert.throws(
      () =>
        followedLogResponse(() => {
          throw new TooMany("too many followers");
        }),
      TooMany,
    );
  },
});

Deno.test("followers are counted per client and in all, and freed by unfollow or the log's end", () => {
  const followers = new LogFollowers();
  const quiet: LogFollower = { line() {}, end() {} };
  const unfollows = [];
  for (let i = 0; i < MAX_FOLLOWERS_PER_CLIENT; i++) {
    unfollows.push(followers.add("c", "a", { ...quiet }));
  }
  assert.throws(() => followers.add("d", "a", quiet), TooMany);
  unfollows[0]();
  unfollows[0](); // Twice is once.
  assert.equal(followers.countOf("a"), MAX_FOLLOWERS_PER_CLIENT - 1);
  followers.add("d", "a", { ...quiet });
  for (let client = 0; followers.countOf() < MAX_FOLLOWERS_PER_NODE; client++) {
    followers.add("e", `b${Math.floor(client / 2)}`, { ...quiet });
  }
  assert.throws(() => followers.add("e", "z", quiet), /its most \(32\)/);
  followers.end(undefined, { end: "node_stopping", message: "stopping" });
  assert.equal(followers.countOf(), 0, "an end frees every place, unfollowed or not");
  assert.equal(followers.countOf("a"), 0);
  unfollows[1](); // After the end: nothing to free.
  assert.equal(followers.countOf(), 0);
});
