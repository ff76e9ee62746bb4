/**
 * A loaded model's place in the node: its one-at-a-time turn for requests with a bounded queue,
 * its idle timer and its figures (the reference's `metrics`).
 *
 * @module
 */
import { Cancelled, TooMany, Unavailable } from "../errors/mod.ts";
import type { EngineModelKind, LoadedModelInfo } from "./engine_protocol.ts";

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
  readonly #waiters: Array<{ go: () => void; fail: (error: Error) => void }> = [];
  readonly #queueLimit: number;
  #idleTimer?: ReturnType<typeof setTimeout>;
  readonly #onIdle: () => void;
  readonly #idleMs: number;

  /** A slot for a model the engine has just loaded. */
  constructor(
    loaded: { id: string; key: string; kind: EngineModelKind; info: LoadedModelInfo },
    options: { queueLimit: number; idleMs: number; onIdle: () => void },
  ) {
    this.id = loaded.id;
    this.key = loaded.key;
    this.kind = loaded.kind;
    this.info = loaded.info;
    this.#queueLimit = options.queueLimit;
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
    return this.#waiters.length;
  }

  /**
   * Runs `job` when it is this request's turn. 429 when `queueLimit` requests wait already; an
   * aborted `signal` leaves the queue at once.
   */
  async run<T>(job: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.#closed) throw new Unavailable(this.#closed);
    if (this.#busy) {
      if (this.#waiters.length >= this.#queueLimit) {
        throw new TooMany(
          `model '${this.id}' has ${this.#waiters.length} requests waiting already ` +
            `(inference.queueLimit); try again shortly`,
          { retryAfterSeconds: 1 },
        );
      }
      await new Promise<void>((go, fail) => {
        const waiter = { go, fail };
        this.#waiters.push(waiter);
        signal?.addEventListener("abort", () => {
          const at = this.#waiters.indexOf(waiter);
          if (at >= 0) this.#waiters.splice(at, 1);
          fail(new Cancelled("the client went away while waiting"));
        }, { once: true });
      });
    }
    this.#busy = true;
    clearTimeout(this.#idleTimer);
    try {
      return await job();
    } finally {
      this.#busy = false;
      this.metrics.last_used = Math.floor(Date.now() / 1000);
      const next = this.#waiters.shift();
      if (next) next.go();
      else this.#armIdle();
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
    for (const waiter of this.#waiters.splice(0)) waiter.fail(new Unavailable(reason));
  }

  #armIdle(): void {
    if (this.#idleMs <= 0) return;
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => {
      if (!this.#busy && this.#waiters.length === 0) this.#onIdle();
    }, this.#idleMs);
  }
}
