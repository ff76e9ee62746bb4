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
import { eventStreamResponse } from "../http/sse.ts";
import type { LogLine } from "./runtime/container_log.ts";
import type { LogEnd, LogFollower } from "./runtime/log_followers.ts";

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

/** The longest delay setTimeout keeps (a longer one fires at once). */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * The event stream of a followed log; the follower is removed when the client goes, and at
 * `until` (ms since the epoch: the caller's credential expires), when given. The follow is made
 * first: when it is refused (TooMany), this throws and nothing was set up.
 */
export function followedLogStream(follow: Follow, until?: number): ReadableStream<Uint8Array> {
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let open = true;
  let dropped = 0;
  /** Why it ended, when it did before the stream was made. */
  let endedEarly: LogEnd | undefined;
  const room = () => (controller?.desiredSize ?? 0) > 0;
  const send = (message: LogFollowMessage) =>
    controller!.enqueue(encoder.encode(`data: ${JSON.stringify(message)}\n\n`));
  const flushDropped = () => {
    if (dropped > 0) send(droppedNote(dropped));
    dropped = 0;
  };
  let expiry: ReturnType<typeof setTimeout> | undefined;
  const follower: LogFollower = {
    line(line) {
      if (!open || !controller) return;
      if (!room()) return void dropped++;
      flushDropped();
      send(line);
    },
    end(why) {
      if (!open) return;
      open = false;
      clearTimeout(expiry);
      // Ended at once, while follow() runs: kept for the stream, removed below.
      if (!controller) return void (endedEarly = why);
      followed.unfollow();
      flushDropped();
      send(why);
      controller.close();
    },
  };
  const followed = follow(follower);
  if (!open) followed.unfollow();
  const left = until === undefined ? undefined : until - Date.now();
  if (open && left !== undefined && left < LONGEST_TIMER_MS) {
    // A token does not buy a stream that outlives it: the caller follows again with a new one.
    expiry = setTimeout(() =>
      follower.end({
        end: "credential_expired",
        message: "the edge access token expired: follow again with a new one",
      }), Math.max(0, left));
  }
  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      for (const line of followed.recent) send(line);
      if (endedEarly) {
        send(endedEarly);
        c.close();
      }
    },
    pull() {
      if (open && room()) flushDropped();
    },
    cancel() {
      if (!open) return;
      open = false;
      clearTimeout(expiry);
      followed.unfollow();
    },
  }, new CountQueuingStrategy({ highWaterMark: HELD_MESSAGES }));
}

/**
 * The answer of a followed log (http/sse.ts adds the headers and keep-alive comments); throws
 * when the follow is refused, before any of it is made.
 */
export function followedLogResponse(follow: Follow, until?: number): Response {
  return eventStreamResponse(followedLogStream(follow, until));
}
