/**
 * The body of a node call's streamed answer (a `mesh` call's `{chunk}` events) as the
 * microservice's ReadableStream, with flow control (spec/mcm.yaml, ContainerTook): a part is
 * handed to the reader only when it pulls (highWaterMark 0), and what it took is reported to the
 * node, which sends at most CALL_WINDOW_BYTES beyond that. A microservice that does not read
 * holds at most a window here; the rest waits at the peer.
 *
 * @module
 */
import { CALL_WINDOW_BYTES } from "../channel_protocol.ts";

/** Reports to the node that the reader took `bytes` (node_calls.ts sends ContainerTook). */
export type Took = (bytes: number) => void;

/** A streamed body fed by the node's events and read by the microservice. */
export class CallBody {
  /** The microservice's side. */
  readonly stream: ReadableStream<Uint8Array>;
  readonly #queue: Uint8Array[] = [];
  readonly #reportEvery: number;
  #took: Took = () => {};
  /** Bytes taken by the reader and not yet reported. */
  #untold = 0;
  #ended = false;
  #error: Error | undefined;
  #wake: (() => void) | undefined;
  #cancelled = false;

  /** `onCancel` runs when the reader cancels (the call should be cancelled too). */
  constructor(onCancel: () => void, windowBytes = CALL_WINDOW_BYTES) {
    // In batches, as the tunnel's credit (stream_mux.ts): a message per many parts.
    this.#reportEvery = Math.max(1, Math.floor(windowBytes / 4));
    this.stream = new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        while (this.#queue.length === 0 && !this.#ended) {
          await new Promise<void>((resolve) => this.#wake = resolve);
        }
        const part = this.#queue.shift();
        if (part) {
          controller.enqueue(part);
          this.#untold += part.length;
          if (this.#untold >= this.#reportEvery && !this.#ended) {
            this.#took(this.#untold);
            this.#untold = 0;
          }
          return;
        }
        if (this.#error) controller.error(this.#error);
        else controller.close();
      },
      cancel: () => {
        this.#cancelled = true;
        this.#finish();
        this.#queue.length = 0;
        onCancel();
      },
    }, { highWaterMark: 0 });
  }

  /** Bytes received and not yet taken by the reader. */
  get queuedBytes(): number {
    let bytes = 0;
    for (const part of this.#queue) bytes += part.length;
    return bytes;
  }

  /** A part came; `took` reports what the reader takes of this call. */
  push(part: Uint8Array, took: Took): void {
    if (this.#ended || this.#cancelled) return;
    this.#took = took;
    this.#queue.push(part);
    this.#wakeReader();
  }

  /** The body ended: the reader gets what is queued, then its end. */
  close(): void {
    this.#finish();
  }

  /** The body failed: the reader gets what is queued, then `error`. */
  error(error: Error): void {
    if (this.#ended) return;
    this.#error = error;
    this.#finish();
  }

  #finish(): void {
    this.#ended = true;
    this.#wakeReader();
  }

  #wakeReader(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
