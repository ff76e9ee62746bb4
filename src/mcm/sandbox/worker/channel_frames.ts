/**
 * The channel's frames in the sandbox (the format of src/tunnel/pipe_frames.ts: a 4-byte
 * big-endian length, a byte of kind, the payload), on intrinsics only (intrinsics.ts) and
 * without `await`: the channel runs after the microservice's code loaded, and must still carry
 * the node's pings, aborts and the worker's answers when that code replaced `Promise`,
 * `TextEncoder`, typed arrays' or arrays' methods (which would end the container by the node's
 * ping instead of by the watchdog's limits). Writes coalesce as pipe_frames.ts's
 * CoalescingWriter does: the frames of one turn leave in one write.
 *
 * @module
 */
import {
  ArrayPrototypePush,
  onSettled,
  SafeRangeError,
  SafeUint8Array,
  TextEncoderPrototypeEncode,
  TypedArrayPrototypeGetLength,
  TypedArrayPrototypeSet,
  uncurry,
  viewOfBytes,
} from "./intrinsics.ts";

/** The largest payload accepted (pipe_frames.ts, MAX_FRAME_BYTES). */
const MAX_FRAME_BYTES = 8 * 1024 * 1024;
const TEXT = 0;
const BINARY = 1;
const encoder = new TextEncoder();
const decode = uncurry(TextDecoder.prototype.decode);
const decoder = new TextDecoder();
const queueTask = queueMicrotask;
const EMPTY = new SafeUint8Array(0);

/** The bytes of `parts`, one after the other. */
export function joinBytes(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  let size = 0;
  for (let i = 0; i < parts.length; i++) size += TypedArrayPrototypeGetLength(parts[i]);
  const whole = new SafeUint8Array(size);
  let at = 0;
  for (let i = 0; i < parts.length; i++) {
    TypedArrayPrototypeSet(whole, parts[i], at);
    at += TypedArrayPrototypeGetLength(parts[i]);
  }
  return whole;
}

/** One frame's bytes. */
export function encodeFrame(frame: string | Uint8Array): Uint8Array {
  const text = typeof frame === "string";
  const payload = text ? TextEncoderPrototypeEncode(encoder, frame) : frame;
  const length = TypedArrayPrototypeGetLength(payload) + 1;
  const bytes = new SafeUint8Array(4 + length);
  bytes[0] = length >>> 24;
  bytes[1] = (length >>> 16) & 0xff;
  bytes[2] = (length >>> 8) & 0xff;
  bytes[3] = length & 0xff;
  bytes[4] = text ? TEXT : BINARY;
  TypedArrayPrototypeSet(bytes, payload, 5);
  return bytes;
}

/** Splits the channel's bytes into frames, across chunk boundaries. */
export class ChannelDecoder {
  #buffer: Uint8Array = EMPTY;

  /** The frames completed by `chunk`; a RangeError for a malformed stream. */
  push(chunk: Uint8Array): (string | Uint8Array)[] {
    let buffer = TypedArrayPrototypeGetLength(this.#buffer) === 0
      ? chunk
      : joinBytes([this.#buffer, chunk]);
    let size = TypedArrayPrototypeGetLength(buffer);
    const frames: (string | Uint8Array)[] = [];
    let at = 0;
    while (size - at >= 4) {
      const length = ((buffer[at] << 24) | (buffer[at + 1] << 16) | (buffer[at + 2] << 8) |
        buffer[at + 3]) >>> 0;
      if (length < 1 || length > MAX_FRAME_BYTES + 1) {
        throw new SafeRangeError(`a frame of ${length} bytes is not allowed`);
      }
      if (size - at < 4 + length) break;
      const kind = buffer[at + 4];
      const payload = viewOfBytes(buffer, at + 5, at + 4 + length);
      if (kind === TEXT) ArrayPrototypePush(frames, decode(decoder, payload));
      else if (kind === BINARY) ArrayPrototypePush(frames, joinBytes([payload, EMPTY]));
      else throw new SafeRangeError(`unknown frame kind ${kind}`);
      at += 4 + length;
    }
    buffer = viewOfBytes(buffer, at, size);
    size -= at;
    this.#buffer = size === 0 ? EMPTY : joinBytes([buffer, EMPTY]);
    return frames;
  }
}

/**
 * Writes frames to a sink, coalescing: frames sent while a write is in flight go out together
 * in the next one. `write` must write all the bytes; `onError` hears the first failure.
 */
export class ChannelWriter {
  readonly #write: (bytes: Uint8Array) => Promise<unknown>;
  readonly #onError: (error: unknown) => void;
  #queue: Uint8Array[] = [];
  #writing = false;
  #failed = false;

  constructor(write: (bytes: Uint8Array) => Promise<unknown>, onError: (error: unknown) => void) {
    this.#write = write;
    this.#onError = onError;
  }

  /** Queues one frame. */
  send(frame: string | Uint8Array): void {
    if (this.#failed) return;
    ArrayPrototypePush(this.#queue, encodeFrame(frame));
    if (this.#writing) return;
    this.#writing = true;
    // Frames of the same turn (a response's head, body and end) leave in one write.
    queueTask(() => this.#drain());
  }

  #drain(): void {
    if (this.#queue.length === 0) {
      this.#writing = false;
      return;
    }
    const batch = joinBytes(this.#queue);
    this.#queue = [];
    let written: Promise<unknown>;
    try {
      written = this.#write(batch);
    } catch (error) {
      return this.#fail(error);
    }
    onSettled(written, () => this.#drain(), (error) => this.#fail(error));
  }

  #fail(error: unknown): void {
    this.#queue = [];
    this.#failed = true;
    this.#writing = false;
    this.#onError(error);
  }
}
