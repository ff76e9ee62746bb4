/**
 * A real HTTP file server for download tests, on a free port of 127.0.0.1. Each file can be
 * told to misbehave the way real sources do: answer an error status, ignore Range, send slowly,
 * drop the connection or go silent partway (on the first answer or on resumed ones), trickle a
 * byte at a time, leave out Content-Length, or announce a size it never sends.
 *
 * @module
 */

/** How a served file behaves. */
export interface Behaviour {
  /** Answer this status with a short text body instead of the file. */
  status?: number;
  /** The first `failures` answers (default 1) are this status instead of the file. */
  statusFirst?: number;
  /** Answer 302 to this path instead of the file. */
  redirectTo?: string;
  /** Honour `Range: bytes=N-` (default true). */
  ranges?: boolean;
  /** Send at about this rate (bytes per second); full speed when absent. */
  bytesPerSecond?: number;
  /** The first `failures` answers (default 1) break the connection after this many bytes. */
  dropAfter?: number;
  /** The first `failures` answers (default 1) go silent after this many bytes. */
  stallAfter?: number;
  /**
   * Answer `i` (0-based, resumed requests included) goes silent after `stalls[i]` bytes; the
   * answers after the list behave. Independent of `failures`.
   */
  stalls?: number[];
  /**
   * The first `failures` answers (default 1) send this many bytes at full speed, then one byte
   * at a time at `trickleBytesPerSecond` (default 1).
   */
  trickleAfter?: number;
  trickleBytesPerSecond?: number;
  /** How many answers misbehave with statusFirst, dropAfter, stallAfter or trickleAfter. */
  failures?: number;
  /** Leave out Content-Length (chunked transfer). */
  noLength?: boolean;
  /** Announce this Content-Length, whatever the file's size. */
  announce?: number;
}

/** A request the server saw. */
export interface SeenRequest {
  path: string;
  range: string | null;
  ifRange: string | null;
}

const CHUNK = 64 * 1024;

/** The running server. */
export interface FileServer extends AsyncDisposable {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Serves `bytes` at `path` (e.g. "/model.gguf"); returns the full URL. */
  serve(path: string, bytes: Uint8Array, behaviour?: Behaviour): string;
  /** Every request so far, oldest first. */
  requests: SeenRequest[];
  /** Answers whose body the client stopped reading before the end. */
  abandoned: number;
  /** Answers whose body is being sent now (neither finished, failed nor abandoned). */
  open: number;
}

/** Starts a file server. */
export function startFileServer(): FileServer {
  const files = new Map<string, { bytes: Uint8Array; behaviour: Behaviour; answered: number }>();
  const requests: SeenRequest[] = [];
  // Bodies being sent, ended at dispose: a client that never closes a silent answer must not
  // keep the server's shutdown waiting forever.
  const sending = new Set<ReadableStreamDefaultController<Uint8Array>>();
  const server: FileServer = {
    url: "",
    requests,
    abandoned: 0,
    open: 0,
    serve(path, bytes, behaviour = {}) {
      files.set(path, { bytes, behaviour, answered: 0 });
      return `${server.url}${path}`;
    },
    async [Symbol.asyncDispose]() {
      for (const body of sending) body.error(new Error("the file server stopped"));
      sending.clear();
      await http.shutdown();
    },
  };
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const path = new URL(request.url).pathname;
    requests.push({
      path,
      range: request.headers.get("range"),
      ifRange: request.headers.get("if-range"),
    });
    const file = files.get(path);
    if (!file) return new Response("no such file", { status: 404 });
    const { bytes, behaviour } = file;
    if (behaviour.status) return new Response(`status ${behaviour.status}`, behaviour);
    if (behaviour.redirectTo) {
      return new Response(null, { status: 302, headers: { location: behaviour.redirectTo } });
    }
    const answer = file.answered++;
    const misbehave = answer < (behaviour.failures ?? 1);
    const stallAt = behaviour.stalls?.[answer] ??
      (misbehave ? behaviour.stallAfter : undefined);
    const trickleAt = misbehave ? behaviour.trickleAfter : undefined;
    if (misbehave && behaviour.statusFirst) {
      return new Response(`status ${behaviour.statusFirst}`, { status: behaviour.statusFirst });
    }
    const etag = `"${bytes.byteLength}-${bytes[bytes.byteLength - 1]}"`;
    const range = /^bytes=(\d+)-$/.exec(request.headers.get("range") ?? "");
    const start = range && behaviour.ranges !== false ? Number(range[1]) : 0;
    if (start > bytes.byteLength) {
      return new Response(null, {
        status: 416,
        headers: { "content-range": `bytes */${bytes.byteLength}` },
      });
    }
    const headers: Record<string, string> = { etag, "content-type": "application/octet-stream" };
    if (behaviour.ranges !== false) headers["accept-ranges"] = "bytes";
    if (!behaviour.noLength) {
      headers["content-length"] = String(behaviour.announce ?? bytes.byteLength - start);
    }
    if (start > 0) {
      headers["content-range"] = `bytes ${start}-${bytes.byteLength - 1}/${bytes.byteLength}`;
    }
    let offset = start;
    let sent = 0;
    let ended = false;
    let sender: ReadableStreamDefaultController<Uint8Array> | undefined;
    const end = () => {
      if (!ended) server.open--;
      ended = true;
      if (sender) sending.delete(sender);
    };
    server.open++;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        sender = controller;
        sending.add(controller);
      },
      async pull(controller) {
        if (stallAt !== undefined && sent >= stallAt) {
          return await new Promise(() => {}); // silent until the client gives up
        }
        if (misbehave && behaviour.dropAfter !== undefined && sent >= behaviour.dropAfter) {
          end();
          return controller.error(new Error("dropped by the test"));
        }
        if (offset >= bytes.byteLength) {
          end();
          return controller.close();
        }
        const limit = Math.min(
          (misbehave ? behaviour.dropAfter : undefined) ?? Infinity,
          stallAt ?? Infinity,
        );
        let size = Math.min(CHUNK, bytes.byteLength - offset, limit - sent);
        if (trickleAt !== undefined && sent >= trickleAt) {
          size = 1;
          const rate = behaviour.trickleBytesPerSecond ?? 1;
          await new Promise((resolve) => setTimeout(resolve, 1000 / rate));
        } else if (trickleAt !== undefined) {
          size = Math.min(size, trickleAt - sent);
        }
        if (behaviour.bytesPerSecond) {
          await new Promise((resolve) =>
            setTimeout(resolve, (size / behaviour.bytesPerSecond!) * 1000)
          );
        }
        if (ended) return;
        controller.enqueue(bytes.slice(offset, offset + size));
        offset += size;
        sent += size;
      },
      cancel() {
        end();
        server.abandoned++;
      },
    });
    return new Response(body, { status: start > 0 ? 206 : 200, headers });
  });
  server.url = `http://127.0.0.1:${http.addr.port}`;
  return server;
}
