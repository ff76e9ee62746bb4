/**
 * The one table from domain errors to HTTP: a status per kind, and the headers some kinds carry.
 * A service whose spec answers a kind with another status passes an override when it is mounted
 * (insight answers a wrong API key with 401, as the reference does).
 *
 * @module
 */
import type { DomainError, ErrorKind } from "../errors/mod.ts";

/** The HTTP status of each kind of domain error. */
export const HTTP_STATUS_OF: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unsupported_type: 415,
  range_not_satisfiable: 416,
  unprocessable: 422,
  // nginx's "client closed request": logged, never seen by a caller that is gone.
  cancelled: 499,
  upstream_failed: 502,
  unavailable: 503,
  upstream_timeout: 504,
  no_space: 507,
  no_memory: 507,
  too_many: 429,
};

/** Per-service replacements of the table's statuses. */
export type StatusOverrides = Readonly<Partial<Record<ErrorKind, number>>>;

/** The status and headers that answer `error`. */
export function httpFormOf(
  error: DomainError,
  overrides?: StatusOverrides,
): { status: number; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  const { retryAfterSeconds, size, allow, scheme } = error.details;
  if (retryAfterSeconds !== undefined) headers["Retry-After"] = String(retryAfterSeconds);
  if (size !== undefined && error.kind === "range_not_satisfiable") {
    headers["Content-Range"] = `bytes */${size}`;
    // A script resuming a download reads the size from it.
    headers["Access-Control-Expose-Headers"] = "Content-Range";
  }
  if (allow) headers["Allow"] = allow.join(", ");
  if (error.kind === "unauthenticated") {
    headers["WWW-Authenticate"] = `${scheme ?? "Bearer"} realm="edgenode"`;
  }
  return { status: overrides?.[error.kind] ?? HTTP_STATUS_OF[error.kind], headers };
}
