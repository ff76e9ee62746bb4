/**
 * The requests the sandbox counts as in flight, in the counters it shares with the host's
 * watchdog (watchdog.ts, REQUESTS_*): while any is, the microservice's CPU is not charged to its
 * idle budget and its thread may stay silent up to the request's time limit. So a request stops
 * counting as soon as the first of these happens: its response was sent, the node aborted it
 * (its client went away, or its time ran out), or its time limit passed here too (a handler that
 * never settles, or a channel the microservice broke so that the node's abort never arrives).
 * Every step uses intrinsics taken before the microservice's code ran (intrinsics.ts).
 *
 * @module
 */
import {
  AtomicsAdd,
  AtomicsSub,
  MapPrototypeDelete,
  MapPrototypeForEach,
  MapPrototypeGet,
  MapPrototypeSet,
  SafeMap,
} from "./intrinsics.ts";
import { REQUESTS_BEGUN, REQUESTS_IN_FLIGHT } from "../host_protocol.ts";

/** A request's time in flight, at most: the node's deadline and this much more. */
const GRACE_MS = 1000;

/** The requests in flight, by stream, with when each stops counting at the latest. */
export class RequestActivity {
  readonly #counters: Int32Array;
  readonly #limitMs: number;
  readonly #deadlines = new SafeMap<number, number>();

  /**
   * `counters` are the shared activity counters; `executionMs` the container's request time
   * limit (MCM.MAX_EXECUTION_TIME_SEC).
   */
  constructor(counters: Int32Array, executionMs: number) {
    this.#counters = counters;
    this.#limitMs = executionMs + GRACE_MS;
  }

  /** Stream `s` began, at `now` (performance.now). */
  begin(s: number, now: number): void {
    if (MapPrototypeGet(this.#deadlines, s) !== undefined) this.end(s);
    MapPrototypeSet(this.#deadlines, s, now + this.#limitMs);
    AtomicsAdd(this.#counters, REQUESTS_IN_FLIGHT, 1);
    AtomicsAdd(this.#counters, REQUESTS_BEGUN, 1);
  }

  /** Stream `s` no longer counts (once; later calls do nothing). */
  end(s: number): void {
    if (!MapPrototypeDelete(this.#deadlines, s)) return;
    AtomicsSub(this.#counters, REQUESTS_IN_FLIGHT, 1);
  }

  /** Ends the requests whose time passed by `now`. */
  expire(now: number): void {
    MapPrototypeForEach(this.#deadlines, (deadline: number, s: number) => {
      if (deadline <= now) this.end(s);
    });
  }
}
