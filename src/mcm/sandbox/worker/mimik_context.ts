/**
 * The `context` a microservice gets (the reference's programming model): env, info, storage,
 * http.request, edge and ml (the node's inference, as on the reference's AI-enabled engines:
 * ml_context.ts). The same object goes to every request: it holds nothing of one request; the
 * callbacks of its calls run as part of the request that made them (request_scope.ts).
 *
 * @module
 */
import type { ContextInfo } from "../channel_protocol.ts";
import type { RelayedFetch, Storage } from "./context_services.ts";
import { meshAddress, meshRequest } from "./mesh_fetch.ts";
import { type MlContext, mlContext } from "./ml_context.ts";
import type { NodeCallError, NodeCalls } from "./node_calls.ts";
import { callBack, requestSignal } from "./request_scope.ts";

type HeaderMap = Record<string, string>;

/** What `success` gets; `done` only in stream mode. */
interface HttpResult {
  data: string;
  status: number;
  headers: HeaderMap;
  done?: boolean;
}

/** What `error` gets: `status` 0 when there is no response. */
interface HttpFailure {
  message: string;
  status: number;
  content?: string;
  headers?: HeaderMap;
}

/** The options of `context.http.request`. */
interface HttpRequestOptions {
  url: string;
  type?: string;
  data?: unknown;
  headers?: HeaderMap;
  authorization?: string;
  /** "stream": `success` per chunk with `done: false`, then once with `done: true`. */
  mode?: string;
  /** Save the body to this file of the container's storage (never held in memory). */
  outputFile?: string;
  /** Milliseconds until the response's head must have come. */
  connectionTimeout?: number;
  /** Milliseconds the response may go without data. */
  socketTimeout?: number;
  success?: (result: HttpResult) => void;
  error?: (error: HttpFailure) => void;
}

type Callbacks<T> = { success?: (value: T) => void; error?: (error: HttpFailure) => void };

/** The context object. */
export interface MimikContext {
  env: Record<string, string>;
  info: ContextInfo;
  storage: Storage;
  http: { request(options: HttpRequestOptions): void };
  edge: Record<string, unknown>;
  ml: MlContext;
  dispatchWebSocketEvent(event?: unknown): boolean;
}

function positive(value: unknown): number | undefined {
  const n = Number(value);
  return value !== undefined && Number.isFinite(n) && n > 0 ? n : undefined;
}

/** The request `options` describe, or the message of what is wrong with them. */
function requestOf(options: HttpRequestOptions): { url: string; init: RequestInit } | string {
  const headers = new Headers();
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    headers.set(name, String(value));
  }
  if (options.authorization !== undefined) {
    // The reference's old trick of smuggling headers through CR/LF here is refused, as the
    // reference's newer engines do.
    if (/[\r\n]/.test(options.authorization)) {
      return "authorization must not contain CR or LF; pass extra headers in 'headers'";
    }
    headers.set("authorization", options.authorization);
  }
  const data = options.data;
  const body = data === undefined || data === null
    ? undefined
    : typeof data === "string"
    ? data
    : JSON.stringify(data);
  // The reference sends data as JSON unless told otherwise, strings included.
  if (body !== undefined && !headers.has("content-type")) {
    headers.set("content-type", "application/json");
  }
  // Reference microservices write URLs without a scheme ("127.0.0.1:8083/mcm/v1").
  const raw = String(options.url ?? "");
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  const init = { method: (options.type ?? "GET").toUpperCase(), headers, body };
  try {
    // Checked as fetch checks it; a `<nodeId>@mmesh/` URL by its path (mesh_fetch.ts).
    const mesh = meshAddress(raw);
    if (mesh) meshRequest(mesh, init);
    else new Request(url, init);
    return mesh ? { url: raw, init } : { url, init };
  } catch (error) {
    return (error as Error).message;
  }
}

/** Hands the body to `success` chunk by chunk (`done: false`), then `done: true`. */
async function streamTo(
  options: HttpRequestOptions,
  response: Response,
  headers: HeaderMap,
  signal: AbortSignal | undefined,
) {
  const decoder = new TextDecoder();
  const status = response.status;
  for await (const chunk of response.body ?? []) {
    const data = decoder.decode(chunk, { stream: true });
    if (data) callBack(options.success, { data, status, headers, done: false }, signal);
  }
  callBack(options.success, { data: decoder.decode(), status, headers, done: true }, signal);
}

/**
 * `context.http.request`: `success` for a response below 400, `error` with `status` and the body
 * in `content` otherwise, and `error` with status 0 when there is no response.
 */
function httpRequest(fetcher: RelayedFetch) {
  return (options: HttpRequestOptions): void => {
    const signal = requestSignal();
    const request = requestOf(options);
    if (typeof request === "string") {
      return callBack(options.error, { message: request, status: 400 });
    }
    const saveTo = options.outputFile === undefined ? undefined : String(options.outputFile);
    fetcher(request.url, request.init, {
      saveTo,
      connectMs: positive(options.connectionTimeout),
      idleMs: positive(options.socketTimeout),
    }).then(async (response) => {
      const headers = Object.fromEntries(response.headers);
      const status = response.status;
      if (status >= 400) {
        const content = await response.text();
        const message = `HTTP ${status} ${response.statusText}`.trim();
        return callBack(options.error, { message, status, content, headers }, signal);
      }
      if (options.mode === "stream") return await streamTo(options, response, headers, signal);
      // With outputFile the body went to the file: its end says it is complete.
      const data = await response.text();
      const result = { data: saveTo === undefined ? data : "", status, headers };
      callBack(options.success, result, signal);
    }).catch((error: Error) =>
      callBack(options.error, { message: error.message, status: 0 }, signal)
    );
  };
}

/** A node call answered through a callback pair, as the reference's `context.edge` does. */
function answered<T>(
  work: Promise<unknown>,
  callbacks: Callbacks<{ data: T }>,
): void {
  const signal = requestSignal();
  work.then(
    (value) => callBack(callbacks.success, { data: value as T }, signal),
    (error: NodeCallError) =>
      callBack(callbacks.error, { message: error.message, status: error.status ?? 500 }, signal),
  );
}

/**
 * `context.edge`: a plain object (helper libraries `Object.assign` their own functions onto it)
 * with the reference's decryption of node listings and BEP request.
 */
function edgeOf(calls: NodeCalls): Record<string, unknown> {
  return {
    decryptEncryptedNodesJson(
      options: { type?: string; data?: unknown; token?: unknown } & Callbacks<{ data: string }>,
    ) {
      answered(
        calls.call({
          op: "decrypt",
          type: String(options?.type ?? "local"),
          data: String(options?.data ?? ""),
          token: String(options?.token ?? ""),
        }),
        options ?? {},
      );
    },
    requestBep(options: { code?: unknown } & Callbacks<{ data: string }>) {
      answered(calls.call({ op: "bep" }), options ?? {});
    },
  };
}

/** The context of one container. */
export function mimikContext(
  env: Record<string, string>,
  info: ContextInfo,
  storage: Storage,
  fetcher: RelayedFetch,
  calls: NodeCalls,
): MimikContext {
  return {
    env: { ...env },
    info: { ...info },
    storage,
    http: { request: httpRequest(fetcher) },
    edge: edgeOf(calls),
    ml: mlContext(calls),
    // MCM.WEBSOCKET_SUPPORT is "false": events have nowhere to go.
    dispatchWebSocketEvent: () => false,
  };
}
