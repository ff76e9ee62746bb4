/**
 * Flow control of a streamed answer to a container's call (spec/mcm.yaml, ContainerTook), as the
 * hub tunnel's per-stream credit (src/tunnel/stream_mux.ts): the node sends at most
 * CALL_WINDOW_BYTES of an answer's body beyond what the microservice's reader took, and the
 * sandbox says what it took as its reader pulls. What a microservice does not read stays where
 * it came from (a peer's socket: TCP backpressure), not in the node's or its own process's
 * memory.
 *
 * @module
 */
import { CALL_WINDOW_BYTES } from "../sandbox/channel_protocol.ts";

/** The largest body part of one event; a larger one the source gives is split. */
export const CALL_CHUNK_BYTES = 64 * 1024;

/** A report of a container that breaks the protocol (it took more than was sent). */
export class CreditError extends Error {
  override name = "CreditError";
}

/** What one streamed answer sent and what the container took of it. */
export class CallCredit {
  readonly #window: number;
  #sent = 0;
  #took = 0;
  #waiting?: PromiseWithResolvers<void>;
  #ended = false;

  constructor(windowBytes = CALL_WINDOW_BYTES) {
    this.#window = windowBytes;
  }

  /** Bytes sent and not yet taken. */
  get inFlight(): number {
    return this.#sent - this.#took;
  }

  /**
   * Counts `bytes` sent; resolves once the container took enough that less than the window is
   * in flight (at once when it is), or when the answer ended (`end`).
   */
  sent(bytes: number): Promise<void> {
    this.#sent += bytes;
    if (this.#ended || this.inFlight < this.#window) return Promise.resolve();
    this.#waiting ??= Promise.withResolvers<void>();
    return this.#waiting.promise;
  }

  /** The container took `bytes`; CreditError when that is more than was sent. */
  took(bytes: number): void {
    if (bytes > this.inFlight) {
      throw new CreditError(`it reported reading ${bytes} bytes of ${this.inFlight} sent`);
    }
    this.#took += bytes;
    if (this.inFlight < this.#window) this.#wake();
  }

  /** The answer ended (or was cancelled): nothing waits any more. */
  end(): void {
    this.#ended = true;
    this.#wake();
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.resolve();
  }
}

/** How a streamed answer sends an event: resolves when it may send more (container_calls.ts). */
export type Emit = (event: unknown, bytes?: number) => Promise<void>;

/**
 * Sends `reader`'s bytes as `{ chunk: <base64> }` events of at most CALL_CHUNK_BYTES, each
 * waiting for the container's credit before the next is read; resolves once the body ended.
 * `signal` aborted, it stops (the caller cancels the reader).
 */
export async function sendChunks(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  emit: Emit,
  signal: AbortSignal,
): Promise<void> {
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    for (let at = 0; at < value.length && !signal.aborted; at += CALL_CHUNK_BYTES) {
      const part = value.subarray(at, at + CALL_CHUNK_BYTES);
      await emit({ chunk: part.toBase64() }, part.length);
    }
    if (signal.aborted) return;
  }
}
