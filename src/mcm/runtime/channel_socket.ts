/**
 * The unix socket of one client's container process (mcm.containerProcess `per-client`,
 * tenant_process.ts): each container's sandboxed worker connects to it and then speaks its
 * channel with the node directly, as a worker with a process of its own speaks over stdin and
 * stdout, instead of through its process's main thread (one crossing less each way, and no
 * relaying per request on that thread).
 *
 * The node listens at a fresh path per process under the node's `channels` folder (0700); the
 * process may reach that path only (its flags, and each of its workers' permissions: read, write
 * and `unix:` net access to that one path). A worker proves which container it is by writing the
 * token the node gave that container in its `open` (TOKEN_BYTES random bytes, hex; the process's
 * main thread hands it on), once: a connection with another token, or silent for
 * HANDSHAKE_MS, is closed; a token connects once. What comes after the token is the channel,
 * read and checked by the node as any container's (container_channel.ts).
 *
 * @module
 */
import { join } from "node:path";
import { isExecutable } from "../../program/self_program.ts";
import type { ContainerPipe } from "./container_process.ts";

/** Random bytes of a connection's token (sent as twice as many hex characters). */
export const TOKEN_BYTES = 16;
/** How long a connection may take to send its token. */
const HANDSHAKE_MS = 10_000;
/** Connections still sending their token at once; more are closed at once. */
const MAX_HANDSHAKES = 64;
/** The longest path a unix socket may have here (Linux's sun_path, less its final NUL). */
const MAX_SOCKET_PATH = 107;

const hex = (bytes: Uint8Array) =>
  Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

/** A connection the node waits for: its token, and the connection once it came. */
export interface ExpectedConnection {
  token: string;
  /** The worker's connection; undefined if it never came (the socket closed, or cancel). */
  conn: Promise<Deno.Conn | undefined>;
  /** Stops waiting (the container ended); a connection that came already is closed. */
  cancel(): void;
}

/** A client process's socket, listening. */
export class ChannelSocket {
  /** Where it listens. */
  readonly path: string;
  readonly #listener: Deno.Listener<Deno.UnixConn, Deno.UnixAddr>;
  readonly #waiting = new Map<string, (conn: Deno.Conn | undefined) => void>();
  #handshakes = 0;
  #closed = false;

  private constructor(path: string, listener: Deno.Listener<Deno.UnixConn, Deno.UnixAddr>) {
    this.path = path;
    this.#listener = listener;
    this.#accept();
  }

  /**
   * Listens at a fresh path under `dir`; undefined where it cannot (the path would be too long
   * for a unix socket, or the node may not listen there: a node whose network access is
   * narrowed), and in the single executable, whose client process runs narrowed workers
   * (sandbox/host/container_workers.ts): the process's main thread then relays.
   */
  static open(dir: string): ChannelSocket | undefined {
    if (isExecutable()) return undefined;
    const path = join(dir, `${hex(crypto.getRandomValues(new Uint8Array(8)))}.sock`);
    if (new TextEncoder().encode(path).length > MAX_SOCKET_PATH) return undefined;
    try {
      return new ChannelSocket(path, Deno.listen({ transport: "unix", path }));
    } catch {
      return undefined;
    }
  }

  /** Waits for the connection of a new token. */
  expect(): ExpectedConnection {
    const token = hex(crypto.getRandomValues(new Uint8Array(TOKEN_BYTES)));
    const { promise, resolve } = Promise.withResolvers<Deno.Conn | undefined>();
    let settled = false;
    const settle = (conn: Deno.Conn | undefined) => {
      this.#waiting.delete(token);
      if (settled) return void conn?.close();
      settled = true;
      resolve(conn);
    };
    if (this.#closed) settle(undefined);
    else this.#waiting.set(token, settle);
    return {
      token,
      conn: promise,
      cancel: () => {
        settle(undefined);
        promise.then((conn) => {
          try {
            conn?.close();
          } catch {
            // Closed already.
          }
        });
      },
    };
  }

  /** Stops listening and removes the path; connections not come yet resolve undefined. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#listener.close();
    } catch {
      // Closed already.
    }
    Deno.remove(this.path).catch(() => {});
    for (const settle of [...this.#waiting.values()]) settle(undefined);
  }

  async #accept(): Promise<void> {
    try {
      for await (const conn of this.#listener) {
        if (this.#handshakes >= MAX_HANDSHAKES) {
          conn.close();
          continue;
        }
        this.#handshakes++;
        this.#handshake(conn).finally(() => this.#handshakes--);
      }
    } catch {
      // The listener closed.
    }
  }

  /** Reads the token of `conn` and hands it to whoever waits for it; else closes it. */
  async #handshake(conn: Deno.Conn): Promise<void> {
    const token = new Uint8Array(TOKEN_BYTES * 2);
    const timer = setTimeout(() => conn.close(), HANDSHAKE_MS);
    try {
      let filled = 0;
      while (filled < token.length) {
        const read = await conn.read(token.subarray(filled));
        if (read === null) throw new Error("closed before its token");
        filled += read;
      }
      clearTimeout(timer);
      const settle = this.#waiting.get(new TextDecoder().decode(token));
      if (!settle) throw new Error("an unknown token");
      settle(conn);
    } catch {
      clearTimeout(timer);
      try {
        conn.close();
      } catch {
        // Closed by the timer.
      }
    }
  }
}

/** Bytes read from a worker's connection at once, at most. */
const DIRECT_READ_BYTES = 32 * 1024;

/**
 * A slot's channel over its worker's own connection (channel_socket.ts), without streams: bytes
 * written before it came wait for it; a slot whose worker never connects reads as ended. Its
 * stdin only closes (`close` tells the process: the worker hears it from its main thread, as
 * without a connection); its stdout is empty.
 */
export function directPipe(
  direct: ExpectedConnection,
  close: () => void,
): Pick<ContainerPipe, "stdin" | "stdout" | "direct"> {
  return {
    stdin: new WritableStream<Uint8Array>({ close, abort: close }),
    stdout: new ReadableStream<Uint8Array>({ start: (controller) => controller.close() }),
    direct: {
      write: async (bytes) => {
        const conn = await direct.conn;
        try {
          for (let at = 0; conn && at < bytes.length;) at += await conn.write(bytes.subarray(at));
        } catch {
          // The worker is gone: its end finishes the slot.
        }
      },
      read: async (onChunk) => {
        const conn = await direct.conn;
        // Each chunk its own copy: the channel's decoder (src/tunnel/pipe_frames.ts) may keep it.
        const buffer = new Uint8Array(DIRECT_READ_BYTES);
        try {
          for (let read = await conn?.read(buffer); read; read = await conn!.read(buffer)) {
            onChunk(buffer.slice(0, read));
          }
        } catch {
          // Closed: the slot ended.
        }
      },
    },
  };
}
