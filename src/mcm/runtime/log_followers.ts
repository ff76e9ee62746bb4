/**
 * Who follows which container's log (GET /containers/{id}/logs?follow=true): each line kept is
 * told to the followers of that container id, and they are ended when the container is removed
 * or the node stops. Keyed by id, not by runtime, so that a redeploy keeps its followers.
 * How a follower holds its lines (bounded) is its own business: log_stream.ts.
 *
 * @module
 */
import type { LogLine } from "./container_log.ts";

/** Why a followed log ends, and the words for people. */
export interface LogEnd {
  end: "removed" | "node_stopping";
  message: string;
}

/** One follower of a container's log. */
export interface LogFollower {
  /** A new line of the log. */
  line(line: LogLine): void;
  /** The log ends (the container was removed, the node stops): no line comes after. */
  end(why: LogEnd): void;
}

/** The followers of every container's log. */
export class LogFollowers {
  readonly #byId = new Map<string, Set<LogFollower>>();

  /** Adds a follower of container `id`; the function returned removes it. */
  add(id: string, follower: LogFollower): () => void {
    const followers = this.#byId.get(id) ?? new Set();
    this.#byId.set(id, followers.add(follower));
    return () => {
      followers.delete(follower);
      if (followers.size === 0 && this.#byId.get(id) === followers) this.#byId.delete(id);
    };
  }

  /** How many follow container `id`. */
  count(id: string): number {
    return this.#byId.get(id)?.size ?? 0;
  }

  /** Tells the followers of container `id` its new line. */
  line(id: string, line: LogLine): void {
    for (const follower of this.#byId.get(id) ?? []) follower.line(line);
  }

  /** Ends the followers of container `id` (all containers' when undefined), saying `why`. */
  end(id: string | undefined, why: LogEnd): void {
    const ids = id === undefined ? [...this.#byId.keys()] : [id];
    for (const each of ids) {
      const followers = this.#byId.get(each);
      this.#byId.delete(each);
      for (const follower of followers ?? []) follower.end(why);
    }
  }
}
