/**
 * A loaded model's place in the node: its one-at-a-time turn for requests with a bounded queue,
 * its idle timer and its figures (the reference's `metrics`).
 *
 * @module
 */
import { Unavailable } from "../errors/mod.ts";
import type { EngineModelKind, LoadedModelInfo } from "./engine_protocol.ts";
import { FairQueue, type QueueCaller } from "./fair_queue.ts";

/** The key holder's place in the queue: the API's callers. */
const KEY_HOLDER_QUEUE: QueueCaller = { client: "", priority: true };

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
  /** The engine request running on it, to cancel when the slot closes. */
  activeRequest?: number;
  #busy = false;
  #closed?: string;
  readonly #queue: FairQueue;
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
    this.#queue = new FairQueue(loaded.id, options.queueLimit, options.perClientLimit);
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
    return this.#queue.size;
  }

  /**
   * Runs `job` when it is this request's turn (fair_queue.ts decides whose). 429 at once when the
   * caller's places are taken; an aborted `signal` leaves the queue at once.
   */
  async run<T>(
    job: () => Promise<T>,
    signal?: AbortSignal,
    caller: QueueCaller = KEY_HOLDER_QUEUE,
  ): Promise<T> {
    if (this.#closed) throw new Unavailable(this.#closed);
    // A waiter is handed the turn with the model still busy: no newcomer slips in between.
    if (this.#busy) await this.#queue.wait(caller, signal);
    this.#busy = true;
    clearTimeout(this.#idleTimer);
    try {
      if (this.#closed) throw new Unavailable(this.#closed);
      return await job();
    } finally {
      this.metrics.last_used = Math.floor(Date.now() / 1000);
      if (!this.#queue.next()) {
        this.#busy = false;
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
    this.#queue.failAll(new Unavailable(reason));
  }

  #armIdle(): void {
    if (this.#idleMs <= 0) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      if (!this.#busy && this.#queue.size === 0) this.#onIdle();
    }, this.#idleMs);
  }
}
