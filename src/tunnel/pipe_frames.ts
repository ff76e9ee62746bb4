/**
 * Message frames over a byte stream (a process's stdin and stdout), for the channel between the
 * node and a container process (spec/mcm.yaml). A frame is a 4-byte big-endian length, one byte
 * of kind (0 text, 1 binary), then the payload, so that the StreamMux can run over a pipe as it
 * does over a WebSocket. This module runs inside container processes too: its only import is
 * ./bytes.ts, which imports nothing.
 *
 * @module
 */
import { concatBytes } from "./bytes.ts";

/** The largest payload accepted; more means the peer is broken or hostile. */
export const MAX_FRAME_BYTES = 8 * 1024 * 1024;

const TEXT = 0;
const BINARY = 1;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A frame that breaks the format; the channel cannot go on after it. */
export class FrameError extends Error {
  override name = "FrameError";
}

/** One frame's bytes. */
export function encodeFrame(frame: string | Uint8Array): Uint8Array {
  const payload = typeof frame === "string" ? encoder.encode(frame) : frame;
  const bytes = new Uint8Array(5 + payload.length);
  new DataView(bytes.buffer).setUint32(0, payload.length + 1);
  bytes[4] = typeof frame === "string" ? TEXT : BINARY;
  bytes.set(payload, 5);
  return bytes;
}

/** Splits a byte stream into frames, across chunk boundaries. */
export class FrameDecoder {
  #buffer = new Uint8Array(0);

  /** The frames completed by `chunk`. Throws FrameError on a malformed stream. */
  push(chunk: Uint8Array): (string | Uint8Array)[] {
    let buffer = this.#buffer.length === 0 ? chunk : concatBytes([this.#buffer, chunk]);
    const frames: (string | Uint8Array)[] = [];
    while (buffer.length >= 4) {
      const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.length);
      const length = view.getUint32(0);
      if (length < 1 || length > MAX_FRAME_BYTES + 1) {
        throw new FrameError(`a frame of ${length} bytes is not allowed`);
      }
      if (buffer.length < 4 + length) break;
      const kind = buffer[4];
      const payload = buffer.subarray(5, 4 + length);
      if (kind === TEXT) frames.push(decoder.decode(payload));
      else if (kind === BINARY) frames.push(payload.slice());
      else throw new FrameError(`unknown frame kind ${kind}`);
      buffer = buffer.subarray(4 + length);
    }
    this.#buffer = buffer.slice();
    return frames;
  }
}

/**
 * Writes bytes to a sink, coalescing: bytes written while a write is in flight go out together
 * in the next one. Under load this batches many messages into one system call without ever
 * waiting on a timer.
 */
export class CoalescingWriter {
  readonly #write: (bytes: Uint8Array) => Promise<unknown>;
  readonly #onError: (error: Error) => void;
  #queue: Uint8Array[] = [];
  /** Bytes queued or being written. */
  #pending = 0;
  #writing = false;
  #failed = false;

  /** `write` must write all the bytes; `onError` hears the first failure (the sink is gone). */
  constructor(write: (bytes: Uint8Array) => Promise<unknown>, onError: (error: Error) => void) {
    this.#write = write;
    this.#onError = onError;
  }

  /**
   * Bytes queued and not yet written (the batch being written included): what a sink that
   * does not read (a container process that stopped reading its stdin) makes this side hold.
   */
  get queuedBytes(): number {
    return this.#pending;
  }

  /** Queues bytes (which must not change until written). */
  push(bytes: Uint8Array): void {
    if (this.#failed) return;
    this.#queue.push(bytes);
    this.#pending += bytes.length;
    if (!this.#writing) {
      this.#writing = true;
      // Bytes of the same turn (a response's head, body and end) leave in one write.
      queueMicrotask(() => this.#drain());
    }
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = concatBytes(this.#queue);
        this.#queue = [];
        await this.#write(batch);
        this.#pending -= batch.length;
      }
    } catch (error) {
      this.#queue = [];
      this.#pending = 0;
      this.#failed = true;
      this.#onError(error as Error);
    } finally {
      this.#writing = false;
    }
  }
}

/** Writes frames to a byte sink, coalescing them (CoalescingWriter). */
export class FrameWriter {
  readonly #out: CoalescingWriter;

  /** `write` must write all the bytes; `onError` hears the first failure (the sink is gone). */
  constructor(write: (bytes: Uint8Array) => Promise<unknown>, onError: (error: Error) => void) {
    this.#out = new CoalescingWriter(write, onError);
  }

  /** Bytes of frames queued and not yet written (CoalescingWriter.queuedBytes). */
  get queuedBytes(): number {
    return this.#out.queuedBytes;
  }

  /** Queues one frame. */
  send(frame: string | Uint8Array): void {
    this.#out.push(encodeFrame(frame));
  }
}
