/**
 * The container channel's mux messages (spec/mcm.yaml; src/tunnel/mux_codec.ts's jsonCodec)
 * written on intrinsics (intrinsics.ts): a response's head, its body's frames and the mux's
 * control messages are made after the microservice's code loaded, which may have replaced
 * `JSON.stringify`, `Uint8Array.prototype.toBase64` or typed arrays' methods; the node would
 * read what those made as a broken channel.
 *
 * @module
 */
import type { MuxCodec } from "../../../tunnel/mux_codec.ts";
import {
  JSONStringify,
  SafeUint8Array,
  TypedArrayPrototypeGetLength,
  TypedArrayPrototypeSet,
  uncurry,
} from "./intrinsics.ts";

const toBase64 = uncurry(
  (Uint8Array.prototype as Uint8Array & { toBase64(): string }).toBase64,
) as (bytes: Uint8Array) => string;

/** A binary frame: the stream as 4 bytes, big-endian, then the bytes (mux_codec.ts). */
function dataFrame(stream: number, bytes: Uint8Array): Uint8Array {
  const frame = new SafeUint8Array(4 + TypedArrayPrototypeGetLength(bytes));
  frame[0] = stream >>> 24;
  frame[1] = (stream >>> 16) & 0xff;
  frame[2] = (stream >>> 8) & 0xff;
  frame[3] = stream & 0xff;
  TypedArrayPrototypeSet(frame, bytes, 4);
  return frame;
}

/** jsonCodec's messages, on intrinsics. */
export const channelCodec: MuxCodec = {
  head: (head, inline) =>
    JSONStringify(inline ? { ...head, body: false, inline: toBase64(inline) } : head),
  data: dataFrame,
  control: (message) => JSONStringify(message),
};
