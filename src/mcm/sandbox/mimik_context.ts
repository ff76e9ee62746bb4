/**
 * The `context` a microservice gets (the reference's programming model): env, info, storage and
 * http.request. The same object goes to every request: it holds nothing of one request.
 *
 * @module
 */
import type { Storage } from "./context_services.ts";

/** `context.info`. */
export interface ContextInfo {
  serviceType: string;
  apiRoot: string;
  /** The node's HTTP port, as a string (as the reference's). */
  httpPort: string;
  accountId: string;
  nodeId: string;
}

/** The options of `context.http.request`. */
interface HttpRequestOptions {
  url: string;
  type?: string;
  data?: unknown;
  headers?: Record<string, string>;
  authorization?: string;
  success?: (result: { data: string; status: number; headers: Record<string, string> }) => void;
  error?: (
    error: { message: string; status: number; content?: string; headers?: Record<string, string> },
  ) => void;
}

/** The context object. */
export interface MimikContext {
  env: Record<string, string>;
  info: ContextInfo;
  storage: Storage;
  http: { request(options: HttpRequestOptions): void };
}

/** Runs a callback of the microservice; its exception is logged, not left to kill the worker. */
function callBack<T>(callback: ((value: T) => void) | undefined, value: T): void {
  try {
    callback?.(value);
  } catch (error) {
    console.error("a context.http.request callback threw:", error);
  }
}

/**
 * `context.http.request`: `success` for a response below 400, `error` with `status` and the body
 * in `content` otherwise, and `error` with status 0 when there is no response.
 */
function httpRequest(fetcher: typeof fetch) {
  return (options: HttpRequestOptions): void => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      headers.set(name, String(value));
    }
    if (options.authorization !== undefined) {
      // The reference's old trick of smuggling headers through CR/LF here is refused.
      if (/[\r\n]/.test(options.authorization)) {
        return callBack(options.error, {
          message: "authorization must not contain CR or LF; pass extra headers in 'headers'",
          status: 400,
        });
      }
      headers.set("authorization", options.authorization);
    }
    const data = options.data;
    const body = data === undefined || data === null
      ? undefined
      : typeof data === "string"
      ? data
      : JSON.stringify(data);
    if (body !== undefined && !headers.has("content-type") && typeof data !== "string") {
      headers.set("content-type", "application/json");
    }
    fetcher(options.url, { method: (options.type ?? "GET").toUpperCase(), headers, body })
      .then(async (response) => {
        const content = await response.text();
        const responseHeaders = Object.fromEntries(response.headers);
        if (response.status < 400) {
          callBack(options.success, {
            data: content,
            status: response.status,
            headers: responseHeaders,
          });
        } else {
          callBack(options.error, {
            message: `HTTP ${response.status} ${response.statusText}`.trim(),
            status: response.status,
            content,
            headers: responseHeaders,
          });
        }
      }, (error: Error) => callBack(options.error, { message: error.message, status: 0 }));
  };
}

/** The context of one container. */
export function mimikContext(
  env: Record<string, string>,
  info: ContextInfo,
  storage: Storage,
  fetcher: typeof fetch,
): MimikContext {
  return { env: { ...env }, info: { ...info }, storage, http: { request: httpRequest(fetcher) } };
}
