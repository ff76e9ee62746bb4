/**
 * HTTP bodies multiplexed over one WebSocket, with per-stream flow control (spec/hub.yaml,
 * "Tunnels"). The sender of a body may have at most WINDOW_BYTES unacknowledged; the receiver
 * grants credit as its reader consumes bytes. A slow reader therefore stalls its own sender
 * instead of filling memory, and one slow stream does not stall the others.
 *
 * @module
 */
import { bodySource, nextTask } from "./body_source.ts";
import { concatBytes } from "./bytes.ts";
import { dataFrame, jsonCodec, type MuxCodec, type MuxHead, type MuxMessage } from "./mux_codec.ts";

export { dataFrame, type MuxMessage };

/** Bytes a sender may send on a stream before the receiver grants more (the default). */
export const WINDOW_BYTES = 512 * 1024;
/** The largest body piece in one binary frame (the default). */
export const MAX_CHUNK_BYTES = 64 * 1024;
/** The largest body sent inside its head message. */
export const INLINE_MAX_BYTES = 64 * 1024;

/** How a mux frames its messages and how much it lets through per stream. */
export interface MuxOptions {
  /** JSON messages (the container channel's) unless given. */
  codec?: MuxCodec;
  /** Unacknowledged bytes per stream and direction; credit is granted per quarter of it. */
  windowBytes?: number;
  /** The largest body piece in one frame. */
  chunkBytes?: number;
  /**
   * Bytes received and not yet read, over all streams, past which the stream that brings more
   * is aborted (unlimited unless given): what the peer can make this side hold, whatever the
   * number of streams.
   */
  budgetBytes?: number;
}

/** A stream cancelled by the other side or because the connection went away. */
export class StreamAborted extends Error {
  override name = "StreamAborted";
}

interface Inbound {
  queue: Uint8Array[];
  ended: boolean;
  error?: Error;
  wake?: () => void;
  /** Bytes read since the last credit granted. */
  consumed: number;
  /** Bytes received and not yet granted back as credit: never more than the window. */
  unacked: number;
}

interface Outbound {
  credit: number;
  error?: Error;
  wake?: () => void;
}

/** Bodies in both directions of every open stream of one connection. */
export class StreamMux {
  readonly #send: (frame: string | Uint8Array) => void;
  readonly #inbound = new Map<number, Inbound>();
  readonly #outbound = new Map<number, Outbound>();
  readonly #codec: MuxCodec;
  readonly #window: number;
  readonly #chunk: number;
  readonly #budget: number;
  /** Bytes received and not yet read, over all streams. */
  #held = 0;
  /** The buffers of pieces read into frame space (ours to frame in place). */
  readonly #inPlace = new WeakSet<ArrayBufferLike>();

  /** `send` writes one frame to the socket. */
  constructor(send: (frame: string | Uint8Array) => void, options: MuxOptions = {}) {
    this.#send = send;
    this.#codec = options.codec ?? jsonCodec;
    this.#window = options.windowBytes ?? WINDOW_BYTES;
    this.#chunk = options.chunkBytes ?? MAX_CHUNK_BYTES;
    this.#budget = options.budgetBytes ?? Infinity;
  }

  /** How many bodies are being received or sent. */
  get openBodies(): number {
    return this.#inbound.size + this.#outbound.size;
  }

  #control(message: MuxMessage): void {
    this.#send(this.#codec.control(message));
  }

  /**
   * The body the peer sends on `stream`, read as it arrives. Cancelling it aborts the stream
   * (and `onCancel` runs, for the stream's other direction).
   */
  receive(
    stream: number,
    onCancel: (reason: string) => void = () => {},
  ): ReadableStream<Uint8Array> {
    const state: Inbound = { queue: [], ended: false, consumed: 0, unacked: 0 };
    this.#inbound.set(stream, state);
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        while (state.queue.length === 0 && !state.ended && !state.error) {
          await new Promise<void>((resolve) => state.wake = resolve);
        }
        const chunk = state.queue.shift();
        if (chunk) {
          this.#held -= chunk.length;
          controller.enqueue(chunk);
          state.consumed += chunk.length;
          // Credit in batches of a quarter window: one message per many frames.
          if (state.consumed >= this.#window / 4 && !state.ended) {
            this.#control({ t: "credit", s: stream, n: state.consumed });
            state.unacked -= state.consumed;
            state.consumed = 0;
          }
          return;
        }
        this.#inbound.delete(stream);
        if (state.error) controller.error(state.error);
        else controller.close();
      },
      cancel: (reason) => {
        if (!this.#inbound.has(stream)) return;
        this.#inbound.delete(stream);
        this.#dropQueue(state);
        const message = `the receiver cancelled: ${reason ?? "no reason"}`;
        this.#control({ t: "abort", s: stream, message });
        this.#failOutbound(stream, message);
        onCancel(message);
      },
    }, { highWaterMark: 0 });
  }

  /**
   * Sends `head` (the request or response message) and `body` on `stream`. A body that is
   * complete already and at most INLINE_MAX_BYTES goes inside the head (`inline`: raw bytes in
   * binary frames, base64 in JSON messages);
   * otherwise the head says `body: true` and the bytes follow within the peer's credit, then
   * `end`. Rejects with StreamAborted when the peer aborts; if reading `body` fails after the
   * head went, the peer gets `abort`.
   */
  async send(
    stream: number,
    head: MuxHead,
    body: ReadableStream<Uint8Array> | Uint8Array | null,
  ): Promise<void> {
    if (!body) return this.#send(this.#codec.head({ ...head, body: false }, undefined));
    if (body instanceof Uint8Array) {
      // Complete already: no need to wait and see whether more comes.
      if (body.length <= INLINE_MAX_BYTES) {
        return this.#send(this.#codec.head({ ...head, body: false }, body));
      }
      body = new Blob([body as Uint8Array<ArrayBuffer>]).stream();
    }
    const source = bodySource(body, this.#codec.frameSpace, this.#inPlace);
    // One message, not several: frames written apart meet Nagle's algorithm and the peer's
    // delayed ACK (Deno's WebSocket client has no TCP_NODELAY), 40 ms a request.
    const ready: Uint8Array[] = [];
    let size = 0;
    let pending = source.read(INLINE_MAX_BYTES);
    while (size <= INLINE_MAX_BYTES) {
      const result = await Promise.race([pending, nextTask()]);
      if (result === undefined) break;
      if (result.done) {
        return this.#send(this.#codec.head({ ...head, body: false }, concatBytes(ready)));
      }
      ready.push(result.value);
      size += result.value.length;
      pending = source.read(INLINE_MAX_BYTES);
    }
    this.#send(this.#codec.head({ ...head, body: true }, undefined));
    source.streams();
    const state: Outbound = { credit: this.#window };
    this.#outbound.set(stream, state);
    try {
      for (const chunk of ready) await this.#sendChunk(stream, state, chunk);
      while (true) {
        const { value, done } = await pending;
        if (state.error) throw state.error;
        if (done) break;
        await this.#sendChunk(stream, state, value);
        while (state.credit <= 0 && !state.error) {
          await new Promise<void>((resolve) => state.wake = resolve);
        }
        // Aborted while waiting: a read of 0 bytes would fail with a TypeError instead.
        if (state.error) throw state.error;
        // No more than the credit: a piece read in place is sent whole.
        pending = source.read(Math.min(this.#chunk, state.credit));
      }
      this.#control({ t: "end", s: stream });
    } catch (error) {
      if (!state.error) {
        // Our side failed (the body's source broke): tell the peer, and stop receiving too.
        const message = `the sender failed: ${(error as Error).message}`;
        this.#control({ t: "abort", s: stream, message });
        this.#failInbound(stream, new StreamAborted(message));
      }
      source.cancel(error);
      throw error;
    } finally {
      this.#outbound.delete(stream);
    }
  }

  async #sendChunk(stream: number, state: Outbound, chunk: Uint8Array): Promise<void> {
    for (let offset = 0; offset < chunk.length;) {
      while (state.credit <= 0 && !state.error) {
        await new Promise<void>((resolve) => state.wake = resolve);
      }
      if (state.error) throw state.error;
      const n = Math.min(chunk.length - offset, state.credit, this.#chunk);
      const whole = offset === 0 && n === chunk.length;
      const piece = whole ? chunk : chunk.subarray(offset, offset + n);
      this.#send(this.#codec.data(stream, piece, whole && this.#inPlace.has(chunk.buffer)));
      state.credit -= n;
      offset += n;
    }
  }

  /** The body a head announced: inline bytes, frames to come (`body: true`), or none. */
  bodyOf(
    stream: number,
    head: { body: boolean; inline?: string | Uint8Array },
    onCancel?: (reason: string) => void,
  ): BodyInit | null {
    if (typeof head.inline === "string") return Uint8Array.fromBase64(head.inline);
    if (head.inline !== undefined) return head.inline as Uint8Array<ArrayBuffer>;
    return head.body ? this.receive(stream, onCancel) : null;
  }

  /** A binary frame from the peer. Bytes for an unknown stream (just cancelled) are dropped. */
  onData(frame: Uint8Array): void {
    if (frame.length < 4) return;
    this.onBody(new DataView(frame.buffer, frame.byteOffset).getUint32(0), frame.subarray(4));
  }

  /**
   * A piece of the peer's body on `stream` (dropped when the stream is unknown). A peer that
   * sends more than the credit it was granted has the stream aborted: nothing it sends makes
   * this side hold more than the window.
   */
  onBody(stream: number, bytes: Uint8Array): void {
    const state = this.#inbound.get(stream);
    if (!state || state.ended || state.error) return;
    state.unacked += bytes.length;
    if (state.unacked > this.#window) {
      return this.cancel(
        stream,
        `the sender went past the flow-control window of ${this.#window} bytes`,
      );
    }
    if (this.#held + bytes.length > this.#budget) {
      return this.cancel(stream, `the connection holds ${this.#budget} bytes unread already`);
    }
    this.#held += bytes.length;
    state.queue.push(bytes);
    state.wake?.();
  }

  /** A mux control message from the peer. */
  onControl(message: MuxMessage): void {
    if (message.t === "credit") {
      const state = this.#outbound.get(message.s);
      if (!state) return;
      state.credit += message.n;
      state.wake?.();
    } else if (message.t === "end") {
      const state = this.#inbound.get(message.s);
      if (!state) return;
      state.ended = true;
      state.wake?.();
    } else {
      this.abortStream(message.s, `the other side aborted: ${message.message}`);
    }
  }

  /** Ends both directions of `stream` locally, without telling the peer. */
  abortStream(stream: number, message: string): void {
    this.#failInbound(stream, new StreamAborted(message));
    this.#failOutbound(stream, message);
  }

  /** Whether the peer's body on `stream` is still being received. */
  receiving(stream: number): boolean {
    return this.#inbound.has(stream);
  }

  /** Tells the peer that `stream` is cancelled, and ends it here. */
  cancel(stream: number, message: string): void {
    this.#control({ t: "abort", s: stream, message });
    this.abortStream(stream, message);
  }

  /** Fails every open stream (the connection is gone). */
  abortAll(message: string): void {
    for (const stream of [...this.#inbound.keys(), ...this.#outbound.keys()]) {
      this.abortStream(stream, message);
    }
  }

  #failInbound(stream: number, error: Error): void {
    const state = this.#inbound.get(stream);
    // A body that arrived whole stays readable: the peer may abort the other direction after.
    if (!state || state.error || state.ended) return;
    state.error = error;
    this.#dropQueue(state);
    state.wake?.();
  }

  #dropQueue(state: Inbound): void {
    for (const piece of state.queue) this.#held -= piece.length;
    state.queue.length = 0;
  }

  #failOutbound(stream: number, message: string): void {
    const state = this.#outbound.get(stream);
    if (!state || state.error) return;
    state.error = new StreamAborted(message);
    state.wake?.();
  }
}
