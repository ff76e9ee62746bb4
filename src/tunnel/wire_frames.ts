/**
 * The tunnel's binary frames between a node and its hub (spec/hub.yaml, "Tunnel frames",
 * protocol `edgenode-tunnel.3`). Every frame is `kind (1 byte) | stream (u32) | length (u32) |
 * payload`. Small frames written in one turn of the event loop share one WebSocket message (up to
 * MAX_MESSAGE_BYTES; a microtask flushes them, so frames queued by a later microtask of the same
 * turn may go in a message of their own): under load many requests share one message and one
 * system call, and a small response's head, body and end do not leave as separate small writes
 * (Nagle's algorithm and the peer's delayed ACK once cost 40 ms a request). A frame of
 * LARGE_FRAME_BYTES or more is a message of its own, sent without a copy. A head's payload is
 * `body mode (1 byte) | JSON length (u32) | JSON array | inline body (at most 64 KiB)`. A body
 * piece is a view into the received message, or a copy when it is much smaller than the message
 * (a view would keep the whole message alive); an inline body is a view, copied by the Request or
 * Response made of it. Over the raw transport, which joins a turn's frames in its own writes,
 * frames pass through unjoined.
 *
 * @module
 */
import { concatBytes } from "./bytes.ts";
import { MessageError } from "./messages.ts";
import type { MuxCodec, MuxHead, MuxMessage } from "./mux_codec.ts";
import type { MuxOptions } from "./stream_mux.ts";
import type { TunnelSocket } from "./raw_socket.ts";

/** The WebSocket subprotocol of this framing; a peer without it speaks the JSON messages of 1. */
export const TUNNEL_PROTOCOL = "edgenode-tunnel.3";

/**
 * The tunnel's flow control: 4 MiB unacknowledged per stream and direction, pieces of up to 1 MiB
 * (read straight into their frames). With 512 KiB and 64 KiB pieces, a 256 MiB download took
 * four times as many reads, frames and credits and ran at half the speed; a window of 1 MiB
 * still cost a sixth of the download's speed (456 against 524 MB/s).
 */
export const TUNNEL_WINDOW = { windowBytes: 4 * 1024 * 1024, chunkBytes: 1024 * 1024 };

/** Frame kinds. */
const REQ = 1, RES = 2, DATA = 3, END = 4, CREDIT = 5, ABORT = 6;
/** A head's body: none, all of it inline after the JSON, or in DATA frames to come. */
const NO_BODY = 0, INLINE = 1, FRAMES = 2;
const HEADER = 9;
const MAX_HEADERS = 256;
const MAX_TEXT = 16384;
/** The largest head JSON (far above what an HTTP server takes as a head). */
const MAX_HEAD_JSON = 1024 * 1024;
/** The largest inline body (as StreamMux's INLINE_MAX_BYTES). */
const MAX_INLINE = 64 * 1024;
/** The largest abort reason, in UTF-8 bytes (the spec's limit). */
export const MAX_REASON_BYTES = 1024;
/** Small frames of one turn are joined into messages of about this size at most. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;
/** A frame this large is sent as its own message, not copied into a joined one. */
export const LARGE_FRAME_BYTES = 64 * 1024;
/** A piece less than this fraction of its message is copied out of it. */
const COPY_BELOW_FRACTION = 4;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A tunnelled request as received (the inline body is raw bytes, not base64). */
export interface WireRequest {
  /** Always "req". */
  t: "req";
  /** The stream (≥ 1) the request, its body and its response travel on. */
  s: number;
  /** The HTTP method. */
  method: string;
  /** The path and query, starting with "/". */
  path: string;
  /** The node's port the request is for (the sep info's x-edge-port). */
  port: number;
  /** The request's headers as name-value pairs, in order. */
  headers: [string, string][];
  /** Whether the body follows in DATA frames (ended by END). */
  body: boolean;
  /** The whole body, when it travelled inside the head (at most 64 KiB). */
  inline?: Uint8Array;
}

/** A response head as received. */
export interface WireResponse {
  /** Always "res". */
  t: "res";
  /** The stream of the request this answers. */
  s: number;
  /** The HTTP status, 100-599. */
  status: number;
  /** The response's headers as name-value pairs, in order. */
  headers: [string, string][];
  /** Whether the body follows in DATA frames (ended by END). */
  body: boolean;
  /** The whole body, when it travelled inside the head (at most 64 KiB). */
  inline?: Uint8Array;
}

/** What one side does with the frames it receives. */
export interface FrameSink {
  /** A request head (on a node) or response head (on the hub); absent: heads are refused. */
  head?(head: WireRequest | WireResponse): void;
  /** A piece of the body on `stream`; `bytes` may be a view into the received message. */
  data(stream: number, bytes: Uint8Array): void;
  /** A credit, end or abort frame. */
  control(message: MuxMessage): void;
}

/**
 * `piece` itself, or a copy when it is much smaller than the buffer it is in (which it would
 * keep alive: a WebSocket message, or the raw transport's read buffer).
 */
function keep(piece: Uint8Array, message: Uint8Array): Uint8Array {
  return piece.length * COPY_BELOW_FRACTION < message.buffer.byteLength ? piece.slice() : piece;
}

/** `text` as UTF-8, cut at a character boundary to at most `limit` bytes. */
function utf8Within(text: string, limit: number): Uint8Array {
  const bytes = new Uint8Array(Math.min(limit, text.length * 3));
  return bytes.subarray(0, encoder.encodeInto(text, bytes).written);
}

/** Where heads are encoded before they are copied into their frames (grown as needed). */
let scratch = new Uint8Array(16 * 1024);

/**
 * `text` as UTF-8 in a view of a shared buffer, valid until the next call: one allocation per
 * head fewer than TextEncoder.encode. Text past MAX_HEAD_JSON bytes comes back cut, but longer
 * than MAX_HEAD_JSON still, for the caller to refuse.
 */
function utf8(text: string): Uint8Array {
  const most = Math.min(text.length * 3, MAX_HEAD_JSON + 4);
  if (scratch.length < most) scratch = new Uint8Array(Math.max(most, scratch.length * 2));
  return scratch.subarray(0, encoder.encodeInto(text, scratch).written);
}

function frame(kind: number, stream: number, length: number): Uint8Array {
  const bytes = new Uint8Array(HEADER + length);
  const view = new DataView(bytes.buffer);
  bytes[0] = kind;
  view.setUint32(1, stream);
  view.setUint32(5, length);
  return bytes;
}

/** The binary codec for StreamMux. */
export const binaryCodec: MuxCodec = {
  head(head: MuxHead, inline: Uint8Array | undefined): Uint8Array {
    const fields = head.t === "req"
      ? [head.method, head.path, head.port, head.headers]
      : [head.status, head.headers];
    const json = utf8(JSON.stringify(fields));
    // What the peer would refuse, closing the connection for every stream: this stream fails.
    if (json.length > MAX_HEAD_JSON) throw new MessageError("a head of more than 1 MiB");
    if (inline && inline.length > MAX_INLINE) throw new RangeError("an inline body over 64 KiB");
    const bytes = frame(
      head.t === "req" ? REQ : RES,
      head.s,
      5 + json.length + (inline?.length ?? 0),
    );
    bytes[HEADER] = inline ? INLINE : head.body ? FRAMES : NO_BODY;
    new DataView(bytes.buffer).setUint32(HEADER + 1, json.length);
    bytes.set(json, HEADER + 5);
    if (inline) bytes.set(inline, HEADER + 5 + json.length);
    return bytes;
  },
  data(stream, piece, inPlace) {
    if (inPlace && piece.byteOffset === HEADER) {
      // Read into frameSpace: the header goes in front of it, the bytes stay where they are.
      const bytes = new Uint8Array(piece.buffer, 0, HEADER + piece.length);
      const view = new DataView(bytes.buffer);
      bytes[0] = DATA;
      view.setUint32(1, stream);
      view.setUint32(5, piece.length);
      return bytes;
    }
    const bytes = frame(DATA, stream, piece.length);
    bytes.set(piece, HEADER);
    return bytes;
  },
  frameSpace: (size) => new Uint8Array(HEADER + size).subarray(HEADER),
  control(message) {
    if (message.t === "end") return frame(END, message.s, 0);
    if (message.t === "credit") {
      const bytes = frame(CREDIT, message.s, 4);
      new DataView(bytes.buffer).setUint32(HEADER, message.n);
      return bytes;
    }
    const text = utf8Within(message.message, MAX_REASON_BYTES);
    const bytes = frame(ABORT, message.s, text.length);
    bytes.set(text, HEADER);
    return bytes;
  },
};

/**
 * A tunnel's StreamMux options on either side: binary frames, TUNNEL_WINDOW, and at most 64 MiB
 * received and not yet read over all of a connection's streams (16 full windows; 256 streams
 * would otherwise be 1 GiB). Past it, the stream that brings more is aborted.
 */
export const TUNNEL_SESSION: MuxOptions = {
  codec: binaryCodec,
  ...TUNNEL_WINDOW,
  budgetBytes: 64 * 1024 * 1024,
};

function isHeaderList(value: unknown): value is [string, string][] {
  if (!Array.isArray(value) || value.length > MAX_HEADERS) return false;
  for (const pair of value) {
    if (
      !Array.isArray(pair) || pair.length !== 2 || typeof pair[0] !== "string" ||
      typeof pair[1] !== "string" || pair[0].length > MAX_TEXT || pair[1].length > MAX_TEXT
    ) return false;
  }
  return true;
}

const isInteger = (value: unknown, min: number, max: number): value is number =>
  Number.isInteger(value) && (value as number) >= min && (value as number) <= max;

/** Checked by hand (not valibot): this runs once per tunnelled request on both sides. */
function parseHead(kind: number, stream: number, payload: Uint8Array): WireRequest | WireResponse {
  if (payload.length < 5) throw new MessageError("a truncated head");
  const mode = payload[0];
  const length = new DataView(payload.buffer, payload.byteOffset + 1, 4).getUint32(0);
  if (mode > FRAMES || length > MAX_HEAD_JSON || 5 + length > payload.length) {
    throw new MessageError("a malformed head");
  }
  let fields: unknown;
  try {
    fields = JSON.parse(decoder.decode(payload.subarray(5, 5 + length)));
  } catch {
    throw new MessageError("a head is not JSON");
  }
  if (!Array.isArray(fields)) throw new MessageError("a head is not a JSON array");
  const rest = payload.subarray(5 + length);
  if (mode !== INLINE && rest.length > 0) throw new MessageError("bytes after a head");
  if (rest.length > MAX_INLINE) throw new MessageError("an inline body over 64 KiB");
  // The inline body as a view: the Request or Response made of it copies it at once (as Deno
  // does with any BufferSource body), so it keeps nothing of the message alive.
  const body = {
    body: mode === FRAMES,
    ...(mode === INLINE ? { inline: rest } : {}),
  };
  if (kind === REQ) {
    const [method, path, port, headers] = fields;
    if (
      fields.length !== 4 || typeof method !== "string" || method.length > 16 ||
      typeof path !== "string" || !path.startsWith("/") || path.length > MAX_TEXT ||
      !isInteger(port, 0, 65535) || !isHeaderList(headers)
    ) throw new MessageError("a malformed request head");
    return { t: "req", s: stream, method, path, port, headers, ...body };
  }
  const [status, headers] = fields;
  if (fields.length !== 2 || !isInteger(status, 100, 599) || !isHeaderList(headers)) {
    throw new MessageError("a malformed response head");
  }
  return { t: "res", s: stream, status, headers, ...body };
}

/**
 * Hands the frames of one WebSocket message to `sink`; `heads` is the head kind this side
 * accepts ("req" on a node, "res" on the hub). Throws MessageError on a malformed message.
 */
export function receiveFrames(message: Uint8Array, heads: "req" | "res", sink: FrameSink): void {
  const view = new DataView(message.buffer, message.byteOffset, message.length);
  for (let at = 0; at < message.length;) {
    if (at + HEADER > message.length) throw new MessageError("a truncated frame");
    const kind = message[at];
    const stream = view.getUint32(at + 1);
    const length = view.getUint32(at + 5);
    const end = at + HEADER + length;
    if (end > message.length || stream === 0) throw new MessageError("a malformed frame");
    const payload = message.subarray(at + HEADER, end);
    at = end;
    if (kind === DATA) sink.data(stream, keep(payload, message));
    else if (kind === END && length === 0) sink.control({ t: "end", s: stream });
    else if (kind === CREDIT && length === 4) {
      const n = view.getUint32(end - 4);
      if (n === 0) throw new MessageError("a credit of 0");
      sink.control({ t: "credit", s: stream, n });
    } else if (kind === ABORT && length <= MAX_REASON_BYTES) {
      sink.control({ t: "abort", s: stream, message: decoder.decode(payload) });
    } else if ((kind === REQ && heads === "req") || (kind === RES && heads === "res")) {
      sink.head?.(parseHead(kind, stream, payload));
    } else throw new MessageError(`unexpected frame kind ${kind}`);
  }
}

/**
 * Sends frames over a WebSocket: the small frames of one turn joined into messages of up to
 * MAX_MESSAGE_BYTES, a large frame as a message of its own (see the module's comment). Nothing
 * waits on a timer: queued frames leave at the end of the current turn, or sooner.
 */
export class FrameBatcher {
  readonly #socket: TunnelSocket;
  /** The raw transport joins a turn's frames in its own writes: they pass straight through. */
  readonly #passThrough: boolean;
  #parts: Uint8Array[] = [];
  #size = 0;

  /** `socket`: the tunnel's socket, open or about to be (frames are dropped once closed). */
  constructor(socket: TunnelSocket) {
    this.#socket = socket;
    this.#passThrough = "joinsWrites" in socket && socket.joinsWrites;
  }

  /** Queues one frame, or sends it at once (after the frames queued before it) if large. */
  send = (frame: string | Uint8Array): void => {
    if (typeof frame === "string") throw new TypeError("the tunnel's frames are binary");
    if (this.#passThrough) return this.#write(frame);
    if (frame.length >= LARGE_FRAME_BYTES) {
      this.#flush();
      return this.#write(frame);
    }
    if (this.#parts.length === 0) queueMicrotask(this.#flush);
    this.#parts.push(frame);
    this.#size += frame.length;
    // The peer's largest message is bounded: many streams' frames in one turn go in several.
    if (this.#size >= MAX_MESSAGE_BYTES) this.#flush();
  };

  #flush = (): void => {
    if (this.#parts.length === 0) return;
    const message = concatBytes(this.#parts);
    this.#parts = [];
    this.#size = 0;
    this.#write(message);
  };

  #write(message: Uint8Array): void {
    if (this.#socket.readyState === WebSocket.OPEN) this.#socket.send(message);
  }
}
