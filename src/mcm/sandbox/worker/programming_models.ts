/**
 * The two ways a microservice answers requests: the reference's `mimikModule.exports =
 * function (context, req, res)` and, for new code, a default export with `fetch(request, env,
 * context)` returning a Response.
 *
 * @module
 */
import { type FormHandlers, formParts, handleForm } from "./form_request.ts";
import { inRequest } from "./request_scope.ts";

/** A request as the node passes it: path relative to the base path, body read whole. */
export interface Incoming {
  method: string;
  /** Path and query, relative to the base path ("/hello?x=1"). */
  path: string;
  headers: [string, string][];
  body: Uint8Array | null;
  /** Aborts when the request ends early (its client went away, or its time ran out). */
  signal?: AbortSignal;
}

/** What goes back to the node. */
export interface Outgoing {
  status: number;
  headers: [string, string][];
  body: Uint8Array | ReadableStream<Uint8Array> | null;
}

/** A loaded microservice. */
export interface Model {
  kind: "mimik" | "fetch";
  handle(incoming: Incoming): Promise<Outgoing>;
}

type MimikHandler = (context: unknown, req: unknown, res: unknown) => unknown;
type FetchHandler = { fetch(request: Request, env: unknown, context: unknown): unknown };

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function bytesOf(chunk: unknown): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk;
  if (chunk instanceof ArrayBuffer) return new Uint8Array(chunk);
  if (ArrayBuffer.isView(chunk)) {
    return new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  }
  return encoder.encode(typeof chunk === "string" ? chunk : String(chunk));
}

/** Content-Type for a body the microservice did not label: JSON if it looks like JSON. */
function sniffedType(body: Uint8Array): string {
  const first = body.find((b) => b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09);
  return first === 0x7b || first === 0x5b
    ? "application/json; charset=utf-8"
    : "text/plain; charset=utf-8";
}

function validStatus(status: unknown): number {
  const n = Number(status);
  if (!Number.isInteger(n) || n < 200 || n > 599) {
    throw new RangeError(`res.statusCode must be an integer from 200 to 599, not ${status}`);
  }
  return n;
}

/** What the models need besides the bundle. */
export interface ModelSurroundings {
  /** The origin of requests' URLs in the fetch model. */
  origin: string;
  /** A file of the container's storage as a Response (404 when there is none). */
  readFile(name: string): Promise<Response>;
  /** Saves a file in the container's storage, synchronously. */
  saveFile(name: string, bytes: Uint8Array): void;
}

/** The reference model: `req` and `res` objects, the handler ends the response. */
function mimikModel(
  handler: MimikHandler,
  context: unknown,
  { readFile, saveFile }: ModelSurroundings,
): Model {
  return {
    kind: "mimik",
    handle: (incoming) =>
      new Promise<Outgoing>((resolve, reject) => {
        const headers: Record<string, string> = {};
        for (const [name, value] of incoming.headers) {
          const key = name.toLowerCase();
          headers[key] = key in headers ? `${headers[key]}, ${value}` : value;
        }
        const req = {
          url: incoming.path,
          method: incoming.method,
          headers,
          body: incoming.body ? decoder.decode(incoming.body) : "",
          authorization: headers.authorization,
          handleFormRequest(handlers: FormHandlers): void {
            const parts = formParts(
              headers["content-type"] ?? "",
              incoming.body ?? new Uint8Array(),
            );
            handleForm(parts, handlers ?? {}, saveFile);
          },
        };
        const out = new Headers();
        let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
        let started = false;
        let finished = false;
        const begin = (body: Outgoing["body"]) => {
          started = true;
          if (!out.has("content-type") && body instanceof Uint8Array && body.length > 0) {
            out.set("content-type", sniffedType(body));
          }
          resolve({ status: validStatus(res.statusCode), headers: [...out], body });
        };
        const res = {
          statusCode: 200,
          setHeader(name: string, value: unknown): boolean {
            if (started) return false;
            out.set(name, Array.isArray(value) ? value.join(", ") : String(value));
            return true;
          },
          getHeader: (name: string) => out.get(name) ?? undefined,
          removeHeader: (name: string) => out.delete(name),
          writeHead(status: number, fields?: Record<string, unknown>): unknown {
            res.statusCode = status;
            for (const [name, value] of Object.entries(fields ?? {})) res.setHeader(name, value);
            return res;
          },
          write(chunk: unknown): boolean {
            if (finished) return false;
            if (!started) {
              begin(new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) }));
            }
            controller!.enqueue(bytesOf(chunk));
            return true;
          },
          end(chunk?: unknown): void {
            if (finished) return;
            finished = true;
            if (!started) return begin(chunk === undefined ? new Uint8Array(0) : bytesOf(chunk));
            if (chunk !== undefined) controller!.enqueue(bytesOf(chunk));
            controller!.close();
          },
          /** Sends a file of the container's storage (streamed), 404 when there is none. */
          writeMimeFile(path: unknown, mimeType?: unknown): void {
            if (finished || started) return;
            finished = true;
            readFile(String(path)).then((file) => {
              if (file.status === 404) {
                res.statusCode = 404;
                out.set("content-type", "application/json; charset=utf-8");
                return begin(encoder.encode(JSON.stringify({ code: 404, message: "not found" })));
              }
              out.set("content-type", mimeType ? String(mimeType) : "application/octet-stream");
              const length = file.headers.get("content-length");
              if (length) out.set("content-length", length);
              begin(file.body);
            }, reject);
          },
        };
        try {
          inRequest(incoming.signal, () => handler(context, req, res));
        } catch (error) {
          if (started) controller?.error(error);
          reject(error);
        }
      }),
  };
}

/** The modern model: `fetch(request, env, context)` returns a Response. */
function fetchModel(
  target: FetchHandler,
  env: unknown,
  context: unknown,
  origin: string,
): Model {
  return {
    kind: "fetch",
    async handle(incoming) {
      const hasBody = incoming.method !== "GET" && incoming.method !== "HEAD";
      const request = new Request(origin + incoming.path, {
        method: incoming.method,
        headers: incoming.headers,
        body: hasBody ? incoming.body as Uint8Array<ArrayBuffer> | null : null,
        signal: incoming.signal,
      });
      const response = await inRequest(
        incoming.signal,
        () => target.fetch(request, env, context),
      );
      if (!(response instanceof Response)) {
        throw new TypeError("fetch() must return a Response (or a promise of one)");
      }
      return { status: response.status, headers: [...response.headers], body: response.body };
    },
  };
}

/**
 * The model of what a bundle exported: `mimikModule.exports` (a function, or an object with
 * `fetch`), or the default export of an esbuild IIFE bundle (`edgenode image build`).
 */
export function loadModel(
  exported: unknown,
  env: Record<string, string>,
  context: unknown,
  surroundings: ModelSurroundings,
): Model {
  const candidates = [exported, (exported as { default?: unknown } | null)?.default];
  for (const candidate of candidates) {
    if (typeof candidate === "function") {
      return mimikModel(candidate as MimikHandler, context, surroundings);
    }
    if (typeof (candidate as FetchHandler | null)?.fetch === "function") {
      return fetchModel(candidate as FetchHandler, env, context, surroundings.origin);
    }
  }
  throw new TypeError(
    "the bundle must set mimikModule.exports = function (context, req, res) { ... }, or " +
      "export default { fetch(request, env, context) { ... } } (bundled by 'edgenode image build')",
  );
}
