/**
 * Who follows which container's log (GET /containers/{id}/logs?follow=true): each line kept is
 * told to the followers of that container id, and they are ended when the container is removed
 * or the node stops. Keyed by id, not by runtime, so that a redeploy keeps its followers.
 * How a follower holds its lines (bounded) is its own business: log_stream.ts.
 *
 * Each follower may hold a few MiB for a client that stalls (the recent lines and 256 more,
 * each up to 16 KiB), so their number is capped per client and per node: past a cap the
 * follow is refused (TooMany, 429) naming it.
 *
 * @module
 */
import { TooMany } from "../../errors/mod.ts";
import type { LogLine } from "./container_log.ts";

/** Followed logs one client may hold open at once (over all its containers). */
export const MAX_FOLLOWERS_PER_CLIENT = 8;
/** Followed logs the node holds open at once (over all clients). */
export const MAX_FOLLOWERS_PER_NODE = 32;

/** Why a followed log ends, and the words for people. */
export interface LogEnd {
  end: "removed" | "node_stopping" | "credential_expired";
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
  /** Per container id, its followers and the client each was opened for. */
  readonly #byId = new Map<string, Map<LogFollower, string>>();
  /** Open followers per client that opened them. */
  readonly #byClient = new Map<string, number>();
  #total = 0;

  /**
   * Adds a follower of container `id` for `client` (the caller's); the function returned
   * removes it. TooMany when the client or the node holds its maximum already.
   */
  add(id: string, client: string, follower: LogFollower): () => void {
    const ofClient = this.#byClient.get(client) ?? 0;
    if (ofClient >= MAX_FOLLOWERS_PER_CLIENT) {
      throw new TooMany(
        `client '${client}' follows ${ofClient} logs already, the most one client may ` +
          `(${MAX_FOLLOWERS_PER_CLIENT}): close one first`,
      );
    }
    if (this.#total >= MAX_FOLLOWERS_PER_NODE) {
      throw new TooMany(
        `the node has ${this.#total} followed logs open, its most ` +
          `(${MAX_FOLLOWERS_PER_NODE}): try again later`,
        { retryAfterSeconds: 5 },
      );
    }
    this.#byClient.set(client, ofClient + 1);
    this.#total++;
    const followers = this.#byId.get(id) ?? new Map<LogFollower, string>();
    this.#byId.set(id, followers.set(follower, client));
    return () => {
      if (!followers.delete(follower)) return; // Removed already (or ended).
      this.#release(client);
      if (followers.size === 0 && this.#byId.get(id) === followers) this.#byId.delete(id);
    };
  }

  /** How many follow container `id`. */
  count(id: string): number {
    return this.#byId.get(id)?.size ?? 0;
  }

  /** How many follow any log for `client` (all clients' when undefined). */
  countOf(client?: string): number {
    return client === undefined ? this.#total : this.#byClient.get(client) ?? 0;
  }

  /** Tells the followers of container `id` its new line. */
  line(id: string, line: LogLine): void {
    for (const follower of this.#byId.get(id)?.keys() ?? []) follower.line(line);
  }

  /** Ends the followers of container `id` (all containers' when undefined), saying `why`. */
  end(id: string | undefined, why: LogEnd): void {
    const ids = id === undefined ? [...this.#byId.keys()] : [id];
    for (const each of ids) {
      const followers = [...this.#byId.get(each) ?? []];
      this.#byId.get(each)?.clear();
      this.#byId.delete(each);
      for (const [follower, client] of followers) {
        this.#release(client);
        follower.end(why);
      }
    }
  }

  #release(client: string): void {
    this.#total--;
    const left = (this.#byClient.get(client) ?? 1) - 1;
    if (left > 0) this.#byClient.set(client, left);
    else this.#byClient.delete(client);
  }
}
