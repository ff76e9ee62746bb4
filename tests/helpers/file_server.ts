/**
 * A real HTTP file server for download tests, on a free port of 127.0.0.1. Each file can be
 * told to misbehave the way real sources do: answer an error status, ignore Range, send slowly,
 * drop the connection or go silent partway, leave out Content-Length, or announce a size it
 * never sends.
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
  /** How many answers misbehave with statusFirst, dropAfter or stallAfter. */
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
}

/** Starts a file server. */
export function startFileServer(): FileServer {
  const files = new Map<string, { bytes: Uint8Array; behaviour: Behaviour; answered: number }>();
  const requests: SeenRequest[] = [];
  const server: FileServer = {
    url: "",
    requests,
    abandoned: 0,
    serve(path, bytes, behaviour = {}) {
      files.set(path, { bytes, behaviour, answered: 0 });
      return `${server.url}${path}`;
    },
    async [Symbol.asyncDispose]() {
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
    const misbehave = file.answered++ < (behaviour.failures ?? 1);
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
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (misbehave && behaviour.stallAfter !== undefined && sent >= behaviour.stallAfter) {
          return await new Promise(() => {}); // silent until the client gives up
        }
        if (misbehave && behaviour.dropAfter !== undefined && sent >= behaviour.dropAfter) {
          return controller.error(new Error("dropped by the test"));
        }
        if (offset >= bytes.byteLength) return controller.close();
        const limit = misbehave ? (behaviour.dropAfter ?? behaviour.stallAfter) : undefined;
        const size = Math.min(CHUNK, bytes.byteLength - offset, (limit ?? Infinity) - sent);
        if (behaviour.bytesPerSecond) {
          await new Promise((resolve) =>
            setTimeout(resolve, (size / behaviour.bytesPerSecond!) * 1000)
          );
        }
        controller.enqueue(bytes.slice(offset, offset + size));
        offset += size;
        sent += size;
      },
      cancel() {
        server.abandoned++;
      },
    });
    return new Response(body, { status: start > 0 ? 206 : 200, headers });
  });
  server.url = `http://127.0.0.1:${http.addr.port}`;
  return server;
}
