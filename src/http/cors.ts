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
