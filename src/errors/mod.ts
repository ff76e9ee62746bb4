/**
 * The errors of the domain: what went wrong, in words of the model store, the mesh and the
 * runtime, never in HTTP statuses. The edges map them: `src/http/error_statuses.ts` to HTTP
 * statuses, `src/jsonrpc/error_codes.ts` to JSON-RPC codes. A message always says what the caller
 * can do about it, because it reaches the caller as it is; what an edge needs beyond the message
 * (the field at fault, what was not found) travels as details, never read from the words. A
 * process on the other side of a channel (the inference engine, a container) sends the kind, the
 * message and the details, and `errorOfKind` makes the same error again.
 *
 * @example
 * ```ts
 * import { NotFound } from "./mod.ts";
 *
 * function find(id: string): never {
 *   throw new NotFound(`no model '${id}'; GET /models lists them`, { resource: "model", id });
 * }
 * ```
 *
 * @module
 */

/** What kind of failure a domain error is; each edge has one table from kind to its status. */
export type ErrorKind =
  | "invalid"
  | "unauthenticated"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "too_large"
  | "unsupported_type"
  | "unprocessable"
  | "range_not_satisfiable"
  | "cancelled"
  | "upstream_failed"
  | "unavailable"
  | "upstream_timeout"
  | "no_space"
  | "no_memory"
  | "too_many";

/**
 * Facts an edge may pass on beside the message (a retry delay, the size of a file, the field at
 * fault): an edge reads these, never the message's words.
 */
export interface ErrorDetails {
  /** The input field at fault, as a dotted path of the JSON body (OpenAI's `param`). */
  field?: string;
  /** What kind of thing was not found or is at fault (e.g. "model"), with `id`. */
  resource?: string;
  /** The id of the `resource`. */
  id?: string;
  /** The limit the input went over (e.g. "context": the model's context window). */
  exceeded?: string;
  /** Seconds after which trying again may succeed. */
  retryAfterSeconds?: number;
  /** The whole size of the resource, for a range that does not fit it. */
  size?: number;
  /** The methods a resource allows. */
  allow?: readonly string[];
  /** The authentication scheme a caller should use. */
  scheme?: string;
}

/** A failure the caller can act on. Its message goes to the caller as it is. */
export abstract class DomainError extends Error {
  /** What kind of failure this is. */
  abstract readonly kind: ErrorKind;
  /** Facts beside the message. */
  readonly details: ErrorDetails;

  /** Creates an error whose message says what to fix. */
  constructor(message: string, details: ErrorDetails = {}) {
    super(message);
    this.details = details;
  }
}

/** The input is malformed or contradicts itself. */
export class Invalid extends DomainError {
  override name = "Invalid";
  readonly kind = "invalid";
}

/** No credentials were given where some are needed. */
export class Unauthenticated extends DomainError {
  override name = "Unauthenticated";
  readonly kind = "unauthenticated";
}

/** The credentials given do not allow this. */
export class Forbidden extends DomainError {
  override name = "Forbidden";
  readonly kind = "forbidden";
}

/** The thing named does not exist. */
export class NotFound extends DomainError {
  override name = "NotFound";
  readonly kind = "not_found";
}

/** The request contradicts the current state (exists already, busy, not ready). */
export class Conflict extends DomainError {
  override name = "Conflict";
  readonly kind = "conflict";
}

/** The input is larger than the configured limit. */
export class TooLarge extends DomainError {
  override name = "TooLarge";
  readonly kind = "too_large";
}

/** The input is of a media type this operation does not take. */
export class UnsupportedType extends DomainError {
  override name = "UnsupportedType";
  readonly kind = "unsupported_type";
}

/** The input is well formed but its content cannot be used (a file that is not a model). */
export class Unprocessable extends DomainError {
  override name = "Unprocessable";
  readonly kind = "unprocessable";
}

/** A byte range outside the resource; `details.size` holds its size. */
export class RangeNotSatisfiable extends DomainError {
  override name = "RangeNotSatisfiable";
  readonly kind = "range_not_satisfiable";
}

/** The work was cancelled by the caller or by a shutdown. */
export class Cancelled extends DomainError {
  override name = "Cancelled";
  readonly kind = "cancelled";
}

/** A server this one depends on (a download source, a peer, the hub) failed. */
export class UpstreamFailed extends DomainError {
  override name = "UpstreamFailed";
  readonly kind = "upstream_failed";
}

/** The service cannot take this now (not configured, at capacity, disconnected). */
export class Unavailable extends DomainError {
  override name = "Unavailable";
  readonly kind = "unavailable";
}

/** A server this one depends on did not answer in time. */
export class UpstreamTimeout extends DomainError {
  override name = "UpstreamTimeout";
  readonly kind = "upstream_timeout";
}

/** The disk has no room for this. */
export class NoSpace extends DomainError {
  override name = "NoSpace";
  readonly kind = "no_space";
}

/** The machine's free memory cannot hold this (a model to load). */
export class NoMemory extends DomainError {
  override name = "NoMemory";
  readonly kind = "no_memory";
}

/** Too many requests wait already; try again later. */
export class TooMany extends DomainError {
  override name = "TooMany";
  readonly kind = "too_many";
}

/** A domain error class: a message and details make one. */
export type DomainErrorClass = new (message: string, details?: ErrorDetails) => DomainError;

/** The class of each kind; a channel that carries kinds rebuilds its errors with it. */
const CLASS_OF: Readonly<Record<ErrorKind, DomainErrorClass>> = {
  invalid: Invalid,
  unauthenticated: Unauthenticated,
  forbidden: Forbidden,
  not_found: NotFound,
  conflict: Conflict,
  too_large: TooLarge,
  unsupported_type: UnsupportedType,
  unprocessable: Unprocessable,
  range_not_satisfiable: RangeNotSatisfiable,
  cancelled: Cancelled,
  upstream_failed: UpstreamFailed,
  unavailable: Unavailable,
  upstream_timeout: UpstreamTimeout,
  no_space: NoSpace,
  no_memory: NoMemory,
  too_many: TooMany,
};

/** Whether `kind` names a kind of domain error (a channel's input is checked with it). */
export function isErrorKind(kind: unknown): kind is ErrorKind {
  return typeof kind === "string" && Object.hasOwn(CLASS_OF, kind);
}

/**
 * The domain error of a kind, as a process on the other side of a channel (the inference engine,
 * a container) sent it: the kind, the message and the details make the same error again.
 *
 * @example
 * ```ts
 * import { errorOfKind, NotFound } from "./mod.ts";
 *
 * const error = errorOfKind("not_found", "no model 'm'", { resource: "model", id: "m" });
 * console.assert(error instanceof NotFound && error.details.id === "m");
 * ```
 */
export function errorOfKind(
  kind: ErrorKind,
  message: string,
  details: ErrorDetails = {},
): DomainError {
  return new CLASS_OF[kind](message, details);
}
