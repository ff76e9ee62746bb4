/**
 * The node connection over a plain TCP connection (spec/hub.yaml, "The raw transport"): the same
 * JSON messages and tunnel frames as over the WebSocket, with TCP_NODELAY and without WebSocket
 * framing, masking and per-message operations. Under load each read brings many frames, and a
 * response's frames leave at once instead of waiting for the peer's delayed ACK.
 *
 * The node opens it with one line, `<protocol> <origin>\n` (the origin it would have put in a
 * Host header), then the stream is frames of the tunnel's own layout `kind | stream | length |
 * payload`: kinds 1-6 are the tunnel frames (./wire_frames.ts), 7 a JSON message (what a text
 * WebSocket message carries), 8 a close (`code (u16) | reason`). RawTunnelSocket offers the part
 * of WebSocket's interface the hub session and the hub link use, so the handshake, keepalive and
 * everything after it are the same code over either transport.
 *
 * @module
 */
import { setImmediate } from "node:timers";
import { concatBytes } from "./bytes.ts";

/** A JSON message (a text WebSocket message). */
const TEXT = 7;
/** The connection closes: `code (u16) | reason (UTF-8)`. */
const CLOSE = 8;
const HEADER = 9;
/** Above the largest tunnel frame (a 1 MiB head plus a 64 KiB inline body, or 1 MiB of data). */
export const MAX_RAW_FRAME = 2 * 1024 * 1024;
/** A JSON message's limit (a node's hello with its signed description is a few KiB). */
const MAX_TEXT = 1024 * 1024;
/** Room per read when no large frame is being assembled. */
const READ_BYTES = 256 * 1024;
/** Less free room than this at the end of the buffer: read into a new one. */
const MIN_ROOM = 16 * 1024;
/** Writes queued together are joined into one when their sum stays below this. */
const JOIN_BYTES = 256 * 1024;
/** A write smaller than this waits for the rest of the turn's frames before the next one. */
const COALESCE_BELOW = 64 * 1024;
/** The opening line's limit. */
const MAX_PREFACE = 512;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** What a tunnel socket reports (set with `onSocket`). */
export interface SocketEvents {
  open(): void;
  /** A string (a JSON message), or tunnel frames as an ArrayBuffer or Uint8Array. */
  message(data: unknown): void;
  close(code: number, reason: string): void;
  error(message: string): void;
}

/** The node connection's socket: a WebSocket, or the raw transport. */
export type TunnelSocket = WebSocket | RawTunnelSocket;

/** Hands `socket`'s events to `events`, whichever transport it is. */
export function onSocket(socket: TunnelSocket, events: SocketEvents): void {
  if (socket instanceof RawTunnelSocket) {
    socket.events = events;
    return;
  }
  socket.binaryType = "arraybuffer";
  socket.onopen = () => events.open();
  socket.onmessage = (event) => events.message(event.data);
  socket.onclose = (event) => events.close(event.code, event.reason);
  socket.onerror = (event) => events.error((event as ErrorEvent).message ?? "error");
}

/** A frame header (kind, stream 0, length) with room for `length` bytes after it. */
function frame(kind: number, length: number): Uint8Array {
  const bytes = new Uint8Array(HEADER + length);
  bytes[0] = kind;
  new DataView(bytes.buffer).setUint32(5, length);
  return bytes;
}

/** The node connection over a TCP connection, with WebSocket's readyState values. */
export class RawTunnelSocket {
  /** The tunnel protocol the node declared in its opening line. */
  readonly protocol: string;
  /** Where events go (see onSocket). */
  events: SocketEvents | undefined;
  readyState: number = WebSocket.CONNECTING;
  #conn: Deno.Conn | undefined;
  #queue: Uint8Array[] = [];
  #writing = false;
  /** The code and reason of a close() waiting for the queue to drain. */
  #pendingClose: [number, string] | undefined;

  /** `opened`: the connection, past its opening line, and any bytes read after that line. */
  constructor(protocol: string, opened: Promise<{ conn: Deno.Conn; rest: Uint8Array }>) {
    this.protocol = protocol;
    // Always after this turn: the owner sets `events` first.
    opened.then(({ conn, rest }) => this.#run(conn, rest), (error) => {
      this.events?.error((error as Error).message);
      this.#closed(1006, "");
    });
  }

  /** Opens the node's end: connects, says `protocol` and `origin`, and waits for the hub. */
  static connect(hostname: string, port: number, protocol: string, origin: string) {
    return new RawTunnelSocket(
      protocol,
      (async () => {
        const conn = await Deno.connect({ hostname, port });
        conn.setNoDelay(true);
        await writeAll(conn, encoder.encode(`${protocol} ${origin}\n`));
        return { conn, rest: new Uint8Array(0) };
      })(),
    );
  }

  /** Sends a JSON message (a string) or tunnel frames (bytes); dropped unless open. */
  send(data: string | Uint8Array): void {
    if (this.readyState !== WebSocket.OPEN) return;
    if (typeof data === "string") {
      const text = encoder.encode(data);
      const bytes = frame(TEXT, text.length);
      bytes.set(text, HEADER);
      data = bytes;
    }
    this.#queue.push(data);
    // Started after the frames the rest of this microtask queues (a response's head, body and
    // end), so that they leave in one write: the socket joins frames itself, and a FrameBatcher
    // over it passes them straight through instead of joining them once more.
    if (!this.#writing) {
      this.#writing = true;
      queueMicrotask(this.#drain);
    }
  }

  /** Whether this socket joins the small frames of a turn itself (see FrameBatcher). */
  get joinsWrites(): boolean {
    return true;
  }

  /** Says `code` and `reason` to the peer once the queued frames are out, then closes. */
  close(code = 1000, reason = ""): void {
    if (this.readyState === WebSocket.CLOSED) return;
    if (this.readyState !== WebSocket.OPEN) return this.#closed(code, reason);
    const text = encoder.encode(reason.slice(0, 120));
    const bytes = frame(CLOSE, 2 + text.length);
    new DataView(bytes.buffer).setUint16(HEADER, code);
    bytes.set(text, HEADER + 2);
    this.#queue.push(bytes);
    this.readyState = WebSocket.CLOSING;
    if (!this.#writing) {
      this.#writing = true;
      queueMicrotask(this.#drain);
    }
    // What the peer is told is this side's reason too.
    this.#pendingClose = [code, reason];
  }

  #drain = async (): Promise<void> => {
    this.#writing = true;
    const conn = this.#conn!;
    try {
      while (this.#queue.length > 0) {
        const queue = this.#queue;
        let size = 0;
        let count = 0;
        while (count < queue.length && size + queue[count].length <= JOIN_BYTES) {
          size += queue[count++].length;
        }
        // One system call for many small frames; a large one goes as it is, without a copy.
        const parts = queue.splice(0, Math.max(count, 1));
        const bytes = concatBytes(parts);
        await writeAll(conn, bytes);
        // What is sent in the rest of this turn of the event loop leaves in one write after it:
        // the hub handles its clients' requests one by one, and a write for each (63k system
        // calls a second) was a third of its time; about ten requests now share one, and the
        // first frame of a quiet connection still leaves at once. Not after a large write: a
        // body's next piece would wait (a 256 MiB download ran at 470 instead of 750 MB/s).
        if (queue.length === 0 && bytes.length < COALESCE_BELOW) {
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    } catch (error) {
      this.#fail(error);
    } finally {
      this.#writing = false;
    }
    if (this.#pendingClose && this.readyState === WebSocket.CLOSING) {
      this.#closed(...this.#pendingClose);
    }
  };

  #fail(error: unknown): void {
    if (this.readyState === WebSocket.CLOSED) return;
    this.events?.error((error as Error).message);
    this.#closed(1006, "");
  }

  #closed(code: number, reason: string): void {
    if (this.readyState === WebSocket.CLOSED) return;
    this.readyState = WebSocket.CLOSED;
    this.#queue = [];
    try {
      this.#conn?.close();
    } catch {
      // Closed already.
    }
    this.events?.close(code, reason);
  }

  async #run(conn: Deno.Conn, rest: Uint8Array): Promise<void> {
    this.#conn = conn;
    if (this.readyState === WebSocket.CLOSED) return void conn.close();
    this.readyState = WebSocket.OPEN;
    this.events?.open();
    try {
      await this.#read(conn, rest);
      this.#closed(1006, "");
    } catch (error) {
      this.#fail(error);
    }
  }

  /**
   * Reads frames until the peer closes. The buffer is never written where frames were handed
   * out (body pieces may be views into it): a read goes after them, or into a new buffer sized
   * for the frame being assembled, so a 1 MiB body piece is read in place and never copied.
   */
  async #read(conn: Deno.Conn, rest: Uint8Array): Promise<void> {
    let buf = new Uint8Array(Math.max(READ_BYTES, rest.length));
    buf.set(rest);
    let at = 0;
    let end = rest.length;
    while (this.readyState !== WebSocket.CLOSED) {
      const view = new DataView(buf.buffer);
      let run = at;
      let need = HEADER;
      while (end - at >= HEADER) {
        const length = view.getUint32(at + 5);
        if (length > MAX_RAW_FRAME) throw new Error(`a frame of ${length} bytes`);
        need = HEADER + length;
        if (end - at < need) break;
        const kind = buf[at];
        if (kind === TEXT || kind === CLOSE) {
          if (run < at) this.events?.message(buf.subarray(run, at));
          const payload = buf.subarray(at + HEADER, at + need);
          if (kind === CLOSE) {
            const code = length >= 2 ? view.getUint16(at + HEADER) : 1005;
            return this.#closed(code, decoder.decode(payload.subarray(2)));
          }
          if (length > MAX_TEXT) throw new Error("a JSON message over 1 MiB");
          this.events?.message(decoder.decode(payload));
          run = at + need;
        }
        at += need;
        need = HEADER;
        if (this.readyState === WebSocket.CLOSED) return;
      }
      if (run < at) this.events?.message(buf.subarray(run, at));
      if (buf.length - at < need || buf.length - end < MIN_ROOM) {
        const next = new Uint8Array(Math.max(READ_BYTES, need));
        next.set(buf.subarray(at, end));
        end -= at;
        at = 0;
        buf = next;
      }
      const n = await conn.read(buf.subarray(end));
      if (n === null) return;
      end += n;
    }
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let offset = 0; offset < bytes.length;) {
    offset += await conn.write(bytes.subarray(offset));
  }
}

/** A raw connection's opening line, read by the hub. */
export interface RawPreface {
  protocol: string;
  /** The hub origin the node connected to (as a Host header would say it). */
  origin: string;
  /** Bytes read after the line. */
  rest: Uint8Array;
}

/**
 * Reads the opening line of a connection to the hub's raw port within `timeoutMs`; undefined
 * for anything that is not an edgenode node (the connection is then closed without a word).
 */
export async function readPreface(
  conn: Deno.Conn,
  timeoutMs: number,
): Promise<RawPreface | undefined> {
  const buf = new Uint8Array(MAX_PREFACE);
  let end = 0;
  const timer = setTimeout(() => conn.close(), timeoutMs);
  try {
    while (end < buf.length) {
      const n = await conn.read(buf.subarray(end));
      if (n === null) return undefined;
      end += n;
      const newline = buf.subarray(0, end).indexOf(10);
      if (newline < 0) continue;
      const line = decoder.decode(buf.subarray(0, newline));
      const match = /^(edgenode-tunnel\.\d{1,4}) (https?:\/\/[^\s/?#]{1,255})$/.exec(line);
      if (!match) return undefined;
      return { protocol: match[1], origin: match[2], rest: buf.slice(newline + 1, end) };
    }
    return undefined;
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}
