/**
 * A followed container log as an event stream (spec/mcm.yaml, GET /containers/{id}/logs with
 * `follow`): the recent lines, then each new one, one LogFollowMessage per `data:` message.
 *
 * Bounded: the stream's queue holds at most HELD_MESSAGES beyond the recent lines; a follower
 * that does not read gets no more, its lines are counted instead, and once it reads again it
 * is told how many it missed. The node's memory does not grow with a follower that stalls.
 *
 * @module
 */
import type { LogFollowMessage } from "../../gen/mcm/validators.ts";
import { KEEP_ALIVE_MS } from "../http/sse.ts";
import type { LogLine } from "./runtime/container_log.ts";
import type { LogFollower } from "./runtime/log_followers.ts";

/** Messages a follower's stream holds before new lines are dropped. */
export const HELD_MESSAGES = 256;

const encoder = new TextEncoder();

/** What the stream follows: the recent lines, and the follower added (and how to remove it). */
export type Follow = (follower: LogFollower) => { recent: LogLine[]; unfollow(): void };

/** The note that replaces `count` dropped lines. */
function droppedNote(count: number): LogLine {
  return {
    time: Date.now(),
    level: "node",
    message: `${count} lines dropped: the follower did not keep up`,
  };
}

/** The event stream of a followed log; the follower is removed when the client goes. */
export function followedLogStream(follow: Follow): ReadableStream<Uint8Array> {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let open = true;
  let dropped = 0;
  let unfollow = () => {};
  const room = () => (controller.desiredSize ?? 0) > 0;
  const send = (message: LogFollowMessage) =>
    controller.enqueue(encoder.encode(`data: ${JSON.stringify(message)}\n\n`));
  const flushDropped = () => {
    if (dropped > 0) send(droppedNote(dropped));
    dropped = 0;
  };
  // A comment now and then: idle proxies keep the stream, and a client that left is noticed.
  const keepAlive = setInterval(() => {
    if (open && room()) controller.enqueue(encoder.encode(": keep-alive\n\n"));
  }, KEEP_ALIVE_MS);
  const finish = () => {
    open = false;
    clearInterval(keepAlive);
    unfollow();
  };
  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      const followed = follow({
        line(line) {
          if (!open) return;
          if (!room()) return void dropped++;
          flushDropped();
          send(line);
        },
        end(why) {
          if (!open) return;
          flushDropped();
          send(why);
          finish();
          controller.close();
        },
      });
      unfollow = followed.unfollow;
      if (!open) return unfollow(); // It ended at once.
      for (const line of followed.recent) send(line);
    },
    pull() {
      if (open && room()) flushDropped();
    },
    cancel() {
      if (open) finish();
    },
  }, new CountQueuingStrategy({ highWaterMark: HELD_MESSAGES }));
}

/** The response of a followed log. */
export function followedLogResponse(follow: Follow): Response {
  return new Response(followedLogStream(follow), {
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      // nginx and similar proxies buffer responses unless told not to.
      "x-accel-buffering": "no",
    },
  });
}
