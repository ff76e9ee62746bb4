/**
 * The CORS headers of node and hub: any origin may call the API (it is guarded by keys and
 * tokens, never by cookies). Browsers read the Allow-* headers only from the preflight answer,
 * and a script may read a response header beyond the safelisted ones only when
 * Access-Control-Expose-Headers names it, which matters only for file answers (ranges, ETags).
 *
 * @module
 */

/** What every answer carries. */
export const CORS_ORIGIN = { "Access-Control-Allow-Origin": "*" } as const;

/** Marks an answer made with CORS_ORIGIN among its headers (see `carriesCors`). */
const CORS_MADE = Symbol("made with CORS_ORIGIN");

/**
 * Marks `response` as made with CORS_ORIGIN among its headers, so the pipeline need not read its
 * headers to know (reading a Response's headers makes Deno build them as an object and leave its
 * fast path for that answer).
 */
export function withCors<R extends Response>(response: R): R {
  (response as unknown as Record<symbol, boolean>)[CORS_MADE] = true;
  return response;
}

const CORS_ORIGIN_NAME = "access-control-allow-origin";

/**
 * Marks `response` (made of the header list `pairs`) as carrying CORS when a pair names
 * Access-Control-Allow-Origin: what the pipeline would learn by asking its headers, which makes
 * Deno build them as an object and drop the native copy it prepared for serving them.
 */
export function markCorsListed(
  response: Response,
  pairs: readonly (readonly string[])[],
): void {
  for (const [name] of pairs) {
    if (name.length === CORS_ORIGIN_NAME.length && name.toLowerCase() === CORS_ORIGIN_NAME) {
      withCors(response);
      return;
    }
  }
}

/** Whether `withCors` marked the response. */
export function carriesCors(response: Response): boolean {
  return (response as unknown as Record<symbol, boolean | undefined>)[CORS_MADE] === true;
}

/** What a file answer carries besides: the headers a script needs to resume or validate. */
export const CORS_FILE_HEADERS = {
  ...CORS_ORIGIN,
  "Access-Control-Expose-Headers": "Content-Range, Content-Disposition, ETag, Accept-Ranges",
} as const;

/** The answer to a preflight, with any headers a service adds to the allowed ones. */
export function preflightHeaders(allowHeaders: readonly string[]): Record<string, string> {
  return {
    ...CORS_ORIGIN,
    "Access-Control-Allow-Methods": "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS",
    "Access-Control-Allow-Headers": [
      // Safelisted only with a short value of safe bytes; a client that sends a longer one (a
      // list of types with parameters) would otherwise be refused by the browser.
      "Accept",
      "Authorization",
      "Content-Type",
      "Range",
      "If-None-Match",
      "If-Range",
      // mcm's deployments name their client with it (spec/mcm.yaml).
      "X-Client-Id",
      ...allowHeaders,
    ].join(", "),
    "Access-Control-Max-Age": "600",
  };
}
