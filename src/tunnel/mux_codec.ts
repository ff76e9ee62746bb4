/**
 * How a StreamMux writes its messages. The container channel uses the JSON messages of
 * spec/mcm.yaml (`jsonCodec`); the hub's node connection uses binary frames
 * (./wire_frames.ts). This module runs inside container processes too: it imports nothing.
 *
 * @module
 */

/** The control messages the mux itself sends and handles. */
export type MuxMessage =
  | { t: "credit"; s: number; n: number }
  | { t: "end"; s: number }
  | { t: "abort"; s: number; message: string };

/** A request or response head: `t` is "req" or "res", `s` the stream. */
export type MuxHead = { t: string; s: number; body: boolean } & Record<string, unknown>;

/** Turns the mux's messages into frames for its `send`. */
export interface MuxCodec {
  /** A head; `inline` is the whole body when it travels inside the head. */
  head(head: MuxHead, inline: Uint8Array | undefined): string | Uint8Array;
  /**
   * A piece of the body on `stream`. `inPlace`: `bytes` was read into `frameSpace` and is all
   * of it, so the frame is built around it.
   */
  data(stream: number, bytes: Uint8Array, inPlace?: boolean): string | Uint8Array;
  /** Room for a piece of `size` bytes inside a new frame, for reading straight into it. */
  frameSpace?(size: number): Uint8Array;
  control(message: MuxMessage): string | Uint8Array;
}

/** A binary frame: 4-byte big-endian stream id, then the bytes. */
export function dataFrame(stream: number, bytes: Uint8Array): Uint8Array {
  const frame = new Uint8Array(4 + bytes.length);
  new DataView(frame.buffer).setUint32(0, stream);
  frame.set(bytes, 4);
  return frame;
}

/** JSON text messages, an inline body in base64; body pieces as `dataFrame`s. */
export const jsonCodec: MuxCodec = {
  head: (head, inline) =>
    JSON.stringify(inline ? { ...head, body: false, inline: inline.toBase64() } : head),
  data: dataFrame,
  control: (message) => JSON.stringify(message),
};
