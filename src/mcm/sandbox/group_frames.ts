/**
 * The frames of a client's container process (a process that hosts several containers, each in
 * a worker: tenant_host.ts) over its stdin and stdout. Each frame is a 4-byte big-endian slot,
 * a 4-byte length and the payload. Slot 0 carries the process's own messages (JSON: GroupControl
 * from the node, GroupEvent to it); any other slot is one container's byte stream, itself the
 * length-prefixed frames of pipe_frames.ts, passed through without being parsed here.
 *
 * Imported by the node and by the container process; imports nothing.
 *
 * @module
 */

/** The slot of the process's own messages. */
export const CONTROL_SLOT = 0;

/** The largest payload of one frame; longer writes are split. */
export const MAX_GROUP_PAYLOAD = 1024 * 1024;

const HEADER = 8;

/** The node's messages to a client's container process. */
export type GroupControl =
  /** A new container: start its sandboxed worker; its bytes come on `slot`. */
  | { t: "open"; slot: number }
  /** The node closed the container's channel (its stdin ended). */
  | { t: "close"; slot: number }
  /** End the container at once. */
  | { t: "kill"; slot: number };

/** The process's messages to the node. */
export interface GroupEvent {
  t: "ended";
  slot: number;
  /** The exit code the container would have had as a process of its own (watchdog.ts). */
  code: number;
  /** Why, in a user's words (absent for a plain end). */
  why?: string;
}

/** A frame broke the format: the stream cannot go on. */
export class GroupFrameError extends Error {
  override name = "GroupFrameError";
}

/** The frames carrying `payload` on `slot`, split at MAX_GROUP_PAYLOAD, in one array. */
export function encodeGroupFrames(slot: number, payload: Uint8Array): Uint8Array {
  const pieces = Math.max(1, Math.ceil(payload.length / MAX_GROUP_PAYLOAD));
  const bytes = new Uint8Array(payload.length + pieces * HEADER);
  const view = new DataView(bytes.buffer);
  let at = 0;
  for (let offset = 0; offset < payload.length || at === 0; offset += MAX_GROUP_PAYLOAD) {
    const piece = payload.subarray(offset, offset + MAX_GROUP_PAYLOAD);
    view.setUint32(at, slot);
    view.setUint32(at + 4, piece.length);
    bytes.set(piece, at + HEADER);
    at += HEADER + piece.length;
  }
  return bytes;
}

/** A frame decoded: its slot and its own copy of the payload. */
export interface GroupFrame {
  slot: number;
  payload: Uint8Array;
}

/** Splits a byte stream into group frames, across chunk boundaries. */
export class GroupFrameDecoder {
  readonly #header = new Uint8Array(HEADER);
  #headerFill = 0;
  #payload: Uint8Array | undefined;
  #payloadFill = 0;
  #slot = 0;

  /** The frames completed by `chunk`. Throws GroupFrameError on a malformed stream. */
  push(chunk: Uint8Array): GroupFrame[] {
    const frames: GroupFrame[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (!this.#payload) {
        const take = Math.min(HEADER - this.#headerFill, chunk.length - at);
        this.#header.set(chunk.subarray(at, at + take), this.#headerFill);
        this.#headerFill += take;
        at += take;
        if (this.#headerFill < HEADER) break;
        const view = new DataView(this.#header.buffer);
        this.#slot = view.getUint32(0);
        const length = view.getUint32(4);
        if (length > MAX_GROUP_PAYLOAD) {
          throw new GroupFrameError(`a frame of ${length} bytes is not allowed`);
        }
        this.#headerFill = 0;
        this.#payload = new Uint8Array(length);
        this.#payloadFill = 0;
      }
      const take = Math.min(this.#payload.length - this.#payloadFill, chunk.length - at);
      this.#payload.set(chunk.subarray(at, at + take), this.#payloadFill);
      this.#payloadFill += take;
      at += take;
      if (this.#payloadFill === this.#payload.length) {
        frames.push({ slot: this.#slot, payload: this.#payload });
        this.#payload = undefined;
      }
    }
    return frames;
  }
}
