/**
 * Whether a container's thread is busy at a moment of the host's choosing, in a client's process
 * (tenant_host.ts), where this thread cannot read another thread's CPU time (Deno refuses /proc
 * without --allow-all and does not expose a web Worker's CPU time).
 *
 * The host puts a `ping` frame into the container's channel at random moments (never inside
 * a frame of the node's: it follows the channel's frame boundaries) and times the worker's
 * `pong`, which its channel answers on intrinsics the microservice cannot replace
 * (channel_frames.ts). An idle thread answers within a millisecond; a busy one when its busy
 * spell ends. Random moments sample a loop's busy share without bias, whatever its period (the
 * worker's own reports come at a fixed period, which a periodic loop can fall between for
 * ever). The pong goes on to the node, which takes an unasked pong as a sign of life.
 *
 * Reading the frames costs the channel a few integer operations per frame header; a probe is
 * two small messages.
 *
 * @module
 */

/** The channel's frames (src/tunnel/pipe_frames.ts): a 4-byte length, a kind byte, the payload. */
const TEXT = 0;
const encoder = new TextEncoder();
const PING = encoder.encode(JSON.stringify({ t: "ping" }));
const PONG = encoder.encode(JSON.stringify({ t: "pong" }));

/** The bytes of one text frame. */
function frame(payload: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(5 + payload.length);
  new DataView(bytes.buffer).setUint32(0, payload.length + 1);
  bytes[4] = TEXT;
  bytes.set(payload, 5);
  return bytes;
}

/** A ping frame's bytes, as the node sends it. */
export const PING_FRAME: Uint8Array = frame(PING);

/**
 * Follows one direction of a channel's bytes frame by frame, and counts the frames whose kind
 * and payload are `wanted` (a ping, a pong): only their few bytes are ever kept.
 */
export class FrameWatch {
  readonly #wanted: Uint8Array;
  readonly #header = new Uint8Array(4);
  #headerFill = 0;
  /** Bytes of the current frame's kind and payload not yet seen. */
  #remaining = 0;
  /** The current frame's bytes, when it has the wanted one's size; else undefined. */
  #kept: Uint8Array | undefined;
  #keptFill = 0;

  /** Watches for text frames of exactly `payload`. */
  constructor(payload: Uint8Array) {
    this.#wanted = payload;
  }

  /** Whether the bytes so far end with a whole frame (a frame may be put in here). */
  atBoundary(): boolean {
    return this.#remaining === 0 && this.#headerFill === 0;
  }

  /** Reads `chunk`; returns how many wanted frames it completed. */
  push(chunk: Uint8Array): number {
    let found = 0;
    let at = 0;
    while (at < chunk.length) {
      if (this.#remaining === 0) {
        // Byte by byte: a header is four bytes, and a view per header would cost more.
        while (this.#headerFill < 4 && at < chunk.length) {
          this.#header[this.#headerFill++] = chunk[at++];
        }
        if (this.#headerFill < 4) break;
        this.#headerFill = 0;
        const header = this.#header;
        this.#remaining = ((header[0] << 24) | (header[1] << 16) | (header[2] << 8) | header[3]) >>>
          0;
        const size = this.#wanted.length + 1;
        this.#kept = this.#remaining === size ? new Uint8Array(size) : undefined;
        this.#keptFill = 0;
        continue;
      }
      const take = Math.min(this.#remaining, chunk.length - at);
      if (this.#kept) {
        this.#kept.set(chunk.subarray(at, at + take), this.#keptFill);
        this.#keptFill += take;
      }
      this.#remaining -= take;
      at += take;
      if (this.#remaining === 0 && this.#kept) {
        if (this.#matches(this.#kept)) found++;
        this.#kept = undefined;
      }
    }
    return found;
  }

  #matches(kept: Uint8Array): boolean {
    if (kept[0] !== TEXT) return false;
    for (let i = 0; i < this.#wanted.length; i++) {
      if (kept[i + 1] !== this.#wanted[i]) return false;
    }
    return true;
  }
}

/** How long an answer may take and still count as prompt (the scheduler's jitter), ms. */
const PROMPT_MS = 10;

/**
 * One container's probe: its channel's two directions watched, its pings outstanding (the
 * node's own too: pongs answer in order), and how long its answers were late since last taken.
 */
export class BusyProbe {
  readonly #toWorker = new FrameWatch(PING);
  readonly #fromWorker = new FrameWatch(PONG);
  /** Outstanding pings in order: when the host sent one, or undefined for the node's. */
  readonly #pending: (number | undefined)[] = [];
  #lateMs = 0;

  /** Reads bytes from the node to the worker. */
  toWorker(chunk: Uint8Array): void {
    for (let n = this.#toWorker.push(chunk); n > 0; n--) this.#pending.push(undefined);
  }

  /** Reads bytes from the worker to the node. */
  fromWorker(chunk: Uint8Array, now = performance.now()): void {
    for (let n = this.#fromWorker.push(chunk); n > 0; n--) {
      const sent = this.#pending.shift();
      if (sent !== undefined) this.#lateMs += Math.max(0, now - sent - PROMPT_MS);
    }
  }

  /**
   * Pings the worker through `post` if the node's bytes to it are at a frame boundary and no
   * ping of the host's is still unanswered; returns whether it did.
   */
  ping(post: (bytes: Uint8Array) => void, now = performance.now()): boolean {
    if (!this.#toWorker.atBoundary() || this.#pending.some((sent) => sent !== undefined)) {
      return false;
    }
    this.#pending.push(now);
    post(PING_FRAME.slice());
    return true;
  }

  /**
   * How late its answers were since the last call, milliseconds beyond PROMPT_MS, the one
   * still unanswered counted up to now (the thread is busy this very moment).
   */
  takeLate(now = performance.now()): number {
    const outstanding = this.#pending.find((sent) => sent !== undefined);
    const waiting = outstanding === undefined ? 0 : Math.max(0, now - outstanding - PROMPT_MS);
    const late = this.#lateMs + waiting;
    this.#lateMs = -waiting;
    return late;
  }
}
