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
  /**
   * A new container: start its sandboxed worker; its bytes come on `slot`, or, with `token`,
   * over the worker's own connection to the process's socket, which it opens with the token
   * (src/mcm/runtime/channel_socket.ts).
   */
  | { t: "open"; slot: number; token?: string }
  /** The node closed the container's channel (its stdin ended). */
  | { t: "close"; slot: number }
  /** End the container at once. */
  | { t: "kill"; slot: number };

/** A container in the process ended. */
export interface GroupEnded {
  t: "ended";
  slot: number;
  /** The exit code the container would have had as a process of its own (watchdog.ts). */
  code: number;
  /** Why, in a user's words (absent for a plain end). */
  why?: string;
}

/**
 * One container's figures in a usage event: its slot, its memory (heap and external, bytes, as
 * its process measures it), its CPU time charged so far in this process (microseconds, only
 * grows) and its outbound requests in flight.
 */
export type UsageRow = [slot: number, memoryBytes: number, cpuMicros: number, outbound: number];

/**
 * The figures of every container in the process (about every 500 ms): what the node blames a
 * process's death on (tenant_process.ts) and shows in a container's record.
 */
export interface GroupUsage {
  t: "usage";
  usage: UsageRow[];
}

/** The process's messages to the node. */
export type GroupEvent = GroupEnded | GroupUsage;

/** The most rows one usage event may carry (far more containers than a process hosts). */
const MAX_USAGE_ROWS = 4096;

const count = (value: unknown) => typeof value === "number" && Number.isFinite(value) && value >= 0;

/**
 * A control frame from the process, checked: GroupFrameError when it breaks the format (not an
 * object, a known event with a field of the wrong kind). Fields this node does not know are
 * ignored, and so is an event type it does not know (undefined): a newer process may say more.
 */
export function parseGroupEvent(payload: Uint8Array): GroupEvent | undefined {
  let event;
  try {
    event = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new GroupFrameError("a control frame that is not JSON");
  }
  if (typeof event !== "object" || event === null || typeof event.t !== "string") {
    throw new GroupFrameError("a control frame without a type");
  }
  if (event.t === "ended") {
    if (!Number.isInteger(event.slot) || !Number.isInteger(event.code)) {
      throw new GroupFrameError("an `ended` event without its slot or code");
    }
    const why = typeof event.why === "string" ? { why: event.why } : {};
    return { t: "ended", slot: event.slot, code: event.code, ...why };
  }
  if (event.t === "usage") {
    const rows = event.usage;
    const fine = Array.isArray(rows) && rows.length <= MAX_USAGE_ROWS &&
      rows.every((row: unknown) =>
        Array.isArray(row) && row.length >= 4 && Number.isInteger(row[0]) &&
        count(row[1]) && count(row[2]) && count(row[3])
      );
    if (!fine) throw new GroupFrameError("a `usage` event with a malformed row");
    return {
      t: "usage",
      usage: rows.map((row: number[]) => [row[0], row[1], row[2], row[3]] as UsageRow),
    };
  }
  return undefined;
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
