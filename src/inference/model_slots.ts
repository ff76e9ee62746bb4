/**
 * A loaded model's place in the node: its lanes (one job at a time each, behind a bounded fair
 * queue), its idle timer and its figures (the reference's `metrics`).
 *
 * A model whose context has two sequences (inference.reservedSequence) has two lanes: the key
 * holder's requests run on sequence 1, in a queue of their own, and microservices' on sequence
 * 0, so a key holder's request runs beside a microservice's generation rather than after it (the
 * engine evaluates both sequences in one batch). With one sequence, one lane serves everyone and
 * its queue puts the key holder first.
 *
 * @module
 */
import { Unavailable } from "../errors/mod.ts";
import type { EngineModelKind, LoadedModelInfo } from "./engine_protocol.ts";
import { FairQueue, type QueueCaller } from "./fair_queue.ts";

/** The key holder's place in the queue: the API's callers. */
const KEY_HOLDER_QUEUE: QueueCaller = { client: "", priority: true };

/** One sequence's turn: busy while a job runs on it, its waiters in a fair queue. */
interface Lane {
  busy: boolean;
  queue: FairQueue;
}

/** The reference's per-model figures (GET /models `metrics`). */
export interface SlotMetrics {
  inference_count: number;
  last_used: number | null;
  loaded_at: number;
  tokens_per_second: number | null;
  avg_tokens_per_second: number | null;
}

/** One loaded model. */
export class ModelSlot {
  readonly id: string;
  /** The id with the file's sha256: a replaced file is another key in the engine. */
  readonly key: string;
  readonly kind: EngineModelKind;
  readonly info: LoadedModelInfo;
  readonly metrics: SlotMetrics;
  /** The engine requests running on it, to cancel when the slot closes. */
  readonly activeRequests: Set<number> = new Set();
  #closed?: string;
  /** By sequence index: [microservices (and the key holder when alone), the key holder's]. */
  readonly #lanes: Lane[];
  #idleTimer?: ReturnType<typeof setTimeout>;
  readonly #onIdle: () => void;
  readonly #idleMs: number;

  /** A slot for a model the engine has just loaded. */
  constructor(
    loaded: { id: string; key: string; kind: EngineModelKind; info: LoadedModelInfo },
    options: { queueLimit: number; perClientLimit: number; idleMs: number; onIdle: () => void },
  ) {
    this.id = loaded.id;
    this.key = loaded.key;
    this.kind = loaded.kind;
    this.info = loaded.info;
    const lanes = loaded.info.sequences >= 2 ? 2 : 1;
    this.#lanes = Array.from({ length: lanes }, () => ({
      busy: false,
      queue: new FairQueue(loaded.id, options.queueLimit, options.perClientLimit),
    }));
    this.#idleMs = options.idleMs;
    this.#onIdle = options.onIdle;
    this.metrics = {
      inference_count: 0,
      last_used: null,
      loaded_at: Math.floor(Date.now() / 1000),
      tokens_per_second: null,
      avg_tokens_per_second: null,
    };
    this.#armIdle();
  }

  /** Requests waiting for their turn. */
  get waiting(): number {
    return this.#lanes.reduce((sum, lane) => sum + lane.queue.size, 0);
  }

  /** Sequences with no job running on them now. */
  get idleSequences(): number {
    return this.#lanes.reduce((sum, lane) => sum + (lane.busy ? 0 : 1), 0);
  }

  /** Whether the key holder has a sequence of its own on this model. */
  get reserved(): boolean {
    return this.#lanes.length > 1;
  }

  /** Whether a request of `caller` would be refused now (its lane busy, its queue places taken). */
  wouldRefuse(caller: QueueCaller = KEY_HOLDER_QUEUE): boolean {
    if (this.#closed) return true;
    const lane = this.#lanes[caller.priority && this.reserved ? 1 : 0];
    return lane.busy && lane.queue.refuses(caller);
  }

  /**
   * Runs `job` when it is this request's turn on its lane (fair_queue.ts decides whose); `job`
   * gets the engine sequence to run on. 429 at once when the caller's places are taken; an
   * aborted `signal` leaves the queue at once.
   */
  async run<T>(
    job: (sequence: number) => Promise<T>,
    signal?: AbortSignal,
    caller: QueueCaller = KEY_HOLDER_QUEUE,
  ): Promise<T> {
    if (this.#closed) throw new Unavailable(this.#closed);
    const sequence = caller.priority && this.reserved ? 1 : 0;
    const lane = this.#lanes[sequence];
    // A waiter is handed the turn with the lane still busy: no newcomer slips in between.
    if (lane.busy) await lane.queue.wait(caller, signal);
    lane.busy = true;
    clearTimeout(this.#idleTimer);
    try {
      if (this.#closed) throw new Unavailable(this.#closed);
      return await job(sequence);
    } finally {
      this.metrics.last_used = Math.floor(Date.now() / 1000);
      if (!lane.queue.next()) {
        lane.busy = false;
        this.#armIdle();
      }
    }
  }

  /** Counts a finished completion and its decoding speed. */
  record(completionTokens: number, decodeMs: number): void {
    const m = this.metrics;
    m.inference_count++;
    if (completionTokens > 1 && decodeMs > 0) {
      const tps = Math.round(((completionTokens - 1) / decodeMs) * 1000 * 10) / 10;
      m.tokens_per_second = tps;
      m.avg_tokens_per_second = m.avg_tokens_per_second === null ? tps : Math.round(
        ((m.avg_tokens_per_second * (m.inference_count - 1) + tps) /
          m.inference_count) * 10,
      ) / 10;
    }
  }

  /** Refuses new and waiting requests with `reason` (the model is going). */
  close(reason: string): void {
    this.#closed = reason;
    clearTimeout(this.#idleTimer);
    for (const lane of this.#lanes) lane.queue.failAll(new Unavailable(reason));
  }

  #armIdle(): void {
    if (this.#idleMs <= 0) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      if (this.#lanes.every((lane) => !lane.busy && lane.queue.size === 0)) this.#onIdle();
    }, this.#idleMs);
  }
}
